import { EnvelopeError } from '../errors/index.ts';
import { encodePointer } from '../pointer/json-pointer.ts';
import { canonicalRawNumber } from './exact-number.ts';
import {
  isRawNumber,
  type JsonValue,
  MAX_NESTING_DEPTH,
  nativeJson,
  type RawNumber,
  rawNumberValue,
  setMember,
} from './json-value.ts';

/**
 * RFC 8785 (JSON Canonicalization Scheme).
 *
 * Strategy, chosen by measurement (bench/canonical.bench.ts): build a copy of the
 * value whose objects hold their members in canonical order, then let the
 * native JSON.stringify emit it. ECMAScript's JSON.stringify already produces
 * RFC 8785's number and string forms (the RFC defines them that way), so only
 * member order, I-JSON checks and the unsupported-value checks are ours. Subtrees
 * that are already in canonical order are reused, not copied.
 *
 * V8 enumerates integer-like keys ("0", "10") before all others, whatever the
 * insertion order; objects with a key starting with a digit are therefore
 * serialized by the explicit fallback, which orders by UTF-16 code units.
 *
 * Numbers: RFC 8785 is defined on I-JSON, whose numbers are IEEE 754 doubles,
 * and writes each as ECMAScript's Number::toString does. A number kept as
 * written (a RawNumber from parseJsonLossless: `12345678901234567890`, `1.0`)
 * is canonicalized as RFC 8785 writes the double it denotes (`1.0` as `1`),
 * except an integer written beyond 2^53, which keeps its digits
 * (exact-number.ts): `12345678901234567890`, where the double would be
 * 12345678901234567000. So a digest binds the digits a client reads of an id
 * or a counter: `9007199254740993` and `9007199254740992` digest differently.
 * A number beyond double range (`1e400`) is refused with
 * JSON_NON_FINITE_NUMBER, like Infinity.
 */

class NeedsExplicitOrder {}
const NEEDS_EXPLICIT_ORDER = new NeedsExplicitOrder();

/** Insertion sort beats Array#sort on the few keys most objects have; both order by UTF-16 code units. */
function sortKeys(keys: string[]): string[] {
  const n = keys.length;
  if (n > 12) return keys.sort();
  for (let i = 1; i < n; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

function startsWithDigit(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 48 && c <= 57;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Returns `value` itself when it is already canonical, else a reordered copy.
 * Throws a bare marker (no stack) on any problem; the caller then locates it.
 */
function reorder(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw PROBLEM;
      return value;
    case 'object': {
      if (value === null) return value;
      if (depth >= MAX_NESTING_DEPTH && !nativeJson.isRawJSON(value)) throw PROBLEM;
      if (Array.isArray(value)) {
        const n = value.length;
        let out: unknown[] | null = null;
        for (let i = 0; i < n; i++) {
          const element: unknown = value[i];
          if (element === undefined) throw PROBLEM;
          const copied = reorder(element, depth + 1);
          if (out === null && copied !== element) out = value.slice(0, i);
          if (out !== null) out.push(copied);
        }
        return out ?? value;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype) {
        if (proto !== null) throw PROBLEM;
        if (nativeJson.isRawJSON(value)) return finiteRawNumber(value as RawNumber);
      }
      const object = value as Record<string, unknown>;
      const keys = Object.keys(object);
      const n = keys.length;
      let sorted = true;
      for (let i = 0; i < n; i++) {
        const key = keys[i] as string;
        if (startsWithDigit(key)) throw NEEDS_EXPLICIT_ORDER;
        if (i > 0 && (keys[i - 1] as string) > key) sorted = false;
      }
      if (sorted) {
        let changed = false;
        const values: unknown[] = new Array(n);
        for (let i = 0; i < n; i++) {
          const member = object[keys[i] as string];
          if (member === undefined) continue;
          const copied = reorder(member, depth + 1);
          if (copied !== member) changed = true;
          values[i] = copied;
        }
        if (!changed) return value;
        const out: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) {
          if (values[i] !== undefined) setMember(out, keys[i] as string, values[i]);
        }
        return out;
      }
      sortKeys(keys);
      const out: Record<string, unknown> = {};
      for (let i = 0; i < n; i++) {
        const key = keys[i] as string;
        const member = object[key];
        if (member === undefined) continue;
        setMember(out, key, reorder(member, depth + 1));
      }
      return out;
    }
    default:
      throw PROBLEM;
  }
}

class Problem {}
const PROBLEM = new Problem();

/** A raw number in its canonical form (the decimal value it writes); refused beyond double range. */
function finiteRawNumber(value: RawNumber): RawNumber {
  if (!Number.isFinite(rawNumberValue(value))) throw PROBLEM;
  return canonicalRawNumber(value);
}

/** The explicit serializer: used for objects with digit-leading keys. */
function serializeExplicit(value: unknown, depth: number): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw PROBLEM;
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (isRawNumber(value)) return finiteRawNumber(value).rawJSON;
      if (depth >= MAX_NESTING_DEPTH) throw PROBLEM;
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          const element: unknown = value[i];
          if (element === undefined) throw PROBLEM;
          if (i > 0) out += ',';
          out += serializeExplicit(element, depth + 1);
        }
        return `${out}]`;
      }
      if (!isPlainObject(value)) throw PROBLEM;
      const object = value as Record<string, unknown>;
      const keys = sortKeys(Object.keys(object));
      let out = '{';
      let first = true;
      for (const key of keys) {
        const member = object[key];
        if (member === undefined) continue;
        if (!first) out += ',';
        first = false;
        out += `${JSON.stringify(key)}:${serializeExplicit(member, depth + 1)}`;
      }
      return `${out}}`;
    }
    default:
      throw PROBLEM;
  }
}

/**
 * JSON.stringify writes a lone surrogate as a `\udXXX` escape and never writes
 * any other escape beginning with `\ud`, so a lone surrogate anywhere in the
 * value shows up as such an escape in the output. A literal backslash in the
 * data is written as `\\`, hence the parity check.
 */
function hasLoneSurrogateEscape(json: string): boolean {
  let from = 0;
  for (;;) {
    const at = json.indexOf('\\ud', from);
    if (at < 0) return false;
    let backslashes = 0;
    for (let i = at; i >= 0 && json.charCodeAt(i) === 92; i--) backslashes++;
    const hex = json.charCodeAt(at + 3);
    // d8..df: a surrogate code unit (lower-case hex is what V8 writes).
    if (backslashes % 2 === 1 && ((hex >= 56 && hex <= 57) || (hex >= 97 && hex <= 102))) return true;
    from = at + 3;
  }
}

/** Finds the first value the canonical form cannot carry, with its JSON Pointer. */
function locateProblem(value: unknown): EnvelopeError {
  const path: string[] = [];
  const visit = (current: unknown, depth: number, inArray: boolean): EnvelopeError | undefined => {
    const at = () => encodePointer(path);
    switch (typeof current) {
      case 'string':
        return current.isWellFormed()
          ? undefined
          : new EnvelopeError('JSON_LONE_SURROGATE', `String at ${at() || '/'} has a lone surrogate`, {
              pointer: at(),
            });
      case 'boolean':
        return undefined;
      case 'number':
        return Number.isFinite(current)
          ? undefined
          : new EnvelopeError('JSON_NON_FINITE_NUMBER', `Number at ${at() || '/'} is ${current}`, {
              pointer: at(),
            });
      case 'undefined':
        return inArray || path.length === 0
          ? new EnvelopeError('JSON_UNSUPPORTED_VALUE', `Value at ${at() || '/'} is undefined`, {
              pointer: at(),
            })
          : undefined;
      case 'object': {
        if (current === null) return undefined;
        if (isRawNumber(current)) {
          return Number.isFinite(rawNumberValue(current))
            ? undefined
            : new EnvelopeError(
                'JSON_NON_FINITE_NUMBER',
                `Number at ${at() || '/'} (${current.rawJSON}) is outside the range of an IEEE 754 double`,
                { pointer: at() },
              );
        }
        if (depth >= MAX_NESTING_DEPTH) {
          return new EnvelopeError(
            'JSON_TOO_DEEP',
            `Value is nested deeper than ${MAX_NESTING_DEPTH} levels at ${at()}`,
            { pointer: at(), max_depth: MAX_NESTING_DEPTH },
          );
        }
        if (Array.isArray(current)) {
          for (let i = 0; i < current.length; i++) {
            path.push(String(i));
            const found = visit(current[i], depth + 1, true);
            path.pop();
            if (found) return found;
          }
          return undefined;
        }
        if (!isPlainObject(current)) {
          const kind = current.constructor?.name ?? 'object';
          return new EnvelopeError(
            'JSON_UNSUPPORTED_VALUE',
            `Value at ${at() || '/'} is a ${kind}, not JSON`,
            {
              pointer: at(),
            },
          );
        }
        for (const key of Object.keys(current)) {
          path.push(key);
          const found = key.isWellFormed()
            ? visit((current as Record<string, unknown>)[key], depth + 1, false)
            : new EnvelopeError('JSON_LONE_SURROGATE', `Member name at ${at()} has a lone surrogate`, {
                pointer: at(),
              });
          path.pop();
          if (found) return found;
        }
        return undefined;
      }
      default:
        return new EnvelopeError('JSON_UNSUPPORTED_VALUE', `Value at ${at() || '/'} is a ${typeof current}`, {
          pointer: at(),
        });
    }
  };
  return (
    visit(value, 0, false) ??
    new EnvelopeError('JSON_UNSUPPORTED_VALUE', 'Value cannot be canonicalized', { pointer: '' })
  );
}

/**
 * The RFC 8785 canonical JSON text of `value`. Throws an EnvelopeError with a
 * stable code (JSON_LONE_SURROGATE, JSON_NON_FINITE_NUMBER, JSON_TOO_DEEP,
 * JSON_UNSUPPORTED_VALUE) and the pointer of the offending value. Object members
 * whose value is `undefined` are absent, as in JSON.stringify.
 */
export function canonicalize(value: JsonValue | unknown): string {
  let text: string;
  try {
    if (value === undefined) throw PROBLEM;
    text = JSON.stringify(reorder(value, 0));
  } catch (error) {
    if (error === NEEDS_EXPLICIT_ORDER) {
      try {
        text = serializeExplicit(value, 0);
      } catch (inner) {
        throw asCanonicalError(inner, value);
      }
    } else {
      throw asCanonicalError(error, value);
    }
  }
  if (hasLoneSurrogateEscape(text)) throw locateProblem(value);
  return text;
}

function asCanonicalError(error: unknown, value: unknown): unknown {
  if (error === PROBLEM) return locateProblem(value);
  if (error instanceof RangeError) {
    return new EnvelopeError('JSON_TOO_DEEP', 'Value is nested too deeply to serialize', {
      max_depth: MAX_NESTING_DEPTH,
    });
  }
  return error;
}

/**
 * The canonical texts of an object with and without one member, ordering the
 * object once (a record's digest is taken without its `integrity`, and the
 * record is stored with it): one reorder pass, then the native serializer
 * twice, the second time over the ordered copy less that member (a shallow
 * copy keeps the order). A lone surrogate anywhere in the object shows in the
 * first text, which contains the second.
 */
export function canonicalizeWithAndWithout(
  value: Record<string, unknown>,
  member: string,
): { text: string; without: string } {
  let ordered: Record<string, unknown>;
  try {
    ordered = reorder(value, 0) as Record<string, unknown>;
  } catch {
    // Digit-leading keys, or a problem: the whole is canonicalized the slow way, which throws
    // any problem with its pointer from the object's root.
    const { [member]: _member, ...rest } = value;
    return { text: canonicalize(value), without: canonicalize(rest) };
  }
  const text = JSON.stringify(ordered);
  if (hasLoneSurrogateEscape(text)) throw locateProblem(value);
  if (ordered[member] === undefined) return { text, without: text };
  const { [member]: _member, ...rest } = ordered;
  return { text, without: JSON.stringify(rest) };
}
