/**
 * Auditing the log against the rows: each row's side columns are compared with
 * its leaf (a changed run_id, tool, upstream, created_at, record_digest or
 * envelope is named, and the viewer's index: principal, outcome, error_code
 * and the row's record_parents), the record in the leaf with its digest, the leaf's index
 * with its place (a moved row), every seq must be there (a deleted row) and
 * every row must have a leaf (a smuggled one); the tree's root is recomputed
 * from the leaves and compared with the stored subtree hashes, and a signed checkpoint (the one given, else every stored one) must
 * be the root of a prefix of the tree: a truncated, wiped, rewritten or forked
 * log fails against a checkpoint taken before.
 */
import type { KeyObject } from 'node:crypto';
import { canonicalize, digestBytes, parseJsonLossless } from '../../canonical/index.ts';
import { computeRecordDigest } from '../../provenance/integrity.ts';
import type { ProvRecord } from '../../provenance/record.ts';
import { INDEX_COLUMN_NAMES, type IndexColumns, indexColumns } from '../index-columns.ts';
import type { Ledger, StoredRow } from '../store.ts';
import { type Checkpoint, checkpointSignedBy, parseCheckpoint } from './checkpoint.ts';
import { HASH_SIZE, leafHash, MemoryTree } from './hashing.ts';
import { LEAF_TYPE } from './leaf.ts';
import { consistencyProof, inclusionProof, verifyConsistency, verifyInclusion } from './proofs.ts';

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

/** The leaf members a row's side columns repeat, by column. */
const COLUMN_MEMBERS = ['run_id', 'tool', 'upstream', 'created_at', 'record_digest', 'envelope'] as const;

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

/** What the leaf says of a column, and what the row has, as the leaf would write it. */
function columnPair(
  column: (typeof COLUMN_MEMBERS)[number],
  row: StoredRow,
  leaf: Record<string, unknown>,
): [logged: unknown, stored: unknown] {
  switch (column) {
    case 'record_digest':
      return [leaf.record_digest, `sha256:${row.record_digest}`];
    case 'envelope':
      return [
        leaf.envelope_digest,
        row.envelope === null
          ? null
          : `sha256:${digestBytes(canonicalize(parseJsonLossless(row.envelope).lossless), 'sha256').value}`,
      ];
    default:
      return [leaf[column], row[column]];
  }
}

/** The problems of one row against its own leaf, where `index` is the leaf's place in the log. */
function rowProblems(
  row: StoredRow,
  index: number,
  leaf: Record<string, unknown>,
  parents: readonly string[],
): LogProblem[] {
  const where = `leaf ${index} (seq ${row.seq})`;
  const problem = (message: string, column?: string): LogProblem => ({
    code: 'LEDGER_TAMPERED',
    seq: Number(row.seq),
    index,
    ...(column ? { column } : {}),
    message: `${where}: ${message}`,
  });
  if (leaf.type === LEAF_TYPE && leaf.index !== index) {
    return [
      problem(
        `row seq ${row.seq} holds the entry logged at leaf ${canonicalText(leaf.index)}: rows were reordered`,
      ),
    ];
  }
  const problems: LogProblem[] = [];
  for (const column of COLUMN_MEMBERS) {
    let logged: unknown;
    let stored: unknown;
    try {
      [logged, stored] = columnPair(column, row, leaf);
    } catch (error) {
      problems.push(problem(`column ${column} cannot be read: ${(error as Error).message}`, column));
      continue;
    }
    if (canonicalText(logged) !== canonicalText(stored)) {
      problems.push(
        problem(
          `column ${column} differs from the log: logged ${canonicalText(logged)}, row has ${canonicalText(stored)}`,
          column,
        ),
      );
    }
  }
  try {
    const digest = `sha256:${computeRecordDigest(leaf.record as ProvRecord).value}`;
    if (digest !== leaf.record_digest) {
      problems.push(
        problem(
          `the record in the leaf was changed (its digest is ${digest}, the leaf names ${canonicalText(leaf.record_digest)})`,
          'leaf',
        ),
      );
    }
  } catch (error) {
    problems.push(problem(`the record in the leaf cannot be read: ${(error as Error).message}`, 'leaf'));
    return problems;
  }
  // The viewer's index: its columns follow from the leaf (principal) and the record and envelope.
  const record = leaf.record as ProvRecord;
  let recomputed: IndexColumns | undefined;
  try {
    recomputed = indexColumns(
      record,
      row.envelope === null ? null : (parseJsonLossless(row.envelope).lossless as Record<string, unknown>),
      typeof leaf.principal === 'string' ? leaf.principal : null,
    );
  } catch {
    recomputed = undefined; // an unreadable envelope column is named above
  }
  const held = row as unknown as Partial<IndexColumns>;
  for (const column of recomputed ? INDEX_COLUMN_NAMES : []) {
    const expected = (recomputed as IndexColumns)[column];
    if ((held[column] ?? null) === expected) continue;
    problems.push(
      problem(
        `column ${column} differs from the log: the log gives ${canonicalText(expected)}, row has ${canonicalText(held[column] ?? null)}`,
        column,
      ),
    );
  }
  const named = [...new Set(record.parents ?? [])].sort();
  const have = [...parents].sort();
  if (canonicalText(named) !== canonicalText(have)) {
    problems.push(
      problem(
        `record_parents differs from the log: the log gives ${canonicalText(named)}, the table has ${canonicalText(have)}`,
        'record_parents',
      ),
    );
  }
  return problems;
}

/** The parents record_parents holds for each row, as the audit reads them. */
type ParentsOf = (seq: number) => string[];

function parentsReader(ledger: Ledger): ParentsOf {
  const statement = ledger.database().prepare('SELECT parent FROM record_parents WHERE seq = ?');
  return (seq) => (statement.all(seq) as Array<{ parent: string }>).map((row) => row.parent);
}

/** One row against its own leaf: the leaf there, hashed as stored, readable, and agreeing with the row. */
function auditRow(row: StoredRow, parentsOf: ParentsOf): LogProblem[] {
  const seq = Number(row.seq);
  const index = seq - 1;
  if (row.leaf === null) {
    return [
      {
        code: 'LEDGER_TAMPERED',
        seq,
        message: `row seq ${seq} (run ${row.run_id}) has no leaf: it was added outside the log`,
      },
    ];
  }
  const problems: LogProblem[] = [];
  if (
    row.nodes === null ||
    !Buffer.from(leafHash(row.leaf)).equals(Buffer.from(row.nodes.subarray(0, HASH_SIZE)))
  ) {
    problems.push({
      code: 'LEDGER_TAMPERED',
      seq,
      index,
      column: 'leaf',
      message: `leaf ${index} (seq ${seq}): the leaf bytes are not those the log hashed for it (the leaf was rewritten)`,
    });
  }
  const leaf = parseLeaf(row.leaf);
  if (leaf === undefined) {
    problems.push({
      code: 'LEDGER_TAMPERED',
      seq,
      index,
      column: 'leaf',
      message: `leaf ${index} (seq ${seq}): the leaf bytes are not a JSON object (changed)`,
    });
    return problems;
  }
  return [...problems, ...rowProblems(row, index, leaf, parentsOf(seq))];
}

/**
 * The log audit of some rows only (`ledger verify KEY`): each row against its
 * leaf, and each leaf's inclusion in the given checkpoint, else the newest
 * kept, proved from the stored subtree hashes (whose root must be the
 * checkpoint's). A row newer than the checkpoint is not yet in any.
 */
export function auditEntries(
  ledger: Ledger,
  seqs: readonly number[],
  options: { publicKey?: KeyObject; checkpoint?: Checkpoint } = {},
): LogAudit {
  const db = ledger.database();
  const problems: LogProblem[] = [];
  const rows: StoredRow[] = [];
  const parentsOf = parentsReader(ledger);
  for (const seq of seqs) {
    const row = db.prepare('SELECT * FROM records WHERE seq = ?').get(seq) as StoredRow | undefined;
    if (row === undefined) continue;
    rows.push(row);
    problems.push(...auditRow(row, parentsOf));
  }
  const log = ledger.log();
  const size = log.size();
  const checkpoints: CheckpointCheck[] = [];
  const stored = ledger
    .database()
    .prepare('SELECT note FROM log_checkpoints ORDER BY id DESC LIMIT 1')
    .get() as { note: string } | undefined;
  let checkpoint = options.checkpoint;
  let source: 'given' | 'stored' = 'given';
  if (checkpoint === undefined && stored !== undefined) {
    source = 'stored';
    try {
      checkpoint = parseCheckpoint(stored.note);
    } catch (error) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        message: `the newest stored checkpoint was changed: ${(error as Error).message}`,
      });
    }
  }
  let root = Buffer.alloc(0);
  try {
    root = Buffer.from(log.root(size));
  } catch (error) {
    problems.push({
      code: 'LEDGER_TAMPERED',
      message: `the stored subtree hashes are incomplete: ${(error as Error).message}`,
    });
  }
  if (checkpoint) {
    const name = `${source === 'given' ? 'the given' : 'stored'} checkpoint ${checkpoint.origin} at size ${checkpoint.size}`;
    const signed = options.publicKey ? checkpointSignedBy(checkpoint, options.publicKey) : null;
    if (signed === false)
      problems.push({ code: 'LEDGER_TAMPERED', message: `${name} is not signed by the given public key` });
    let consistent = false;
    try {
      consistent = checkpoint.size <= size && Buffer.from(log.root(checkpoint.size)).equals(checkpoint.root);
    } catch {
      consistent = false;
    }
    if (!consistent) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        message: `${name}: the log does not have its root (history rewritten, truncated, or a checkpoint of another log)`,
      });
    } else {
      for (const row of rows) {
        const index = Number(row.seq) - 1;
        if (index >= checkpoint.size || row.leaf === null) continue;
        const path = inclusionProof(log, index, checkpoint.size);
        if (!verifyInclusion(leafHash(row.leaf), index, checkpoint.size, path, checkpoint.root)) {
          problems.push({
            code: 'LEDGER_TAMPERED',
            seq: Number(row.seq),
            index,
            message: `leaf ${index} (seq ${row.seq}): not in ${name} (the leaf or the stored hashes were changed)`,
          });
        }
      }
    }
    checkpoints.push({ origin: checkpoint.origin, size: checkpoint.size, source, signed, consistent });
  }
  return { ok: problems.length === 0, size, root: root.toString('base64'), checkpoints, problems };
}

export function auditLog(
  ledger: Ledger,
  options: { publicKey?: KeyObject; checkpoint?: Checkpoint } = {},
): LogAudit {
  const db = ledger.database();
  const problems: LogProblem[] = [];
  const leaves: Uint8Array[] = [];
  const parentsOf = parentsReader(ledger);
  let expectedSeq = 1;
  for (const raw of db.prepare('SELECT * FROM records ORDER BY seq').iterate()) {
    const row = raw as unknown as StoredRow;
    const seq = Number(row.seq);
    // Rows are never deleted: seq runs 1…n, leaf i in row i + 1.
    for (; expectedSeq < seq; expectedSeq++) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        seq: expectedSeq,
        index: expectedSeq - 1,
        message: `leaf ${expectedSeq - 1} (seq ${expectedSeq}): row seq ${expectedSeq} was deleted from records, its leaf with it`,
      });
    }
    expectedSeq = seq + 1;
    if (row.leaf !== null) leaves.push(row.leaf);
    problems.push(...auditRow(row, parentsOf));
  }

  // Parents filed for rows the ledger does not hold: smuggled into the viewer's index.
  for (const row of db
    .prepare(
      'SELECT DISTINCT seq FROM record_parents WHERE seq NOT IN (SELECT seq FROM records) ORDER BY seq',
    )
    .iterate()) {
    const seq = Number((row as { seq: number }).seq);
    problems.push({
      code: 'LEDGER_TAMPERED',
      seq,
      column: 'record_parents',
      message: `record_parents names row seq ${seq}, which the ledger does not hold`,
    });
  }

  const memory = new MemoryTree(leaves.map((leaf) => leafHash(leaf)));
  const size = memory.size;
  const root = Buffer.from(memory.root());
  // With a leaf gone (a deleted or leafless row, named above), no root can be computed to
  // compare: the checkpoints are reported as not consistent without a second problem.
  const complete = size === expectedSeq - 1;
  try {
    if (complete && !root.equals(Buffer.from(ledger.log().root(size)))) {
      problems.push({
        code: 'LEDGER_TAMPERED',
        message: 'the stored subtree hashes do not match the leaves (the nodes column was changed)',
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
    if (!complete) {
      // Named above.
    } else if (checkpoint.size > size) {
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
