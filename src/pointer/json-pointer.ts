import { EnvelopeError } from '../errors/index.ts';

/**
 * RFC 6901 JSON Pointer, string form. Tokens are resolved against own
 * properties only, so a pointer like `/__proto__` or `/constructor` names a
 * member of the data, never something inherited.
 */

/** Escapes one reference token: `~` first, then `/` (RFC 6901 section 3). */
export function escapeToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Unescapes one reference token: `~1` first, then `~0` (RFC 6901 section 4). */
export function unescapeToken(token: string): string {
  return token.replaceAll('~1', '/').replaceAll('~0', '~');
}

export function encodePointer(tokens: readonly (string | number)[]): string {
  let out = '';
  for (const token of tokens) out += `/${escapeToken(String(token))}`;
  return out;
}

const BAD_TILDE = /~(?![01])/;

/** Splits a pointer into unescaped tokens; throws POINTER_INVALID on bad syntax. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (pointer[0] !== '/') {
    throw new EnvelopeError('POINTER_INVALID', `JSON Pointer must be empty or start with "/": ${pointer}`, {
      pointer,
    });
  }
  if (BAD_TILDE.test(pointer)) {
    throw new EnvelopeError('POINTER_INVALID', `JSON Pointer has "~" not followed by 0 or 1: ${pointer}`, {
      pointer,
    });
  }
  return pointer.slice(1).split('/').map(unescapeToken);
}

const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

export type PointerResolution =
  | { found: true; value: unknown }
  | { found: false; at: string; reason: string };

/** Resolves a pointer without throwing for a missing target. */
export function tryResolvePointer(document: unknown, pointer: string): PointerResolution {
  const tokens = parsePointer(pointer);
  let current: unknown = document;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    const at = encodePointer(tokens.slice(0, i + 1));
    if (Array.isArray(current)) {
      if (!ARRAY_INDEX.test(token)) {
        return {
          found: false,
          at,
          reason: token === '-' ? '"-" names the element after the last' : `"${token}" is not an array index`,
        };
      }
      const index = Number(token);
      if (index >= current.length) return { found: false, at, reason: `index ${index} is out of range` };
      current = current[index];
    } else if (typeof current === 'object' && current !== null) {
      if (!Object.hasOwn(current, token)) return { found: false, at, reason: `no member "${token}"` };
      current = (current as Record<string, unknown>)[token];
    } else {
      return { found: false, at, reason: 'cannot descend into a scalar' };
    }
  }
  return { found: true, value: current };
}

/** The value a pointer refers to; throws POINTER_NOT_FOUND when there is none. */
export function resolvePointer(document: unknown, pointer: string): unknown {
  const resolution = tryResolvePointer(document, pointer);
  if (!resolution.found) {
    throw new EnvelopeError(
      'POINTER_NOT_FOUND',
      `JSON Pointer ${pointer} does not resolve: ${resolution.reason}`,
      {
        pointer,
        at: resolution.at,
      },
    );
  }
  return resolution.value;
}
