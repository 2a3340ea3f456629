/**
 * The checks the record page runs on a run's proof, in the browser: what
 * `ledger verify` and `ledger prove` establish on the server, redone from the
 * bytes the server sends, so that a person need not trust the page's claims.
 * Canonical JSON and strict parsing are the project's own modules (the same
 * code the server digests with); hashing and Ed25519 are Web Crypto, as
 * node:crypto is not in a browser. The hashing follows src/ledger/log
 * (hashing.ts, proofs.ts, checkpoint.ts) and src/provenance/integrity.ts;
 * tests/unit/ledger/web/browser-checks.test.ts holds the two to the same
 * answers on real ledgers.
 */
import { canonicalize } from '../../../canonical/canonicalize.ts';
import { decodeUtf8, parseJsonLossless } from '../../../canonical/json-text.ts';
import { isJsonObject } from '../../../canonical/json-value.ts';
import {
  concatBytes,
  ED25519_SPKI_PREFIX,
  fromBase64,
  parseTrustedKey,
  sameBytes,
  toHex,
  utf8,
} from './encoding.ts';

export type CheckStatus = 'pass' | 'fail' | 'not-checked';

export interface Check {
  /** Stable name of the check (the page and its tests find a check by it). */
  id: string;
  status: CheckStatus;
  /** What was checked, in a few words. */
  title: string;
  /** What was found, with the values compared. */
  detail: string;
  /** Set on a not-checked check when there was nothing of its kind to check (an unsigned record, no stored envelope). */
  absent?: true;
}

export interface ProofKey {
  purpose: string;
  key_id: string;
  public_key: string;
}

/** What GET /ledger/api/runs/<run_id> answers (see docs/ARCHITECTURE.md, "Ledger pages"). */
export interface RunProof {
  run_id: string;
  /** Null, with `leaf`, when the log holds no leaf for the run. */
  leaf_index: number | null;
  leaf: string | null;
  envelope_text: string | null;
  checkpoint: string | null;
  inclusion: { tree_size: number; hashes: string[] } | null;
  keys: ProofKey[];
}

interface UsableKey {
  raw: Uint8Array<ArrayBuffer>;
  /** How the result names it. */
  label: string;
  /** True for a key the person pasted; false for one the server sent. */
  trusted: boolean;
}

const HASH_SIZE = 32;
/** Leaves name their place in the log since v2; v1 leaves are kept as they were hashed in older ledgers. */
const LEAF_TYPE = 'mcp-envelope.ledger.leaf.v2';
const LEAF_TYPE_V1 = 'mcp-envelope.ledger.leaf.v1';
const DIGEST = /^sha256:[0-9a-f]{64}$/;

const pass = (id: string, title: string, detail: string): Check => ({ id, status: 'pass', title, detail });
const fail = (id: string, title: string, detail: string): Check => ({ id, status: 'fail', title, detail });
const skip = (id: string, title: string, detail: string): Check => ({
  id,
  status: 'not-checked',
  title,
  detail,
});
const absent = (id: string, title: string, detail: string): Check => ({
  ...skip(id, title, detail),
  absent: true,
});

async function sha(alg: 'SHA-256' | 'SHA-512', ...parts: Uint8Array[]): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await crypto.subtle.digest(alg, concatBytes(...parts)));
}

async function ed25519Verifies(
  key: Uint8Array<ArrayBuffer>,
  signature: Uint8Array,
  message: Uint8Array,
): Promise<boolean> {
  try {
    const imported = await crypto.subtle.importKey('raw', key, { name: 'Ed25519' }, false, ['verify']);
    return await crypto.subtle.verify(
      { name: 'Ed25519' },
      imported,
      concatBytes(signature),
      concatBytes(message),
    );
  } catch {
    // A key or signature of the wrong shape verifies nothing.
    return false;
  }
}

/** RFC 9162 §2.1.1: SHA-256(0x00 || leaf). */
export function leafHash(leaf: Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
  return sha('SHA-256', new Uint8Array([0x00]), leaf);
}

function nodeHash(left: Uint8Array, right: Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
  return sha('SHA-256', new Uint8Array([0x01]), left, right);
}

/** RFC 9162 §2.1.3.2: the root an audit path leads to from leaf `index` of a tree of `size`, or undefined when it cannot be this leaf's path. */
export async function rootFromInclusion(
  leaf: Uint8Array,
  index: number,
  size: number,
  path: readonly Uint8Array[],
): Promise<Uint8Array | undefined> {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size)
    return undefined;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = await leafHash(leaf);
  for (const p of path) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}

interface ParsedCheckpoint {
  origin: string;
  size: number;
  root: Uint8Array;
  body: string;
  signatures: Array<{ name: string; keyId: Uint8Array; signature: Uint8Array }>;
}

/** A C2SP signed-note checkpoint, read as strictly as checkpoint.ts's parseCheckpoint; a string saying what is wrong otherwise. */
export function parseCheckpointNote(text: string): ParsedCheckpoint | string {
  const split = text.indexOf('\n\n');
  if (split < 0) return 'no blank line between the body and the signatures';
  const body = text.slice(0, split + 1);
  const [origin = '', sizeLine = '', rootLine = ''] = body.slice(0, -1).split('\n');
  if (!/^[^\s+\u2014]+$/.test(origin)) return `origin line ${JSON.stringify(origin)} is empty or has spaces`;
  if (!/^(?:0|[1-9][0-9]*)$/.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine))) {
    return `tree size line ${JSON.stringify(sizeLine)} is not a decimal integer`;
  }
  const root = fromBase64(rootLine);
  if (root === undefined || root.length !== HASH_SIZE) {
    return `root hash line ${JSON.stringify(rootLine)} is not the base64 of 32 bytes`;
  }
  const rest = text.slice(split + 2);
  if (rest === '' || !rest.endsWith('\n')) return 'it carries no complete signature line';
  const signatures: ParsedCheckpoint['signatures'] = [];
  for (const line of rest.slice(0, -1).split('\n')) {
    const match = /^\u2014 (\S+) (\S+)$/.exec(line);
    const bytes = match ? fromBase64(match[2] as string) : undefined;
    if (!match || bytes === undefined || bytes.length < 5) {
      return `signature line ${JSON.stringify(line)} is not "\u2014 <name> <base64(key id || signature)>"`;
    }
    signatures.push({ name: match[1] as string, keyId: bytes.subarray(0, 4), signature: bytes.subarray(4) });
  }
  return { origin, size: Number(sizeLine), root, body, signatures };
}

/** The signed-note key id: SHA-256(name || 0x0A || 0x01 || public key)[:4]. */
export async function noteKeyId(name: string, key: Uint8Array): Promise<Uint8Array> {
  return (await sha('SHA-256', utf8(`${name}\n`), new Uint8Array([0x01]), key)).subarray(0, 4);
}

/** The record key id integrity.ts gives a key: `ed25519:` and 32 hex digits of SHA-256 of its SPKI DER. */
export async function recordKeyId(key: Uint8Array): Promise<string> {
  return `ed25519:${toHex(await sha('SHA-256', ED25519_SPKI_PREFIX, key)).slice(0, 32)}`;
}

/** Why `value` is not a run proof, or undefined when it is one. */
export function runProofProblem(value: unknown): string | undefined {
  if (!isJsonObject(value)) return 'the answer is not a JSON object';
  const proof = value as Record<string, unknown>;
  if (typeof proof.run_id !== 'string') return 'run_id is not a string';
  if (proof.leaf === null && proof.leaf_index === null) {
    // The log holds no leaf for the run: checkLeaf says so as a failed check.
  } else if (!Number.isSafeInteger(proof.leaf_index) || (proof.leaf_index as number) < 0) {
    return 'leaf_index is neither a whole number nor null';
  } else if (typeof proof.leaf !== 'string') {
    return 'leaf is neither a base64 string nor null';
  }
  if (proof.envelope_text !== null && typeof proof.envelope_text !== 'string') {
    return 'envelope_text is neither text nor null';
  }
  if (proof.checkpoint !== null && typeof proof.checkpoint !== 'string')
    return 'checkpoint is neither text nor null';
  const inclusion = proof.inclusion as Record<string, unknown> | null;
  if (
    inclusion !== null &&
    (!isJsonObject(inclusion) ||
      !Number.isSafeInteger(inclusion.tree_size) ||
      !Array.isArray(inclusion.hashes) ||
      !inclusion.hashes.every((hash) => typeof hash === 'string'))
  ) {
    return 'inclusion is neither {tree_size, hashes} nor null';
  }
  if (
    !Array.isArray(proof.keys) ||
    !proof.keys.every(
      (key) =>
        isJsonObject(key) &&
        typeof key.purpose === 'string' &&
        typeof key.key_id === 'string' &&
        typeof key.public_key === 'string',
    )
  ) {
    return 'keys is not a list of {purpose, key_id, public_key}';
  }
  return undefined;
}

function serverKeys(proof: RunProof, purpose: string): UsableKey[] {
  const keys: UsableKey[] = [];
  for (const key of proof.keys) {
    const raw = fromBase64(key.public_key);
    if (key.purpose !== purpose || raw?.length !== 32) continue;
    keys.push({ raw: concatBytes(raw), label: `the server's ${purpose} key ${key.key_id}`, trusted: false });
  }
  return keys;
}

/** The leaf's members, read back from its bytes. */
interface Leaf {
  object: Record<string, unknown>;
  record: Record<string, unknown>;
}

function checkLeaf(proof: RunProof, leafBytes: Uint8Array | undefined): { check: Check; leaf?: Leaf } {
  const title = 'The log entry (leaf) is canonical JSON for this run';
  if (proof.leaf === null) {
    return {
      check: fail('leaf', title, 'the log holds no entry for this run: nothing commits to its record'),
    };
  }
  if (leafBytes === undefined) return { check: fail('leaf', title, 'the leaf is not base64') };
  let text: string;
  let object: unknown;
  try {
    text = decodeUtf8(leafBytes);
    object = parseJsonLossless(text).lossless;
  } catch (error) {
    return { check: fail('leaf', title, `the leaf is not JSON: ${(error as Error).message}`) };
  }
  if (!isJsonObject(object)) return { check: fail('leaf', title, 'the leaf is not a JSON object') };
  const leaf = object as Record<string, unknown>;
  if (canonicalize(object) !== text) {
    return { check: fail('leaf', title, 'the leaf bytes are not RFC 8785 canonical JSON') };
  }
  if (leaf.type !== LEAF_TYPE && leaf.type !== LEAF_TYPE_V1) {
    return {
      check: fail('leaf', title, `the leaf's type is ${JSON.stringify(leaf.type)}, not ${LEAF_TYPE}`),
    };
  }
  if (leaf.run_id !== proof.run_id) {
    return {
      check: fail('leaf', title, `the leaf is run ${JSON.stringify(leaf.run_id)}, not run ${proof.run_id}`),
    };
  }
  if (leaf.type === LEAF_TYPE && leaf.index !== proof.leaf_index) {
    return {
      check: fail(
        'leaf',
        title,
        `the leaf says it is leaf ${JSON.stringify(leaf.index)}, the proof places it at ${proof.leaf_index}`,
      ),
    };
  }
  const record = leaf.record;
  if (!isJsonObject(record) || record.run_id !== proof.run_id) {
    return { check: fail('leaf', title, `the leaf's record is not run ${proof.run_id}'s`) };
  }
  const outputs = Array.isArray(record.outputs) ? record.outputs : [];
  const named = outputs.map((output) => {
    const artifact = output as { artifact_id?: unknown; digest?: { alg?: unknown; value?: unknown } };
    return {
      artifact_id: artifact.artifact_id,
      digest: artifact.digest ? `${artifact.digest.alg}:${artifact.digest.value}` : null,
    };
  });
  if (canonicalize(named) !== canonicalize(leaf.output_digests ?? null)) {
    return { check: fail('leaf', title, "the leaf's output_digests are not its record's outputs") };
  }
  return {
    check: pass(
      'leaf',
      title,
      `leaf ${proof.leaf_index}: ${leafBytes.length} bytes of canonical JSON, type ${String(leaf.type)}, run ${proof.run_id}, output digests as its record names them`,
    ),
    leaf: { object: leaf, record: record as Record<string, unknown> },
  };
}

async function checkInclusion(
  proof: RunProof,
  leafBytes: Uint8Array | undefined,
  checkpoint: ParsedCheckpoint | undefined,
): Promise<Check> {
  const title = 'The entry is in the log the checkpoint signs (RFC 9162 inclusion proof)';
  if (leafBytes === undefined || proof.leaf_index === null) {
    return fail(
      'inclusion',
      title,
      proof.leaf === null ? 'the log holds no entry for this run' : 'the leaf is not base64',
    );
  }
  if (checkpoint === undefined || proof.inclusion === null) {
    return skip(
      'inclusion',
      title,
      proof.checkpoint === null
        ? 'the ledger holds no checkpoint yet, so there is no signed root to prove inclusion against'
        : proof.inclusion === null
          ? 'the server sent no inclusion proof (the entry is newer than the latest checkpoint)'
          : 'the checkpoint could not be read',
    );
  }
  const { tree_size: size, hashes } = proof.inclusion;
  if (size !== checkpoint.size) {
    return fail(
      'inclusion',
      title,
      `the proof is for a tree of ${size} entries, the checkpoint signs ${checkpoint.size}`,
    );
  }
  const path = hashes.map(fromBase64);
  if (path.some((hash) => hash?.length !== HASH_SIZE)) {
    return fail('inclusion', title, 'a proof hash is not the base64 of 32 bytes');
  }
  const root = await rootFromInclusion(leafBytes, proof.leaf_index, size, path as Uint8Array[]);
  if (root === undefined) {
    return fail(
      'inclusion',
      title,
      `${path.length} hashes are not an audit path for leaf ${proof.leaf_index} of ${size}`,
    );
  }
  const leafHex = toHex(await leafHash(leafBytes));
  return sameBytes(root, checkpoint.root)
    ? pass(
        'inclusion',
        title,
        `leaf hash ${leafHex} and ${path.length} proof hashes lead to the checkpoint's root ${toHex(root)} (tree size ${size})`,
      )
    : fail(
        'inclusion',
        title,
        `leaf hash ${leafHex} and the proof lead to root ${toHex(root)}, not the checkpoint's ${toHex(checkpoint.root)}`,
      );
}

async function checkCheckpointSignature(
  proof: RunProof,
  checkpoint: ParsedCheckpoint | string | undefined,
  keys: UsableKey[],
): Promise<Check> {
  const title = 'The checkpoint is signed (C2SP signed note, Ed25519)';
  if (checkpoint === undefined) {
    return skip('checkpoint-signature', title, 'the ledger holds no checkpoint yet');
  }
  if (typeof checkpoint === 'string')
    return fail('checkpoint-signature', title, `not a checkpoint: ${checkpoint}`);
  if (keys.length === 0) return skip('checkpoint-signature', title, noKey(proof, 'checkpoint'));
  for (const key of keys) {
    const keyId = await noteKeyId(checkpoint.origin, key.raw);
    for (const signature of checkpoint.signatures) {
      if (signature.name !== checkpoint.origin || !sameBytes(signature.keyId, keyId)) continue;
      if (await ed25519Verifies(key.raw, signature.signature, utf8(checkpoint.body))) {
        return pass(
          'checkpoint-signature',
          title,
          `${checkpoint.origin} at tree size ${checkpoint.size} is signed by ${key.label}${trustNote(key)}`,
        );
      }
      return fail(
        'checkpoint-signature',
        title,
        `the signature with ${key.label}'s key id does not verify: the checkpoint was altered`,
      );
    }
  }
  return fail(
    'checkpoint-signature',
    title,
    `no signature on ${checkpoint.origin} is by ${keys.map((key) => key.label).join(' or ')}`,
  );
}

function trustNote(key: UsableKey): string {
  return key.trusted
    ? ' (the key you gave)'
    : ' (a key the server sent, so untrusted: this shows only that the server is consistent; paste a key you trust to check who signed)';
}

function noKey(proof: RunProof, purpose: string): string {
  return proof.keys.length === 0
    ? 'the server sent no public key and none was given'
    : `the server sent no usable ${purpose} key and none was given`;
}

const RECORD_DIGEST_ALGS = { sha256: 'SHA-256', sha512: 'SHA-512' } as const;

async function recordDigestHex(record: Record<string, unknown>, alg: 'sha256' | 'sha512'): Promise<string> {
  const { integrity: _integrity, ...rest } = record;
  return toHex(await sha(RECORD_DIGEST_ALGS[alg], utf8(canonicalize(rest))));
}

async function checkRecordDigest(leaf: Leaf | undefined): Promise<Check> {
  const title = "The record's digest is recomputed from the record (SHA-256 of RFC 8785, integrity left out)";
  if (leaf === undefined) return skip('record-digest', title, 'the leaf could not be read');
  const recomputed = `sha256:${await recordDigestHex(leaf.record, 'sha256')}`;
  const inLeaf = leaf.object.record_digest;
  if (typeof inLeaf !== 'string' || !DIGEST.test(inLeaf)) {
    return fail(
      'record-digest',
      title,
      `the leaf's record_digest ${JSON.stringify(inLeaf)} is not sha256:<hex>`,
    );
  }
  if (inLeaf !== recomputed) {
    return fail(
      'record-digest',
      title,
      `the record digests to ${recomputed}, the leaf says ${inLeaf}: the record was altered`,
    );
  }
  const claimed = (
    leaf.record.integrity as { record_digest?: { alg?: unknown; value?: unknown } } | undefined
  )?.record_digest;
  if (claimed === undefined) {
    return pass(
      'record-digest',
      title,
      `${recomputed}, as the leaf says (the record carries no digest of its own)`,
    );
  }
  if (claimed.alg !== 'sha256' && claimed.alg !== 'sha512') {
    return pass(
      'record-digest',
      title,
      `${recomputed}, as the leaf says; the record's own ${String(claimed.alg)} digest is not checked here (a browser computes SHA-2 only)`,
    );
  }
  const own = claimed.alg === 'sha256' ? recomputed.slice(7) : await recordDigestHex(leaf.record, 'sha512');
  return own === claimed.value
    ? pass('record-digest', title, `${recomputed}, as the leaf and the record's integrity.record_digest say`)
    : fail(
        'record-digest',
        title,
        `the record's integrity.record_digest is ${claimed.alg}:${String(claimed.value)}, recomputed ${claimed.alg}:${own}`,
      );
}

async function checkRecordSignature(
  proof: RunProof,
  leaf: Leaf | undefined,
  digest: Check,
  keys: UsableKey[],
): Promise<Check> {
  const title = "The record's Ed25519 signature verifies";
  if (leaf === undefined) return skip('record-signature', title, 'the leaf could not be read');
  const integrity = leaf.record.integrity as
    | { record_digest?: unknown; signature?: { alg?: unknown; key_id?: unknown; value?: unknown } }
    | undefined;
  const signature = integrity?.signature;
  if (signature === undefined) return absent('record-signature', title, 'the record is not signed');
  if (signature.alg !== 'ed25519') {
    return fail(
      'record-signature',
      title,
      `the signature's algorithm is ${JSON.stringify(signature.alg)}, not ed25519`,
    );
  }
  if (digest.status !== 'pass')
    return fail('record-signature', title, 'the signature cannot hold: the record digest does not');
  const bytes = typeof signature.value === 'string' ? fromBase64(signature.value) : undefined;
  if (bytes === undefined) return fail('record-signature', title, 'the signature value is not base64');
  if (keys.length === 0) return skip('record-signature', title, noKey(proof, 'record'));
  const message = utf8(canonicalize(integrity?.record_digest));
  for (const key of keys) {
    const keyId = await recordKeyId(key.raw);
    // A signature naming another ed25519 key is not that key's to verify; other key id spellings are the signer's own.
    if (
      typeof signature.key_id === 'string' &&
      signature.key_id.startsWith('ed25519:') &&
      signature.key_id !== keyId
    ) {
      continue;
    }
    return (await ed25519Verifies(key.raw, bytes, message))
      ? pass('record-signature', title, `signed by ${keyId}, verified with ${key.label}${trustNote(key)}`)
      : fail('record-signature', title, `the signature does not verify with ${key.label} (${keyId})`);
  }
  return fail(
    'record-signature',
    title,
    `the record names signer ${String(signature.key_id)}, which is not ${keys.map((key) => key.label).join(' or ')}`,
  );
}

async function checkEnvelope(proof: RunProof, leaf: Leaf | undefined): Promise<Check> {
  const title = "The stored envelope is the one the leaf's envelope_digest names";
  if (leaf === undefined) return skip('envelope-digest', title, 'the leaf could not be read');
  const named = leaf.object.envelope_digest;
  if (named === null && proof.envelope_text === null) {
    return absent('envelope-digest', title, 'the record was stored without its envelope');
  }
  if (proof.envelope_text === null) {
    return skip(
      'envelope-digest',
      title,
      `the leaf names ${String(named)}, but the server sent no envelope text`,
    );
  }
  if (named === null)
    return fail('envelope-digest', title, 'the server sent an envelope the leaf does not name');
  const digest = `sha256:${toHex(await sha('SHA-256', utf8(proof.envelope_text)))}`;
  return digest === named
    ? pass('envelope-digest', title, `${digest}, as the leaf says`)
    : fail(
        'envelope-digest',
        title,
        `the envelope text digests to ${digest}, the leaf says ${String(named)}`,
      );
}

/**
 * Every check of a run's proof, in the order the page lists them. With
 * `trustedKeyText` (a key a person pasted) that key alone verifies the
 * signatures; without it the server's keys do, and each result says so.
 */
export async function verifyRunProof(value: unknown, trustedKeyText = ''): Promise<Check[]> {
  const problem = runProofProblem(value);
  if (problem !== undefined) {
    return [fail('proof', 'The server answered with a run proof', problem)];
  }
  const proof = value as RunProof;
  const checks: Check[] = [];
  let checkpointKeys: UsableKey[];
  let recordKeys: UsableKey[];
  if (trustedKeyText.trim() !== '') {
    const parsed = parseTrustedKey(trustedKeyText);
    const title = 'The public key you gave is read';
    if (typeof parsed === 'string') {
      checks.push(fail('trusted-key', title, `the key is not used: ${parsed}`));
      // Fail closed: a key the person meant to trust is never swapped for the server's.
      checkpointKeys = [];
      recordKeys = [];
    } else {
      const key: UsableKey = {
        raw: concatBytes(parsed),
        label: `the key you gave (${await recordKeyId(parsed)})`,
        trusted: true,
      };
      checks.push(
        pass(
          'trusted-key',
          title,
          `Ed25519 key ${await recordKeyId(parsed)}; the server's keys are not used`,
        ),
      );
      checkpointKeys = [key];
      recordKeys = [key];
    }
  } else {
    checkpointKeys = serverKeys(proof, 'checkpoint');
    recordKeys = serverKeys(proof, 'record');
  }
  const leafBytes = proof.leaf === null ? undefined : fromBase64(proof.leaf);
  const checkpoint = proof.checkpoint === null ? undefined : parseCheckpointNote(proof.checkpoint);
  const read = checkLeaf(proof, leafBytes);
  checks.push(read.check);
  checks.push(
    await checkInclusion(proof, leafBytes, typeof checkpoint === 'string' ? undefined : checkpoint),
  );
  checks.push(await checkCheckpointSignature(proof, checkpoint, checkpointKeys));
  const digest = await checkRecordDigest(read.leaf);
  checks.push(digest);
  checks.push(await checkRecordSignature(proof, read.leaf, digest, recordKeys));
  checks.push(await checkEnvelope(proof, read.leaf));
  return checks;
}

/**
 * One word for a run's checks: `fail` when one failed; `pass` when every
 * check passed or had nothing to check; `partial` when one could not be
 * made (no checkpoint yet, no key).
 */
export function outcomeOf(checks: readonly Check[]): 'pass' | 'fail' | 'partial' {
  if (checks.some((check) => check.status === 'fail')) return 'fail';
  return checks.every((check) => check.status === 'pass' || check.absent) ? 'pass' : 'partial';
}
