/**
 * Auditing the log against the rows: every leaf is recomputed from the row it
 * stands for (so a changed run_id, tool, upstream, created_at, record or
 * envelope column is named), every row must have its leaf and every leaf its
 * row (a deleted or smuggled row), the tree's root is recomputed from the
 * leaves, and a signed checkpoint (the one given, else every stored one) must
 * be the root of a prefix of the tree: a truncated, wiped, rewritten or forked
 * log fails against a checkpoint taken before.
 */
import type { KeyObject } from 'node:crypto';
import { canonicalize, parseJsonLossless } from '../../canonical/index.ts';
import type { ProvRecord } from '../../provenance/record.ts';
import type { Ledger, StoredRow } from '../store.ts';
import { type Checkpoint, checkpointSignedBy, parseCheckpoint } from './checkpoint.ts';
import { leafHash, MemoryTree } from './hashing.ts';
import { leafObject } from './leaf.ts';
import { consistencyProof, verifyConsistency } from './proofs.ts';

export interface LogProblem {
  code: 'LEDGER_TAMPERED';
  /** The row (seq) or leaf (index) it concerns, when one. */
  seq?: number;
  index?: number;
  /** The column or leaf member that differs, when one. */
  column?: string;
  message: string;
}

export interface CheckpointCheck {
  origin: string;
  size: number;
  /** Where it came from: the file given, or the ledger's own table. */
  source: 'given' | 'stored';
  /** True, false, or null when no public key was given. */
  signed: boolean | null;
  consistent: boolean;
}

export interface LogAudit {
  ok: boolean;
  size: number;
  root: string;
  checkpoints: CheckpointCheck[];
  problems: LogProblem[];
}

const MEMBERS = [
  'run_id',
  'tool',
  'upstream',
  'created_at',
  'record_digest',
  'record',
  'envelope_digest',
] as const;
const COLUMN: Record<(typeof MEMBERS)[number], string> = {
  run_id: 'run_id',
  tool: 'tool',
  upstream: 'upstream',
  created_at: 'created_at',
  record_digest: 'record_digest',
  record: 'record',
  envelope_digest: 'envelope',
};

function rowLeaf(row: StoredRow, principal: string | null): Record<string, unknown> {
  return leafObject({
    run_id: row.run_id,
    tool: row.tool,
    upstream: row.upstream,
    principal,
    created_at: row.created_at,
    record_digest: row.record_digest,
    record: parseJsonLossless(row.record).lossless as unknown as ProvRecord,
    envelope:
      row.envelope === null ? null : (parseJsonLossless(row.envelope).lossless as Record<string, unknown>),
  });
}

function parseLeaf(bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value = parseJsonLossless(Buffer.from(bytes).toString('utf8')).lossless;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function canonicalText(value: unknown): string {
  return value === undefined ? 'nothing' : canonicalize(value);
}

export function auditLog(
  ledger: Ledger,
  options: { publicKey?: KeyObject; checkpoint?: Checkpoint } = {},
): LogAudit {
  const db = ledger.database();
  const problems: LogProblem[] = [];
  const rows = new Map<number, StoredRow>();
  for (const row of db.prepare('SELECT * FROM records ORDER BY seq').iterate()) {
    const raw = row as unknown as StoredRow;
    rows.set(Number(raw.seq), raw);
  }
  const leaves = [...ledger.log().leaves()];
  const byText = new Map<string, number>();
  for (const leaf of leaves) byText.set(Buffer.from(leaf.leaf).toString('utf8'), leaf.index);
  const logged = new Set<number>();
  for (const [position, leaf] of leaves.entries()) {
    const where = `leaf ${leaf.index} (seq ${leaf.seq})`;
    if (leaf.index !== position) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        index: position,
        message: `leaf ${position} is missing from the log`,
      });
    }
    logged.add(leaf.seq);
    const stored = parseLeaf(leaf.leaf);
    if (stored === undefined) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq: leaf.seq,
        index: leaf.index,
        message: `${where}: the leaf bytes are not a JSON object (changed)`,
      });
      continue;
    }
    const row = rows.get(leaf.seq);
    if (row === undefined) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq: leaf.seq,
        index: leaf.index,
        message: `${where}: row seq ${leaf.seq} (run ${String(stored.run_id)}) was deleted from records`,
      });
      continue;
    }
    let expected: Record<string, unknown>;
    let expectedText: string;
    try {
      expected = rowLeaf(row, typeof stored.principal === 'string' ? stored.principal : null);
      expectedText = canonicalize(expected);
    } catch (error) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq: leaf.seq,
        index: leaf.index,
        column: 'record',
        message: `${where}: its row cannot be read: ${(error as Error).message}`,
      });
      continue;
    }
    if (expectedText === Buffer.from(leaf.leaf).toString('utf8')) continue;
    const elsewhere = byText.get(expectedText);
    if (elsewhere !== undefined) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq: leaf.seq,
        index: leaf.index,
        message: `${where}: row seq ${leaf.seq} holds the entry logged at leaf ${elsewhere}: rows were reordered`,
      });
      continue;
    }
    const changed = MEMBERS.filter(
      (member) => canonicalText(expected[member]) !== canonicalText(stored[member]),
    );
    if (changed.length === 0) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq: leaf.seq,
        index: leaf.index,
        column: 'leaf',
        message: `${where}: the leaf bytes differ from the row's (the leaf was changed)`,
      });
      continue;
    }
    for (const member of changed) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq: leaf.seq,
        index: leaf.index,
        column: COLUMN[member],
        message: `${where}: column ${COLUMN[member]} differs from the log: ${member === 'record' ? 'the record was changed' : `logged ${canonicalText(stored[member])}, row has ${canonicalText(expected[member])}`}`,
      });
    }
  }
  for (const [seq, row] of rows) {
    if (!logged.has(seq)) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq,
        message: `row seq ${seq} (run ${row.run_id}) is not in the log: it was added outside it`,
      });
    }
  }

  const memory = new MemoryTree(leaves.map((leaf) => leafHash(leaf.leaf)));
  const size = memory.size;
  const root = Buffer.from(memory.root());
  try {
    if (!root.equals(Buffer.from(ledger.log().root(size)))) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        message: 'the stored subtree hashes do not match the leaves (log_nodes was changed)',
      });
    }
  } catch (error) {
    problems.push({
      code: 'LEDGER_TAMPERED',
      message: `the stored subtree hashes are incomplete: ${(error as Error).message}`,
    });
  }

  const checkpoints: CheckpointCheck[] = [];
  // The given checkpoint (one taken earlier, kept apart from the file) and every one the ledger kept.
  const candidates: Array<{ checkpoint: Checkpoint; source: 'given' | 'stored' }> = [
    ...(options.checkpoint ? [{ checkpoint: options.checkpoint, source: 'given' as const }] : []),
  ];
  for (const row of ledger.database().prepare('SELECT id, note FROM log_checkpoints ORDER BY id').iterate()) {
    const { id, note } = row as { id: number; note: string };
    try {
      candidates.push({ checkpoint: parseCheckpoint(note), source: 'stored' });
    } catch (error) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        message: `stored checkpoint ${id} was changed: ${(error as Error).message}`,
      });
    }
  }
  for (const { checkpoint, source } of candidates) {
    const name = `${source === 'given' ? 'the given' : 'stored'} checkpoint ${checkpoint.origin} at size ${checkpoint.size}`;
    const signed = options.publicKey ? checkpointSignedBy(checkpoint, options.publicKey) : null;
    if (signed === false) {
      problems.push({ code: 'LEDGER_TAMPERED', message: `${name} is not signed by the given public key` });
    }
    let consistent = false;
    if (checkpoint.size > size) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        message:
          size === 0
            ? `${name}: the ledger's log is empty (wiped)`
            : `${name}: the log holds only ${size} entries (truncated: leaves ${size}..${checkpoint.size - 1} are gone)`,
      });
    } else {
      const proof = consistencyProof(memory, checkpoint.size, size);
      consistent =
        verifyConsistency(
          checkpoint.size,
          size,
          proof,
          checkpoint.size === 0 ? memory.root(0) : checkpoint.root,
          root,
        ) && Buffer.from(memory.root(checkpoint.size)).equals(checkpoint.root);
      if (!consistent) {
        problems.push({
          code: 'LEDGER_TAMPERED',
          message: `${name}: the first ${checkpoint.size} entries of the log do not have its root hash (history rewritten, or a checkpoint of another log)`,
        });
      }
    }
    checkpoints.push({ origin: checkpoint.origin, size: checkpoint.size, source, signed, consistent });
  }
  return { ok: problems.length === 0, size, root: root.toString('base64'), checkpoints, problems };
}
