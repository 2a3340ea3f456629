/** A value of the JSON data model (I-JSON: finite numbers, well-formed strings). */
export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/**
 * The deepest nesting the library accepts. Native JSON.stringify overflows the
 * stack a little beyond a few thousand levels; real documents stay far below.
 */
export const MAX_NESTING_DEPTH = 1000;

/**
 * A number kept as written: `JSON.rawJSON(text)` (ES2026), a frozen null-prototype
 * object that JSON.stringify writes as `text` itself. parseJsonLossless puts one
 * wherever a number's text would not survive a trip through an IEEE double
 * (`12345678901234567890`, `1.0`, `1e3`, `-0`), so that the payload is written
 * back exactly as the source wrote it. Anything that reasons about the value
 * (schemas, canonical digests) sees the number it denotes: `Number(rawJSON)`.
 */
export interface RawNumber {
  readonly rawJSON: string;
}

interface JsonWithRawText {
  rawJSON(text: string): RawNumber;
  isRawJSON(value: unknown): boolean;
}

/** JSON with its ES2026 members (Node 21+); the TypeScript lib does not declare them yet. */
export const nativeJson = JSON as JSON & JsonWithRawText;

/** Whether `value` is a number kept as written (a JSON.rawJSON object). */
export function isRawNumber(value: unknown): value is RawNumber {
  return nativeJson.isRawJSON(value);
}

/** The number a raw number denotes (Infinity when its text overflows a double, as in `1e400`). */
export function rawNumberValue(value: RawNumber): number {
  return Number(value.rawJSON);
}

/** An object of the JSON data model: not an array, not null, not a raw number. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !nativeJson.isRawJSON(value);
}

/**
 * `value` with every raw number replaced by the number it denotes: the value
 * itself when it holds none, else a copy that shares every subtree without one.
 * Schemas and anything else that expects plain numbers read this form.
 */
export function plainJson(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (nativeJson.isRawJSON(value)) return rawNumberValue(value as RawNumber);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const element: unknown = value[i];
      const plain = plainJson(element);
      if (out === undefined && plain !== element) out = value.slice(0, i);
      if (out !== undefined) out.push(plain);
    }
    return out ?? value;
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  let out: Record<string, unknown> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const member = object[key];
    const plain = plainJson(member);
    if (out === undefined && plain !== member) {
      out = {};
      for (let j = 0; j < i; j++) setMember(out, keys[j] as string, object[keys[j] as string]);
    }
    if (out !== undefined) setMember(out, key, plain);
  }
  return out ?? value;
}

/** Own-property check that a `hasOwnProperty` key in the data cannot spoof. */
export function hasOwn(object: object, key: string): boolean {
  return Object.hasOwn(object, key);
}

/**
 * Sets a member so that the key `__proto__` becomes an ordinary own property
 * instead of replacing the object's prototype.
 */
export function setMember(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

/**
 * The path (as member names and indexes) of the first array or object nested
 * deeper than `max` levels, or undefined. Iterative, so any depth is safe to ask
 * about; a value this deep would overflow the stack of JSON.stringify later.
 */
export function pathBeyondDepth(value: unknown, max: number = MAX_NESTING_DEPTH): string[] | undefined {
  // Every message the gateway relays is asked this: the common answer comes without allocating.
  if (!exceedsDepth(value, 0, max)) return undefined;
  interface Visit {
    node: unknown;
    depth: number;
    key: string;
    parent: Visit | undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const stack: Visit[] = [{ node: value, depth: 0, key: '', parent: undefined }];
  for (let visit = stack.pop(); visit; visit = stack.pop()) {
    const { node, depth } = visit;
    if (depth >= max && !nativeJson.isRawJSON(node)) {
      const path: string[] = [];
      for (let at: Visit | undefined = visit; at?.parent; at = at.parent) path.unshift(at.key);
      return path;
    }
    const entries = Array.isArray(node) ? node.entries() : Object.entries(node as object);
    for (const [key, child] of entries) {
      if (child !== null && typeof child === 'object') {
        stack.push({ node: child, depth: depth + 1, key: String(key), parent: visit });
      }
    }
  }
  return undefined;
}

/** Whether a container sits `max` levels down; recursion stops there, so the stack stays bounded. */
function exceedsDepth(value: unknown, depth: number, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  // A raw number is a number, not a container, however deep it sits.
  if (depth >= max) return !nativeJson.isRawJSON(value);
  if (Array.isArray(value)) {
    for (const item of value) if (exceedsDepth(item, depth + 1, max)) return true;
    return false;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && exceedsDepth((value as Record<string, unknown>)[key], depth + 1, max))
      return true;
  }
  return false;
}
