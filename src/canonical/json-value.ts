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
