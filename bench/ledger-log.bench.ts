/**
 * The transparency log's cost and speed.
 *
 * 1. Append rate: Ledger.insert (validation, record digest, canonical JSON,
 *    the row, and now its leaf and subtree hashes in one transaction) against
 *    the ledger's plain insert as it was before the log, measured in the same
 *    run: the same validation, digest and canonical JSON, and the same row
 *    insert into the same schema with the same file settings, without the log.
 *    Target: ratio >= 0.8. Also that old insert given the ledger's WAL setting
 *    of now, to show what the log itself costs on the same file settings.
 * 2. Proof time on a large log (LEDGER_LOG_BENCH_N leaves, default 1,000,000,
 *    appended through TreeStore in one transaction): inclusion and
 *    consistency proofs for random sizes and indexes, produced from the stored
 *    subtree hashes and verified. Target: < 5 ms each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { canonicalize } from '../src/canonical/index.ts';
import { Ledger } from '../src/ledger/index.ts';
import { leafHash } from '../src/ledger/log/hashing.ts';
import {
  consistencyProof,
  inclusionProof,
  verifyConsistency,
  verifyInclusion,
} from '../src/ledger/log/proofs.ts';
import { MIGRATIONS } from '../src/ledger/migrations.ts';
import { buildCallRecord, computeRecordDigest, DEFAULT_CONTROLS } from '../src/provenance/index.ts';
import type { ProvRecord } from '../src/provenance/record.ts';
import { defaultRegistry, SCHEMA_IDS } from '../src/schemas/index.ts';

const N = 2000;
const ROUNDS = 15;
const LARGE = Number(process.env.LEDGER_LOG_BENCH_N ?? 1_000_000);
const SAMPLES = 500;

function records(round: number): ProvRecord[] {
  return Array.from({ length: N }, (_, i) => {
    const id = `00000000-0000-4000-8000-${String(round * N + i).padStart(12, '0')}`;
    return buildCallRecord({
      runId: id,
      tool: { name: 'echo', version: '1.0.0', adapter: 'mcp' },
      action: 'wrapped',
      inputs: [
        { id: 'arguments', mediaType: 'application/json', content: { json: { text: 'x'.repeat(200) } } },
      ],
      result: { text: 'x'.repeat(200), i },
      attached: true,
      controls: { ...DEFAULT_CONTROLS, captureProvenance: true, provenanceMode: 'full' },
    });
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number;
}

/** The ledger's file setting beyond the old ones (store.ts): a WAL checkpoint every 10,000 pages. */
const TUNED = 'PRAGMA wal_autocheckpoint = 10000;';

/**
 * The insert as it was before the log: the same validation, digest and canonical JSON, the same
 * row insert into the schema of version 1, with the file settings of then (plus `extra`).
 * Returns records/s.
 */
function plainInsert(file: string, batch: ProvRecord[], extra: string): number {
  const db = new DatabaseSync(file);
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; ${extra}`);
  db.exec(MIGRATIONS[0] as string);
  const start = performance.now();
  for (const record of batch) {
    if (!defaultRegistry().validate(SCHEMA_IDS.record, record).valid) throw new Error('invalid record');
    const digest = computeRecordDigest(record).value;
    db.prepare(
      `INSERT INTO records (run_id, tool, upstream, record_digest, created_at, record, envelope)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (record_digest) DO NOTHING RETURNING seq`,
    ).get(
      record.run_id,
      record.tool.name,
      'bench',
      digest,
      new Date().toISOString(),
      canonicalize(record),
      null,
    );
  }
  const rate = batch.length / ((performance.now() - start) / 1000);
  db.close();
  return rate;
}

const dir = mkdtempSync(join(tmpdir(), 'ledger-log-bench-'));
try {
  const withLog: number[] = [];
  const plain: number[] = [];
  const plainTuned: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const batch = records(round);
    const setups = [
      () => {
        const ledger = Ledger.open(join(dir, `log-${round}.sqlite`));
        const start = performance.now();
        for (const record of batch) ledger.insert(record, { upstream: 'bench' });
        withLog.push(N / ((performance.now() - start) / 1000));
        ledger.close();
      },
      () => plain.push(plainInsert(join(dir, `plain-${round}.sqlite`), batch, '')),
      () => plainTuned.push(plainInsert(join(dir, `tuned-${round}.sqlite`), batch, TUNED)),
    ];
    // Each setup goes first, second and third in turn: none always meets the machine's state after another.
    for (let i = 0; i < setups.length; i++) (setups[(round + i) % setups.length] as () => void)();
  }
  const a = median(withLog);
  const b = median(plain);
  const c = median(plainTuned);
  console.log(`ledger insert with the log (row + leaf + subtree hashes): ${a.toFixed(0)} records/s`);
  console.log(`ledger insert without the log (as before it):             ${b.toFixed(0)} records/s`);
  console.log(`without the log, with the ledger's WAL setting of now:    ${c.toFixed(0)} records/s`);
  // Each round's three runs are close in time: the median of the rounds' own ratios leaves out
  // the machine's drift between rounds, which the ratio of the medians keeps.
  const paired = (peer: number[]) => median(withLog.map((rate, i) => rate / (peer[i] as number)));
  console.log(
    `ratio with/without: ${paired(plain).toFixed(2)}x (target >= 0.8; median of ${ROUNDS} rounds' ratios, ${N} records each; ` +
      `ratio of the medians ${(a / b).toFixed(2)}x); what the log itself costs (same file settings): ${paired(plainTuned).toFixed(2)}x`,
  );

  // A large log, leaves of the size of a small entry.
  // Rows carry only what the tree reads (leaf and nodes), written as the store writes them.
  const large = Ledger.open(join(dir, 'large.sqlite'));
  const db = large.database();
  const tree = large.log();
  const insert = db.prepare(
    `INSERT INTO records (seq, run_id, tool, record_digest, created_at, leaf, nodes)
     VALUES (?, 'run', 'tool', ?, 'now', ?, ?)`,
  );
  let start = performance.now();
  db.exec('BEGIN');
  const edge = tree.edge();
  for (let i = 0; i < LARGE; i++) {
    const leaf = Buffer.from(`{"i":${i},"pad":"${'x'.repeat(64)}"}`);
    const next = edge.next(leaf);
    insert.run(next.index + 1, String(next.index), leaf, next.nodes);
    edge.advance(next);
  }
  db.exec('COMMIT');
  const setup = (performance.now() - start) / 1000;
  console.log(
    `large log: ${LARGE} leaves appended in ${setup.toFixed(1)} s (${(LARGE / setup).toFixed(0)} leaves/s in one transaction)`,
  );

  const inclusion: number[] = [];
  const consistency: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    const n = LARGE - Math.floor(Math.random() * (LARGE / 2));
    const m = Math.floor(Math.random() * n);
    start = performance.now();
    const root = tree.root(n);
    const path = inclusionProof(tree, m, n);
    const leaf = tree.leaf(m);
    if (!leaf || !verifyInclusion(leafHash(leaf.leaf), m, n, path, root))
      throw new Error('inclusion proof failed');
    inclusion.push(performance.now() - start);

    const old = 1 + Math.floor(Math.random() * (n - 1));
    start = performance.now();
    const oldRoot = tree.root(old);
    const newRoot = tree.root(n);
    const proof = consistencyProof(tree, old, n);
    if (!verifyConsistency(old, n, proof, oldRoot, newRoot)) throw new Error('consistency proof failed');
    consistency.push(performance.now() - start);
  }
  large.close();
  const ms = (values: number[]) =>
    `median ${median(values).toFixed(3)} ms, p99 ${percentile(values, 0.99).toFixed(3)} ms`;
  console.log(
    `inclusion proof (roots + path + verify) at ~${LARGE} leaves: ${ms(inclusion)} (target < 5 ms)`,
  );
  console.log(`consistency proof (two roots + proof + verify):           ${ms(consistency)} (target < 5 ms)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
