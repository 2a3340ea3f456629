/**
 * Signed checkpoints in the C2SP tlog-checkpoint format (c2sp.org/tlog-checkpoint),
 * a signed note (c2sp.org/signed-note):
 *
 *     <origin>\n<tree size, decimal>\n<root hash, base64>\n
 *     \n
 *     — <key name> <base64(4-byte key id || 64-byte Ed25519 signature)>\n
 *
 * The signature is Ed25519 over the body (the three lines, each ending in a
 * newline); the key id is the first 4 bytes of SHA-256(key name || 0x0A ||
 * 0x01 || 32-byte public key). The key name is the origin, and the key is the
 * one the ledger's records are signed with. Every checkpoint written is kept
 * in `log_checkpoints`.
 */
import { createHash, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { EnvelopeError } from '../../errors/index.ts';
import type { Ledger } from '../store.ts';
import { HASH_SIZE } from './hashing.ts';

/** The em dash that opens a signature line. */
const DASH = '\u2014';
const ED25519_SIGNATURE_TYPE = 0x01;
const NAME = /^[^\s+\u2014]+$/;
const DECIMAL = /^(?:0|[1-9][0-9]*)$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface NoteSignature {
  name: string;
  /** 4 bytes. */
  keyId: Buffer;
  signature: Buffer;
}

export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
  /** The signed body: origin, size and root lines (and any extension lines), each ending in \n. */
  body: string;
  signatures: NoteSignature[];
  /** The whole note as read or written. */
  text: string;
}

function invalid(message: string, details: Record<string, unknown> = {}): EnvelopeError {
  return new EnvelopeError('LEDGER_CHECKPOINT_INVALID', `Not a checkpoint: ${message}`, details);
}

/** The 32-byte Ed25519 public key of a public or private key. */
export function rawPublicKey(key: KeyObject): Buffer {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  if (publicKey.asymmetricKeyType !== 'ed25519') {
    throw new EnvelopeError('KEY_INVALID', `Checkpoint keys are ed25519, not ${publicKey.asymmetricKeyType}`);
  }
  return Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
}

/** The signed-note key id: SHA-256(name || 0x0A || 0x01 || public key)[:4]. */
export function noteKeyId(name: string, key: KeyObject): Buffer {
  return createHash('sha256')
    .update(Buffer.from(`${name}\n`, 'utf8'))
    .update(Buffer.from([ED25519_SIGNATURE_TYPE]))
    .update(rawPublicKey(key))
    .digest()
    .subarray(0, 4);
}

export function checkOrigin(origin: string): string {
  if (!NAME.test(origin)) {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `A checkpoint origin is one non-empty word without spaces or "+", got ${JSON.stringify(origin)}`,
    );
  }
  return origin;
}

export function checkpointBody(origin: string, size: number, root: Uint8Array): string {
  return `${checkOrigin(origin)}\n${size}\n${Buffer.from(root).toString('base64')}\n`;
}

/** Signs a checkpoint body with the origin as key name. */
export function signCheckpoint(
  origin: string,
  size: number,
  root: Uint8Array,
  privateKey: KeyObject,
): Checkpoint {
  const body = checkpointBody(origin, size, root);
  const keyId = noteKeyId(origin, privateKey);
  const signature = sign(null, Buffer.from(body, 'utf8'), privateKey);
  const text = `${body}\n${DASH} ${origin} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
  return {
    origin,
    size,
    root: Buffer.from(root),
    body,
    signatures: [{ name: origin, keyId, signature }],
    text,
  };
}

/** Parses a signed checkpoint strictly (LEDGER_CHECKPOINT_INVALID, saying what is wrong). */
export function parseCheckpoint(text: string): Checkpoint {
  const split = text.indexOf('\n\n');
  if (split < 0) throw invalid('no blank line between the body and the signatures');
  const body = text.slice(0, split + 1);
  const lines = body.slice(0, -1).split('\n');
  if (lines.length < 3)
    throw invalid(`the body has ${lines.length} lines; origin, size and root hash are needed`);
  const [origin, sizeLine, rootLine] = lines as [string, string, string];
  if (!NAME.test(origin)) throw invalid(`origin line ${JSON.stringify(origin)} is empty or has spaces`);
  if (!DECIMAL.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine))) {
    throw invalid(`tree size line ${JSON.stringify(sizeLine)} is not a decimal integer`);
  }
  const root = Buffer.from(rootLine, 'base64');
  if (!BASE64.test(rootLine) || root.length !== HASH_SIZE || root.toString('base64') !== rootLine) {
    throw invalid(`root hash line ${JSON.stringify(rootLine)} is not the base64 of 32 bytes`);
  }
  const rest = text.slice(split + 2);
  if (rest === '') throw invalid('it carries no signature');
  if (!rest.endsWith('\n')) throw invalid('the last signature line does not end in a newline');
  const signatures: NoteSignature[] = [];
  for (const line of rest.slice(0, -1).split('\n')) {
    const match = /^\u2014 (\S+) (\S+)$/.exec(line);
    const bytes = match ? Buffer.from(match[2] as string, 'base64') : Buffer.alloc(0);
    if (!match || !BASE64.test(match[2] as string) || bytes.length < 5) {
      throw invalid(
        `signature line ${JSON.stringify(line)} is not "${DASH} <name> <base64(key id || signature)>"`,
      );
    }
    signatures.push({ name: match[1] as string, keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) });
  }
  if (signatures.length === 0) throw invalid('it carries no signature');
  return { origin, size: Number(sizeLine), root, body, signatures, text };
}

/** Whether a signature on the checkpoint, by the key named as its origin, verifies with `publicKey`. */
export function checkpointSignedBy(checkpoint: Checkpoint, publicKey: KeyObject): boolean {
  const keyId = noteKeyId(checkpoint.origin, publicKey);
  return checkpoint.signatures.some((signature) => {
    if (signature.name !== checkpoint.origin || !signature.keyId.equals(keyId)) return false;
    try {
      return verify(null, Buffer.from(checkpoint.body, 'utf8'), publicKey, signature.signature);
    } catch {
      return false;
    }
  });
}

/** The ledger file's stable id (random, set when its log was created). */
export function ledgerId(ledger: Ledger): string {
  const row = ledger.database().prepare("SELECT value FROM log_meta WHERE key = 'ledger_id'").get() as
    | { value: string }
    | undefined;
  if (row === undefined) throw new EnvelopeError('LEDGER_CORRUPT', `Ledger ${ledger.path} has no ledger id`);
  return row.value;
}

export function defaultOrigin(ledger: Ledger): string {
  return `mcp-envelope/${ledgerId(ledger)}`;
}

/**
 * Signs a checkpoint of the ledger's log as it is now and keeps it in
 * `log_checkpoints`: what the gateway calls at its checkpoint interval, and
 * `ledger checkpoint` runs. The ledger must be open for writing.
 */
export function writeCheckpoint(
  ledger: Ledger,
  privateKey: KeyObject,
  options: { origin?: string; now?: () => Date } = {},
): Checkpoint {
  const db = ledger.database();
  const origin = checkOrigin(options.origin ?? defaultOrigin(ledger));
  db.exec('BEGIN IMMEDIATE');
  try {
    const log = ledger.log();
    const size = log.size();
    const checkpoint = signCheckpoint(origin, size, log.root(size), privateKey);
    db.prepare(
      'INSERT INTO log_checkpoints (origin, tree_size, root_hash, created_at, note) VALUES (?, ?, ?, ?, ?)',
    ).run(
      origin,
      size,
      checkpoint.root,
      (options.now ?? (() => new Date()))().toISOString(),
      checkpoint.text,
    );
    db.exec('COMMIT');
    return checkpoint;
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** Every checkpoint kept in the ledger, oldest first. */
export function storedCheckpoints(
  ledger: Ledger,
): Array<{ id: number; createdAt: string; checkpoint: Checkpoint }> {
  const rows = ledger
    .database()
    .prepare('SELECT id, created_at, note FROM log_checkpoints ORDER BY id')
    .all() as Array<{ id: number; created_at: string; note: string }>;
  return rows.map((row) => ({
    id: Number(row.id),
    createdAt: row.created_at,
    checkpoint: parseCheckpoint(row.note),
  }));
}
