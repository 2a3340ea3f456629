/**
 * The cheap checks a runs row shows: the stored record still has its digest,
 * its signature holds under the key the server was given, and its leaf is in
 * the tree the latest checkpoint signed. Each is a few hashes and O(log n)
 * node reads, so a page of rows checks itself as it is drawn.
 */
import type { KeyObject } from 'node:crypto';
import { checkSignature, computeRecordDigest, keyIdFor } from '../../provenance/integrity.ts';
import { type Checkpoint, checkpointSignedBy, parseCheckpoint } from '../log/checkpoint.ts';
import { leafHash } from '../log/hashing.ts';
import { inclusionProof, verifyInclusion } from '../log/proofs.ts';
import type { Ledger, LedgerEntry } from '../store.ts';

/** pass / fail, or why nothing was checked. */
export type CheckState = 'pass' | 'fail' | 'absent' | 'unchecked' | 'pending';

export interface RowChecks {
  digest: CheckState;
  signature: CheckState;
  inclusion: CheckState;
  /** The leaf's index in the log, when it has one. */
  leafIndex?: number;
}

export interface LatestCheckpoint {
  checkpoint: Checkpoint;
  /** Signed by the key the server was given: true or false, or null without a key. */
  signed: boolean | null;
  /** The ledger's tree still has the checkpoint's root (else every inclusion fails). */
  consistent: boolean;
}

/** The newest checkpoint the ledger kept, if any; one that does not parse counts as none. */
export function latestCheckpoint(
  ledger: Ledger,
  publicKey: KeyObject | undefined,
): LatestCheckpoint | undefined {
  let checkpoint: Checkpoint | undefined;
  const newest = ledger
    .database()
    .prepare('SELECT note FROM log_checkpoints ORDER BY id DESC LIMIT 1')
    .get() as { note: string } | undefined;
  try {
    checkpoint = newest === undefined ? undefined : parseCheckpoint(newest.note);
  } catch {
    // A stored checkpoint that does not parse proves nothing (the audit names it).
    return undefined;
  }
  if (checkpoint === undefined) return undefined;
  const log = ledger.log();
  let consistent = false;
  try {
    consistent =
      checkpoint.size <= log.size() && Buffer.from(log.root(checkpoint.size)).equals(checkpoint.root);
  } catch {
    consistent = false;
  }
  return {
    checkpoint,
    signed: publicKey ? checkpointSignedBy(checkpoint, publicKey) : null,
    consistent,
  };
}

/** Signature verdicts already reached, so a page viewed again does not verify its rows again. */
const SIGNATURE_MEMO_SIZE = 10_000;
const signatureMemo = new Map<string, CheckState>();
const keyIds = new WeakMap<KeyObject, string>();

function keyIdOf(publicKey: KeyObject): string {
  let id = keyIds.get(publicKey);
  if (id === undefined) {
    id = keyIdFor(publicKey);
    keyIds.set(publicKey, id);
  }
  return id;
}

function signatureState(entry: LedgerEntry, digest: string, publicKey: KeyObject | undefined): CheckState {
  const signature = entry.record.integrity?.signature;
  if (!signature) return 'absent';
  if (!publicKey) return 'unchecked';
  // The verdict is a function of exactly these: the record as it is now (its recomputed digest),
  // the digest and signature it claims, and the key.
  const key = [
    keyIdOf(publicKey),
    digest,
    entry.record.integrity?.record_digest?.alg,
    entry.record.integrity?.record_digest?.value,
    signature.alg,
    signature.value,
  ].join('\n');
  const known = signatureMemo.get(key);
  if (known !== undefined) return known;
  const { status } = checkSignature(entry.record, publicKey);
  const state: CheckState = status === 'pass' ? 'pass' : status === 'absent' ? 'absent' : 'fail';
  if (signatureMemo.size >= SIGNATURE_MEMO_SIZE)
    signatureMemo.delete(signatureMemo.keys().next().value as string);
  signatureMemo.set(key, state);
  return state;
}

/** The leaf of `entry` and its inclusion in the checkpoint's tree. */
export function inclusionOf(
  ledger: Ledger,
  entry: LedgerEntry,
  latest: LatestCheckpoint | undefined,
): { state: CheckState; index?: number; leaf?: Uint8Array; path?: Uint8Array[] } {
  const log = ledger.log();
  const index = log.indexOf(entry.seq);
  const leaf = index === undefined ? undefined : log.leaf(index)?.leaf;
  if (index === undefined || leaf === undefined) return { state: 'fail' };
  // The leaf must be this row's: it names the row's record digest.
  const own = Buffer.from(leaf).toString('utf8').includes(`"record_digest":"sha256:${entry.record_digest}"`);
  if (latest === undefined) return { state: own ? 'unchecked' : 'fail', index, leaf };
  const { checkpoint } = latest;
  if (index >= checkpoint.size) return { state: own ? 'pending' : 'fail', index, leaf };
  try {
    const path = inclusionProof(log, index, checkpoint.size);
    const holds = verifyInclusion(leafHash(leaf), index, checkpoint.size, path, checkpoint.root);
    return { state: own && holds ? 'pass' : 'fail', index, leaf, path };
  } catch {
    return { state: 'fail', index, leaf };
  }
}

export function rowChecks(
  ledger: Ledger,
  entry: LedgerEntry,
  publicKey: KeyObject | undefined,
  latest: LatestCheckpoint | undefined,
): RowChecks {
  const inclusion = inclusionOf(ledger, entry, latest);
  const digest = computeRecordDigest(entry.record).value;
  return {
    digest: digest === entry.record_digest ? 'pass' : 'fail',
    signature: signatureState(entry, digest, publicKey),
    inclusion: inclusion.state,
    ...(inclusion.index === undefined ? {} : { leafIndex: inclusion.index }),
  };
}

/** How a state reads in a table cell. */
export const STATE_LABEL: Record<CheckState, string> = {
  pass: 'pass',
  fail: 'FAIL',
  absent: 'none',
  unchecked: 'not checked',
  pending: 'after checkpoint',
};
