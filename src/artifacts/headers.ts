/**
 * The header values a download carries that come from what a tool or a caller
 * named: the filename and the media type. Both are cleaned so that no value
 * can break out of its header (CR, LF, quotes) or name a path on the client.
 */

/** Longest filename offered, in characters. */
export const MAX_FILENAME_LENGTH = 200;
/** The name offered when nothing usable is left of the one given. */
export const FALLBACK_FILENAME = 'download';

// Control and format characters (NUL, CR, LF, bidi overrides), path separators and quotes.
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}/\\"]/gu;

/**
 * A filename safe to offer: no path separators, control characters or quotes,
 * no leading dots (hidden files, `..`), at most MAX_FILENAME_LENGTH
 * characters; FALLBACK_FILENAME when nothing is left.
 */
export function sanitizeFilename(name: unknown): string {
  if (typeof name !== 'string') return FALLBACK_FILENAME;
  const cleaned = name
    .normalize('NFC')
    .replace(UNSAFE, '_')
    .replace(/^[\s.]+/u, '')
    .replace(/[\s.]+$/u, '');
  const bounded = Array.from(cleaned)
    .slice(0, MAX_FILENAME_LENGTH)
    .join('')
    .replace(/[\s.]+$/u, '');
  return bounded.length === 0 || /^_+$/.test(bounded) ? FALLBACK_FILENAME : bounded;
}

/** RFC 8187's attr-char: everything else is percent-encoded. */
function encodeExtValue(text: string): string {
  return encodeURIComponent(text).replace(
    /['()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * `attachment; filename="<ascii>"; filename*=UTF-8''<percent-encoded>`: the
 * quoted form for old clients (non-ASCII and `%` replaced), the encoded form
 * for the rest.
 */
export function contentDisposition(filename: string): string {
  const safe = sanitizeFilename(filename);
  const ascii = safe.replace(/[^\x20-\x7e]|%/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeExtValue(safe)}`;
}

const TOKEN = '[A-Za-z0-9!#$&^_.+-]{1,127}';
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*"))*$`,
);

/** Whether `value` is a media type (type/subtype and parameters) fit for a Content-Type header. */
export function isMediaType(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 255 && MEDIA_TYPE.test(value);
}
