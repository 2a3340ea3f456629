/**
 * The proof files `ledger prove` and `ledger consistency` print: JSON with
 * hashes and leaf bytes in base64, carrying the signed checkpoint(s) they are
 * proved against, so that a verifier needs only the file and the public key.
 */
import { EnvelopeError } from '../../errors/index.ts';
import type { Ledger, LedgerEntry } from '../store.ts';
import { type Checkpoint, storedCheckpoints } from './checkpoint.ts';
import { leafHash } from './hashing.ts';
import { consistencyProof, inclusionProof, verifyConsistency, verifyInclusion } from './proofs.ts';

export const INCLUSION_PROOF_TYPE = 'mcp-envelope.ledger.inclusion-proof.v1';
export const CONSISTENCY_PROOF_TYPE = 'mcp-envelope.ledger.consistency-proof.v1';

export interface InclusionProofFile {
  type: typeof INCLUSION_PROOF_TYPE;
  seq: number;
  run_id: string;
  record_digest: string;
  /** The leaf's exact bytes (RFC 8785 JSON), base64. */
  leaf: string;
  leaf_index: number;
  tree_size: number;
  /** RFC 9162 audit path, from the leaf up, base64. */
  audit_path: string[];
  /** The signed checkpoint (C2SP tlog-checkpoint text) whose tree size and root the path leads to. */
  checkpoint: string;
}

export interface ConsistencyProofFile {
  type: typeof CONSISTENCY_PROOF_TYPE;
  origin: string;
  old_size: number;
  new_size: number;
  old_root: string;
  new_root: string;
  /** RFC 9162 consistency path, base64. */
  proof: string[];
  old_checkpoint: string;
  new_checkpoint: string;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

function tampered(message: string, details: Record<string, unknown>): EnvelopeError {
  return new EnvelopeError('LEDGER_TAMPERED', message, details);
}

/** The newest checkpoint the ledger kept (LEDGER_CHECKPOINT_INVALID when none was ever written). */
export function latestCheckpoint(ledger: Ledger): Checkpoint {
  const all = storedCheckpoints(ledger);
  const last = all[all.length - 1];
  if (last === undefined) {
    throw new EnvelopeError(
      'LEDGER_CHECKPOINT_INVALID',
      `Ledger ${ledger.path} holds no checkpoint: write one with ledger checkpoint, or pass --checkpoint FILE`,
      { path: ledger.path },
    );
  }
  return last.checkpoint;
}

/** Proves `entry` is in the tree `checkpoint` vouches for, after checking the tree still has that root. */
export function proveInclusion(
  ledger: Ledger,
  entry: LedgerEntry,
  checkpoint: Checkpoint,
): InclusionProofFile {
  const log = ledger.log();
  const index = log.indexOf(entry.seq);
  const leaf = log.leaf(index);
  if (leaf === undefined) {
    throw tampered(`Row seq ${entry.seq} (run ${entry.run_id}) is not in the log`, { seq: entry.seq });
  }
  if (index >= checkpoint.size) {
    throw new EnvelopeError(
      'LEDGER_CHECKPOINT_INVALID',
      `Row seq ${entry.seq} is leaf ${index}, newer than the checkpoint (tree size ${checkpoint.size}): write a new checkpoint`,
      { seq: entry.seq, index, size: checkpoint.size },
    );
  }
  const size = log.size();
  if (checkpoint.size > size || !Buffer.from(log.root(checkpoint.size)).equals(checkpoint.root)) {
    throw tampered(
      `The log does not have the checkpoint's root at size ${checkpoint.size} (it holds ${size} leaves): history was rewritten, or the checkpoint is another log's`,
      { size, checkpoint_size: checkpoint.size },
    );
  }
  const path = inclusionProof(log, index, checkpoint.size);
  if (!verifyInclusion(leafHash(leaf.leaf), index, checkpoint.size, path, checkpoint.root)) {
    throw tampered(`The stored subtree hashes do not prove leaf ${index}: the stored nodes were changed`, {
      index,
    });
  }
  return {
    type: INCLUSION_PROOF_TYPE,
    seq: entry.seq,
    run_id: entry.run_id,
    record_digest: `sha256:${entry.record_digest}`,
    leaf: b64(leaf.leaf),
    leaf_index: index,
    tree_size: checkpoint.size,
    audit_path: path.map(b64),
    checkpoint: checkpoint.text,
  };
}

/** Proves the older checkpoint's tree is a prefix of the newer one's, from the ledger's tree. */
export function proveConsistency(ledger: Ledger, older: Checkpoint, newer: Checkpoint): ConsistencyProofFile {
  if (older.origin !== newer.origin) {
    throw tampered(`The checkpoints are of different logs: ${older.origin} and ${newer.origin}`, {
      old_origin: older.origin,
      new_origin: newer.origin,
    });
  }
  const [first, second] = older.size <= newer.size ? [older, newer] : [newer, older];
  const log = ledger.log();
  const size = log.size();
  for (const checkpoint of [first, second]) {
    if (checkpoint.size > size || !Buffer.from(log.root(checkpoint.size)).equals(checkpoint.root)) {
      throw tampered(
        `The log does not have the root of the checkpoint at size ${checkpoint.size} (it holds ${size} leaves): history was rewritten, or the checkpoint is of a fork`,
        { size, checkpoint_size: checkpoint.size },
      );
    }
  }
  const proof = consistencyProof(log, first.size, second.size);
  if (!verifyConsistency(first.size, second.size, proof, first.root, second.root)) {
    throw tampered(`The checkpoints at sizes ${first.size} and ${second.size} are not consistent`, {
      old_size: first.size,
      new_size: second.size,
    });
  }
  return {
    type: CONSISTENCY_PROOF_TYPE,
    origin: first.origin,
    old_size: first.size,
    new_size: second.size,
    old_root: b64(first.root),
    new_root: b64(second.root),
    proof: proof.map(b64),
    old_checkpoint: first.text,
    new_checkpoint: second.text,
  };
}
