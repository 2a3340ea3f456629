import { KeyObject, sign, verify } from 'node:crypto';
import { canonicalBytes } from '../canonical/canonical-bytes.ts';
import { EnvelopeError } from '../errors/index.ts';
import { keyIdFor, SIGNATURE_ALG } from './integrity.ts';
import type { ProvRecord } from './record.ts';

/**
 * DSSE (Dead Simple Signing Envelope, secure-systems-lab/dsse v1) over records
 * and in-toto statements, signed with Ed25519.
 *
 * Each signature covers PAE(payloadType, payload) =
 * "DSSEv1" SP LEN(type) SP type SP LEN(payload) SP payload, lengths in ASCII
 * decimal bytes. The payload is signed exactly as given and verified exactly as
 * decoded from the envelope: nothing is parsed or re-serialized on either side.
 * Key ids are the records' (`ed25519:` plus 32 hex digits of the SHA-256 of the
 * SPKI DER); in an envelope a `keyid` is an unauthenticated hint, so a verifier
 * tries every key it trusts against every signature.
 *
 * A record travels as its RFC 8785 canonical bytes under
 * DSSE_RECORD_PAYLOAD_TYPE; an in-toto Statement v1 (subjects: the record's
 * output artifacts with their digests, predicate: the record) as its RFC 8785
 * canonical bytes under IN_TOTO_PAYLOAD_TYPE.
 */

export const DSSE_RECORD_PAYLOAD_TYPE = 'application/vnd.mcp-envelope.prov-record+json';
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
export const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
/** The predicate type of a statement whose predicate is a prov.record.v0.1 (an identifier; it need not resolve). */
export const PROV_RECORD_PREDICATE_TYPE = 'https://mcp-envelope.dev/attestation/prov.record/v0.1';

/** Most signatures an envelope may carry before it is refused unread. */
export const MAX_DSSE_SIGNATURES = 64;

export interface DsseSignature {
  keyid: string;
  sig: string;
}

export interface DsseEnvelope {
  payload: string;
  payloadType: string;
  signatures: DsseSignature[];
}

/** An Ed25519 private key, optionally with the key id to put in its signature (default: keyIdFor). */
export type DsseSigner = KeyObject | { key: KeyObject; keyId: string };

/** The pre-authentication encoding: the bytes each signature covers. */
export function dssePae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, 'ascii'),
    type,
    Buffer.from(` ${payload.length} `, 'ascii'),
    payload,
  ]);
}

function signerKey(signer: DsseSigner): { key: KeyObject; keyId: string } {
  const key = signer instanceof KeyObject ? signer : signer.key;
  if (key.type !== 'private' || key.asymmetricKeyType !== SIGNATURE_ALG) {
    throw new EnvelopeError(
      'KEY_INVALID',
      `A DSSE signer needs an ed25519 private key, not a ${key.type} key`,
    );
  }
  return { key, keyId: signer instanceof KeyObject ? keyIdFor(key) : signer.keyId };
}

/** Signs `payload` (as given) under `payloadType` with each key, in order: one signature per key. */
export function signDsse(
  payload: Uint8Array,
  payloadType: string,
  keys: readonly DsseSigner[],
): DsseEnvelope {
  if (payloadType === '') throw new EnvelopeError('INVALID_INPUT', 'A DSSE payloadType cannot be empty');
  if (keys.length === 0) throw new EnvelopeError('INVALID_INPUT', 'A DSSE envelope needs at least one key');
  if (keys.length > MAX_DSSE_SIGNATURES) {
    throw new EnvelopeError(
      'INVALID_INPUT',
      `A DSSE envelope holds at most ${MAX_DSSE_SIGNATURES} signatures`,
    );
  }
  const pae = dssePae(payloadType, payload);
  return {
    payload: Buffer.from(payload).toString('base64'),
    payloadType,
    signatures: keys.map(signerKey).map(({ key, keyId }) => ({
      keyid: keyId,
      sig: sign(null, pae, key).toString('base64'),
    })),
  };
}

const STANDARD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const URL_SAFE_BASE64 = /^[A-Za-z0-9_-]*={0,2}$/;

/**
 * Strict base64 (standard or URL-safe, padding optional, as DSSE allows): the
 * text must be the one encoding of the bytes it decodes to, so no two texts
 * carry the same bytes and nothing is silently skipped.
 */
function decodeBase64Strict(text: string): Buffer | undefined {
  const urlSafe = !STANDARD_BASE64.test(text);
  if (urlSafe && !URL_SAFE_BASE64.test(text)) return undefined;
  const unpadded = text.replace(/=+$/, '');
  if (text.length !== unpadded.length && text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(unpadded, urlSafe ? 'base64url' : 'base64');
  const again = bytes.toString(urlSafe ? 'base64url' : 'base64').replace(/=+$/, '');
  return again === unpadded ? bytes : undefined;
}

function invalid(message: string): EnvelopeError {
  return new EnvelopeError('DSSE_INVALID', message);
}

/** An envelope read from JSON, with its payload decoded; throws DSSE_INVALID for what is not one. */
export function parseDsseEnvelope(value: unknown): {
  envelope: DsseEnvelope;
  payload: Buffer;
} {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid('A DSSE envelope is a JSON object');
  }
  const { payload, payloadType, signatures } = value as Record<string, unknown>;
  if (typeof payload !== 'string') throw invalid('DSSE envelope: payload is not a string');
  if (typeof payloadType !== 'string' || payloadType === '') {
    throw invalid('DSSE envelope: payloadType is not a non-empty string');
  }
  if (!Array.isArray(signatures) || signatures.length === 0) {
    throw invalid('DSSE envelope: signatures is not a non-empty array');
  }
  if (signatures.length > MAX_DSSE_SIGNATURES) {
    throw invalid(`DSSE envelope: more than ${MAX_DSSE_SIGNATURES} signatures`);
  }
  const checked = signatures.map((entry, index): DsseSignature => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw invalid(`DSSE envelope: signatures[${index}] is not an object`);
    }
    const { keyid, sig } = entry as Record<string, unknown>;
    if (typeof sig !== 'string') throw invalid(`DSSE envelope: signatures[${index}].sig is not a string`);
    if (keyid !== undefined && typeof keyid !== 'string') {
      throw invalid(`DSSE envelope: signatures[${index}].keyid is not a string`);
    }
    return { keyid: keyid ?? '', sig };
  });
  const bytes = decodeBase64Strict(payload);
  if (!bytes) throw invalid('DSSE envelope: payload is not base64');
  return { envelope: { payload, payloadType, signatures: checked }, payload: bytes };
}

export interface DsseKeyResult {
  /** The key's id (keyIdFor). */
  keyId: string;
  /** Indexes of the signatures this key verified. */
  signatures: number[];
}

export interface DsseVerification {
  /** Whether every key given verified at least one signature. */
  ok: boolean;
  payloadType: string;
  /** The payload bytes exactly as the envelope carries them. */
  payload: Buffer;
  /** One entry per key, in the order given. */
  keys: DsseKeyResult[];
  /** Ids of the keys that verified a signature. */
  verifiedBy: string[];
  /** The envelope's signature count. */
  signatureCount: number;
}

/**
 * Verifies a DSSE envelope (as parsed from JSON) against Ed25519 public keys:
 * each key against each signature over PAE(payloadType, payload), the payload
 * as decoded, never re-serialized. Says which keys verified; `ok` when each did.
 * Throws DSSE_INVALID for a value that is not an envelope, KEY_INVALID for a
 * key that is not an Ed25519 public key.
 */
export function verifyDsse(envelope: unknown, publicKeys: readonly KeyObject[]): DsseVerification {
  if (publicKeys.length === 0) throw new EnvelopeError('INVALID_INPUT', 'No public key to verify with');
  for (const key of publicKeys) {
    if (key.type !== 'public' || key.asymmetricKeyType !== SIGNATURE_ALG) {
      throw new EnvelopeError(
        'KEY_INVALID',
        `DSSE verification needs ed25519 public keys, not a ${key.type} key`,
      );
    }
  }
  const { envelope: parsed, payload } = parseDsseEnvelope(envelope);
  const pae = dssePae(parsed.payloadType, payload);
  const signatures = parsed.signatures.map((signature) => decodeBase64Strict(signature.sig));
  const keys = publicKeys.map((key): DsseKeyResult => {
    const verified: number[] = [];
    signatures.forEach((sig, index) => {
      if (sig === undefined || sig.length !== 64) return;
      let valid = false;
      try {
        valid = verify(null, pae, key, sig);
      } catch {
        valid = false;
      }
      if (valid) verified.push(index);
    });
    return { keyId: keyIdFor(key), signatures: verified };
  });
  return {
    ok: keys.every((key) => key.signatures.length > 0),
    payloadType: parsed.payloadType,
    payload,
    keys,
    verifiedBy: keys.filter((key) => key.signatures.length > 0).map((key) => key.keyId),
    signatureCount: parsed.signatures.length,
  };
}

/** A record's DSSE payload: its RFC 8785 canonical bytes, `integrity` included when it has one. */
export function recordPayload(record: ProvRecord): Buffer {
  return canonicalBytes(record);
}

/** A DSSE envelope over a record (DSSE_RECORD_PAYLOAD_TYPE, the record's canonical bytes). */
export function signRecordDsse(record: ProvRecord, keys: readonly DsseSigner[]): DsseEnvelope {
  return signDsse(recordPayload(record), DSSE_RECORD_PAYLOAD_TYPE, keys);
}

export interface InTotoSubject {
  name: string;
  digest: Record<string, string>;
}

export interface InTotoStatement {
  _type: typeof IN_TOTO_STATEMENT_TYPE;
  subject: InTotoSubject[];
  predicateType: typeof PROV_RECORD_PREDICATE_TYPE;
  predicate: ProvRecord;
}

/** The statement's subjects: each output artifact that has a digest, named by its artifact_id. */
export function inTotoSubjects(record: ProvRecord): InTotoSubject[] {
  return (record.outputs ?? [])
    .filter((artifact) => artifact.digest !== undefined)
    .map((artifact) => ({
      name: artifact.artifact_id,
      digest: { [artifact.digest?.alg as string]: artifact.digest?.value as string },
    }));
}

/**
 * An in-toto Statement v1 about a record's outputs: subjects are the output
 * artifacts with digests, the predicate is the record. A record with no output
 * digest has nothing to attest to (INVALID_INPUT).
 */
export function inTotoStatement(record: ProvRecord): InTotoStatement {
  const subject = inTotoSubjects(record);
  if (subject.length === 0) {
    throw new EnvelopeError(
      'INVALID_INPUT',
      'The record has no output artifact with a digest: an in-toto statement needs at least one subject',
    );
  }
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject,
    predicateType: PROV_RECORD_PREDICATE_TYPE,
    predicate: record,
  };
}

/** A DSSE envelope (IN_TOTO_PAYLOAD_TYPE) over the canonical bytes of the record's in-toto statement. */
export function signInTotoStatement(record: ProvRecord, keys: readonly DsseSigner[]): DsseEnvelope {
  return signDsse(canonicalBytes(inTotoStatement(record)), IN_TOTO_PAYLOAD_TYPE, keys);
}
