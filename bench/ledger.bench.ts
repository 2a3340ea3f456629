/**
 * Ledger insert throughput against a raw node:sqlite insert of the same rows
 * (same file settings, prepared statement, no validation and no digest).
 * The ratio is what schema validation, the record digest and canonical JSON cost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Ledger } from '../src/ledger/index.ts';
import { buildCallRecord, DEFAULT_CONTROLS } from '../src/provenance/index.ts';

const N = 3000;
const ROUNDS = 5;

function records(round: number) {
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

const dir = mkdtempSync(join(tmpdir(), 'ledger-bench-'));
const ours: number[] = [];
const peer: number[] = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const batch = records(round);

    const ledger = Ledger.open(join(dir, `ours-${round}.sqlite`));
    let start = performance.now();
    for (const record of batch) ledger.insert(record, { upstream: 'bench' });
    ours.push(N / ((performance.now() - start) / 1000));
    ledger.close();

    const db = new DatabaseSync(join(dir, `peer-${round}.sqlite`));
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
    db.exec(
      'CREATE TABLE records (seq INTEGER PRIMARY KEY, run_id TEXT, tool TEXT, upstream TEXT, record_digest TEXT UNIQUE, created_at TEXT, record TEXT, envelope TEXT)',
    );
    const insert = db.prepare(
      'INSERT INTO records (run_id, tool, upstream, record_digest, created_at, record) VALUES (?, ?, ?, ?, ?, ?)',
    );
    start = performance.now();
    for (const [i, record] of batch.entries()) {
      insert.run(record.run_id, 'echo', 'bench', String(i), new Date().toISOString(), JSON.stringify(record));
    }
    peer.push(N / ((performance.now() - start) / 1000));
    db.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const a = median(ours);
const b = median(peer);
console.log(`ledger insert (validate + digest + canonical JSON): ${a.toFixed(0)} records/s`);
console.log(`raw node:sqlite insert of JSON.stringify rows:       ${b.toFixed(0)} records/s`);
console.log(`ratio ledger/raw: ${(a / b).toFixed(2)} (median of ${ROUNDS} rounds of ${N})`);
