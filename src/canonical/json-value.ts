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

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
    if (depth >= max) {
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
  if (depth >= max) return true;
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
