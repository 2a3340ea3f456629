/**
 * Signed download ids: `<grantId>.<expiry>.<kid>.<signature>`, where grantId
 * is 32 hex digits, expiry is epoch seconds, kid names the signing key and the
 * signature is HMAC-SHA256 (base64url) over everything before the last dot.
 * An id verifies with the keyring alone, before the store is asked anything,
 * so forged, truncated and expired ids are told apart without reading a byte.
 *
 * An id is a bearer capability: anyone holding it may download until it
 * expires, as often as they like (reuse is allowed by design; links are
 * shared, retried and resumed).
 */
import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { EnvelopeError } from '../errors/index.ts';
import type { DownloadIdFailure } from './types.ts';

/** Longer text is refused before it is parsed. */
export const DOWNLOAD_ID_MAX_LENGTH = 256;
/** Key ids: short, URL-safe, so an id needs no escaping in a query string. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
const GRANT_ID = /^[0-9a-f]{32}$/;
const SHAPE = /^([0-9a-f]{32})\.(0|[1-9][0-9]{0,11})\.([A-Za-z0-9_-]{1,32})\.([A-Za-z0-9_-]{43})$/;

/** The key that signs new ids. */
export interface SigningKey {
  id: string;
  key: KeyObject;
}

/** Where ids find their keys: one signs, any known one verifies. */
export interface DownloadIdKeys {
  signingKey(): SigningKey;
  verifyingKey(kid: string): KeyObject | undefined;
  /** The longest lifetime of a link, in milliseconds: an id expiring later than this from now is refused. */
  readonly maxTtlMs: number;
}

/** Ids carry their expiry in whole seconds, rounded up: a link may outlive its lifetime by less than this. */
const EXPIRY_ROUNDING_MS = 1000;

export type DownloadIdCheck =
  | { ok: true; grantId: string /** Epoch milliseconds. */; expiresAt: number; kid: string }
  | { ok: false; code: DownloadIdFailure };

function mac(key: KeyObject, signed: string): string {
  return createHmac('sha256', key).update(signed).digest('base64url');
}

/** The epoch second an id expires at: the grant's expiry rounded up, so the id never outlives it by less. */
export function expirySeconds(expiresAtMs: number): number {
  return Math.ceil(expiresAtMs / 1000);
}

/** Signs an id for a grant, with the keyring's current key. */
export function signDownloadId(grantId: string, expiresAtMs: number, keys: DownloadIdKeys): string {
  if (!GRANT_ID.test(grantId)) {
    throw new EnvelopeError('INVALID_ARGUMENT', 'A grant id is 32 lower-case hex digits', { grantId });
  }
  if (!Number.isFinite(expiresAtMs) || expiresAtMs < 0) {
    throw new EnvelopeError('INVALID_ARGUMENT', 'A download id needs a finite expiry', {
      expiresAt: expiresAtMs,
    });
  }
  const signer = keys.signingKey();
  const signed = `${grantId}.${expirySeconds(expiresAtMs)}.${signer.id}`;
  return `${signed}.${mac(signer.key, signed)}`;
}

/**
 * Checks an id's shape, key, signature and expiry, in that order: the expiry
 * is believed only once the signature holds, so a forged expiry is a bad
 * signature, not "expired". An expiry further from `now` than the keys'
 * longest link lifetime is refused too (DOWNLOAD_LIFETIME_EXCEEDED): whoever
 * else holds a key cannot mint a link that outlives the configured lifetime.
 * `now` is epoch milliseconds.
 */
export function verifyDownloadId(
  text: unknown,
  keys: DownloadIdKeys,
  now: number = Date.now(),
): DownloadIdCheck {
  if (text === undefined || text === null || text === '') return { ok: false, code: 'DOWNLOAD_ID_MISSING' };
  if (typeof text !== 'string' || text.length > DOWNLOAD_ID_MAX_LENGTH) {
    return { ok: false, code: 'DOWNLOAD_ID_MALFORMED' };
  }
  const parts = SHAPE.exec(text);
  if (!parts) return { ok: false, code: 'DOWNLOAD_ID_MALFORMED' };
  const [, grantId, expiry, kid, signature] = parts as unknown as [string, string, string, string, string];
  const key = keys.verifyingKey(kid);
  if (!key) return { ok: false, code: 'DOWNLOAD_SIGNATURE_INVALID' };
  // Compared as text: base64url's last character has spare bits, so decoding would accept variants.
  const expected = Buffer.from(mac(key, text.slice(0, text.lastIndexOf('.'))));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, code: 'DOWNLOAD_SIGNATURE_INVALID' };
  }
  const expiresAt = Number(expiry) * 1000;
  if (expiresAt - now > keys.maxTtlMs + EXPIRY_ROUNDING_MS) {
    return { ok: false, code: 'DOWNLOAD_LIFETIME_EXCEEDED' };
  }
  if (now >= expiresAt) return { ok: false, code: 'DOWNLOAD_EXPIRED' };
  return { ok: true, grantId, expiresAt, kid };
}
