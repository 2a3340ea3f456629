/**
 * Byte helpers for the verification that runs in the browser: base64, hex,
 * UTF-8 and the Ed25519 public key a person pastes. Platform only (atob,
 * TextEncoder), so the module runs unbundled in a page and in Node alike.
 */

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The bytes of strict base64 (padding as written by btoa), or undefined when it is not base64. */
export function fromBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text) || text.length % 4 !== 0) return undefined;
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  // atob accepts non-zero pad bits; only the one spelling of these bytes is base64 here.
  return toBase64(bytes) === text ? bytes : undefined;
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function toHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(text);
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** DER of an Ed25519 SubjectPublicKeyInfo up to the key itself (RFC 8410 §4): the 32 key bytes follow. */
export const ED25519_SPKI_PREFIX = new Uint8Array([
  0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
]);

const PEM = /^-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----$/;

/**
 * The raw 32-byte Ed25519 key a person pasted: base64 of the 32 bytes, or a
 * PEM SubjectPublicKeyInfo (what `openssl pkey -pubout` and the gateway's key
 * files hold). A string saying what is wrong when it is neither.
 */
export function parseTrustedKey(text: string): Uint8Array | string {
  const trimmed = text.trim();
  const pem = PEM.exec(trimmed);
  if (pem) {
    const der = fromBase64((pem[1] as string).replace(/\s+/g, ''));
    if (der === undefined) return 'the PEM block is not base64';
    if (
      der.length !== ED25519_SPKI_PREFIX.length + 32 ||
      !sameBytes(der.subarray(0, 12), ED25519_SPKI_PREFIX)
    ) {
      return 'the PEM block is not an Ed25519 public key (SubjectPublicKeyInfo)';
    }
    return der.slice(12);
  }
  if (trimmed.startsWith('-----')) return 'only a "BEGIN PUBLIC KEY" PEM block is read';
  const raw = fromBase64(trimmed);
  if (raw === undefined) return 'it is neither base64 nor a PEM public key';
  if (raw.length !== 32) return `it is ${raw.length} bytes; a raw Ed25519 public key is 32`;
  return raw;
}
