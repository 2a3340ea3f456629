/**
 * Signed tool lists, as the SEP-3140 draft (signed capability declarations:
 * RFC 8785, SHA-256, detached JWS) describes them. The draft is open and its
 * exact shape is not settled, so this shape is assumed: a tools/list result
 * (each page) carries `_meta["io.modelcontextprotocol/signature"]`, a JWS in
 * compact serialization with a detached payload (RFC 7515 appendix F:
 * `<protected>..<signature>`), whose payload is the RFC 8785 bytes of the
 * page's `tools` array: as they are when the protected header says
 * `"b64": false` (RFC 7797, with `"crit": ["b64"]`), base64url-encoded
 * otherwise. It is verified against the keys configured for the upstream
 * (`upstreams[].pinKeys`); `alg: none` is never accepted.
 */
import type { KeyObject } from 'node:crypto';
import { type FlattenedJWSInput, flattenedVerify } from 'jose';
import { canonicalBytes } from '../../canonical/index.ts';

export const SIGNATURE_META_KEY = 'io.modelcontextprotocol/signature';

export type SignatureVerdict = { ok: true } | { ok: false; reason: string };

function protectedHeader(encoded: string): Record<string, unknown> | undefined {
  try {
    const header = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as unknown;
    return typeof header === 'object' && header !== null ? (header as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether one list page is signed, over its `key` items, by one of `keys`. */
export async function verifyListSignature(
  page: Record<string, unknown>,
  key: string,
  keys: readonly KeyObject[],
): Promise<SignatureVerdict> {
  const signature = (page._meta as Record<string, unknown> | undefined)?.[SIGNATURE_META_KEY];
  if (typeof signature !== 'string')
    return { ok: false, reason: `no ${SIGNATURE_META_KEY} in the list's _meta` };
  const parts = signature.split('.');
  if (parts.length !== 3 || parts[1] !== '' || !parts[0] || !parts[2])
    return { ok: false, reason: 'the signature is not a detached compact JWS (<protected>..<signature>)' };
  const header = protectedHeader(parts[0]);
  if (!header) return { ok: false, reason: 'the signature has no readable protected header' };
  let bytes: Uint8Array;
  try {
    bytes = canonicalBytes(page[key] ?? []);
  } catch {
    return { ok: false, reason: `the list's ${key} have no RFC 8785 form` };
  }
  const jws: FlattenedJWSInput = {
    protected: parts[0],
    signature: parts[2],
    payload: header.b64 === false ? bytes : Buffer.from(bytes).toString('base64url'),
  };
  for (const candidate of keys) {
    try {
      await flattenedVerify(jws, candidate);
      return { ok: true };
    } catch {
      // The next key may be the one.
    }
  }
  return { ok: false, reason: 'the signature does not verify with any key configured for the upstream' };
}
