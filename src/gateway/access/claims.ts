/**
 * Claims of an access token as `access` rules and `auth.oauth.tiers` read
 * them: a dotted path names a claim (`org.role` is the `role` member of the
 * `org` claim; a claim whose own name holds dots, `https://example.com/roles`,
 * is found by that name first). Only the paths the configuration names are
 * taken from a token, and only values a rule can compare (strings, numbers,
 * booleans, arrays of them), so what travels with a request is what its
 * checks need and never the token.
 */

export type ClaimValue = string | number | boolean;

/** What a request carries: each configured path → the token's value there. */
export type CarriedClaims = Readonly<Record<string, ClaimValue | readonly ClaimValue[]>>;

/** Longest array kept of one claim. */
const MAX_ITEMS = 256;

function comparable(value: unknown): value is ClaimValue {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** The value at `path` in `claims`: the member named so, else the dotted walk. */
export function claimAt(claims: Readonly<Record<string, unknown>>, path: string): unknown {
  if (Object.hasOwn(claims, path)) return claims[path];
  let at: unknown = claims;
  for (const segment of path.split('.')) {
    if (typeof at !== 'object' || at === null || Array.isArray(at) || !Object.hasOwn(at, segment))
      return undefined;
    at = (at as Record<string, unknown>)[segment];
  }
  return at;
}

/** The claims at `paths` a rule can compare; paths the token does not have are left out. */
export function carriedClaims(
  claims: Readonly<Record<string, unknown>>,
  paths: readonly string[],
): CarriedClaims {
  // No prototype: a configured path named `__proto__` is a member like any other.
  const carried: Record<string, ClaimValue | readonly ClaimValue[]> = Object.create(null);
  for (const path of paths) {
    const value = claimAt(claims, path);
    if (comparable(value)) carried[path] = value;
    else if (Array.isArray(value)) carried[path] = value.filter(comparable).slice(0, MAX_ITEMS);
  }
  return carried;
}

/** Whether a carried claim holds `expected`: equal to it, or an array containing it. */
export function claimHolds(actual: unknown, expected: ClaimValue): boolean {
  return actual === expected || (Array.isArray(actual) && actual.includes(expected));
}

/** Whether every `[path, value]` holds of the carried claims. */
export function claimsHold(
  carried: CarriedClaims | undefined,
  expected: readonly (readonly [string, ClaimValue])[],
): boolean {
  for (const [path, value] of expected) {
    if (carried === undefined || !claimHolds(carried[path], value)) return false;
  }
  return true;
}
