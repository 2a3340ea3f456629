import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { canonicalize } from '../canonical/canonicalize.ts';
import {
  type Digest,
  type DigestAlg,
  digestFormatProblem,
  digestValue,
  isDigestAlg,
} from '../canonical/digest.ts';
import { EnvelopeError } from '../errors/index.ts';
import { METHODS, type ProvRecord } from './record.ts';

/**
 * Record integrity (PROV_METHODS_SPEC 5.3): the record digest is taken over the
 * RFC 8785 form of the record without its `integrity` member; an Ed25519
 * signature covers the record digest, signing the canonical JSON of the
 * `record_digest` object ({"alg":…,"value":…}) so the algorithm is bound too.
 * Signature values are base64; key ids are `ed25519:` plus the first 32 hex
 * digits of the SHA-256 of the public key's SPKI DER encoding.
 */

export const SIGNATURE_ALG = 'ed25519';

export function recordWithoutIntegrity(record: ProvRecord): Omit<ProvRecord, 'integrity'> {
  const { integrity: _ignored, ...rest } = record;
  return rest;
}

export function computeRecordDigest(record: ProvRecord, alg: DigestAlg = 'sha256'): Digest {
  return digestValue(recordWithoutIntegrity(record), alg);
}

/** The record claiming `methods` besides its own (each once, in order). */
export function withMethods(record: ProvRecord, methods: readonly string[]): ProvRecord {
  const merged = [...record.methods];
  for (const method of methods) if (!merged.includes(method)) merged.push(method);
  return { ...record, methods: merged };
}

/** Adds `integrity.record_digest` (claiming integrity.record_digest.compute); drops any signature. */
export function attachRecordDigest(record: ProvRecord, alg: DigestAlg = 'sha256'): ProvRecord {
  const claimed = withMethods(recordWithoutIntegrity(record) as ProvRecord, [METHODS.recordDigest]);
  return { ...claimed, integrity: { record_digest: computeRecordDigest(claimed, alg) } };
}

export interface KeyPairPem {
  privateKeyPem: string;
  publicKeyPem: string;
}

export function generateSigningKeyPair(): KeyPairPem {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

function keyError(what: string, error: unknown): EnvelopeError {
  return new EnvelopeError('KEY_INVALID', `${what}: ${(error as Error).message}`, undefined, {
    cause: error,
  });
}

export function loadPrivateKey(pem: string | Buffer): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw keyError('Not a readable private key (PKCS#8 PEM expected)', error);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new EnvelopeError('KEY_INVALID', `Private key is ${key.asymmetricKeyType}, not ed25519`);
  }
  return key;
}

export function loadPublicKey(pem: string | Buffer): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw keyError('Not a readable public key (SPKI PEM expected)', error);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new EnvelopeError('KEY_INVALID', `Public key is ${key.asymmetricKeyType}, not ed25519`);
  }
  return key;
}

export function keyIdFor(key: KeyObject): string {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return `${SIGNATURE_ALG}:${createHash('sha256').update(der).digest('hex').slice(0, 32)}`;
}

/**
 * Signs a record: claims integrity.record_digest.compute and
 * integrity.signature.create, computes the record digest over the result, and
 * signs it. Any previous integrity member is replaced.
 */
export function signRecord(
  record: ProvRecord,
  privateKey: KeyObject,
  options: { keyId?: string; alg?: DigestAlg } = {},
): ProvRecord {
  const claimed = withMethods(recordWithoutIntegrity(record) as ProvRecord, [
    METHODS.recordDigest,
    METHODS.signatureCreate,
  ]);
  const recordDigest = computeRecordDigest(claimed, options.alg ?? 'sha256');
  const value = sign(null, Buffer.from(canonicalize(recordDigest), 'utf8'), privateKey).toString('base64');
  return {
    ...claimed,
    integrity: {
      record_digest: recordDigest,
      signature: { alg: SIGNATURE_ALG, key_id: options.keyId ?? keyIdFor(privateKey), value },
    },
  };
}

export type IntegrityStatus = 'pass' | 'fail' | 'absent';

export interface RecordDigestCheck {
  status: IntegrityStatus;
  message: string;
  expected?: Digest;
}

/** Recomputes the record digest and compares it with `integrity.record_digest`. */
export function checkRecordDigest(record: ProvRecord): RecordDigestCheck {
  const claimed = record.integrity?.record_digest;
  if (!claimed) return { status: 'absent', message: 'record has no integrity.record_digest' };
  const problem = digestFormatProblem(claimed.alg, claimed.value);
  if (problem) return { status: 'fail', message: `record_digest is malformed: ${problem}` };
  if (!isDigestAlg(claimed.alg)) return { status: 'fail', message: `unsupported algorithm ${claimed.alg}` };
  const expected = computeRecordDigest(record, claimed.alg);
  return expected.value === claimed.value
    ? { status: 'pass', message: `record_digest matches (${claimed.alg})`, expected }
    : {
        status: 'fail',
        message: `record_digest does not match the record: recomputed ${expected.alg}:${expected.value}`,
        expected,
      };
}

export interface SignatureCheck {
  status: IntegrityStatus | 'unverifiable';
  message: string;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Verifies the signature with a public key (record digest first: a signature over a stale digest fails). */
export function checkSignature(record: ProvRecord, publicKey: KeyObject | undefined): SignatureCheck {
  const signature = record.integrity?.signature;
  if (!signature) return { status: 'absent', message: 'record has no integrity.signature' };
  if (signature.alg.toLowerCase() !== SIGNATURE_ALG) {
    // With a key in hand the verifier expects its signature: an algorithm swapped
    // to one we cannot check must not turn a required check into a skipped one.
    return {
      status: publicKey ? 'fail' : 'unverifiable',
      message: publicKey
        ? `signature algorithm "${signature.alg}" is not the given key's (ed25519)`
        : `signature algorithm "${signature.alg}" is not supported (ed25519 is)`,
    };
  }
  const digest = checkRecordDigest(record);
  if (digest.status !== 'pass') {
    return { status: 'fail', message: `signature cannot hold: ${digest.message}` };
  }
  if (!publicKey) return { status: 'unverifiable', message: 'no public key given to verify the signature' };
  if (!BASE64.test(signature.value)) return { status: 'fail', message: 'signature value is not base64' };
  if (signature.key_id.startsWith(`${SIGNATURE_ALG}:`) && signature.key_id !== keyIdFor(publicKey)) {
    return {
      status: 'fail',
      message: `signature key_id ${signature.key_id} is not the given public key (${keyIdFor(publicKey)})`,
    };
  }
  const message = Buffer.from(canonicalize(record.integrity?.record_digest), 'utf8');
  let valid = false;
  try {
    valid = verify(null, message, publicKey, Buffer.from(signature.value, 'base64'));
  } catch {
    valid = false;
  }
  return valid
    ? { status: 'pass', message: `ed25519 signature by ${signature.key_id} verifies` }
    : { status: 'fail', message: 'ed25519 signature does not verify' };
}
