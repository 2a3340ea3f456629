/**
 * The ledger viewer's runs page on a large ledger (LEDGER_WEB_BENCH_N
 * records, default 100,000): server time to answer the first page, a deep
 * page (keyset paging near the oldest rows) and a filtered page, each through
 * the viewer's real handler over loopback HTTP (query, per-row digest,
 * signature and inclusion checks, HTML), printed next to its peer measured in
 * the same run on the same file: the bare SELECT of the same rows (same
 * WHERE, ORDER BY seq DESC, LIMIT 50). Those three are viewed repeatedly, so
 * their rows' signature verdicts are memoized after the first view; a fourth
 * line pages through rows never shown before, every signature verified.
 * Target: under 100 ms per page. Each line gives the median wall time and, as
 * a figure less swayed by other work on the machine, the median CPU time.
 *
 * The ledger is filled through Ledger.insertMany, a thousand records per
 * transaction, so that setting up 100,000 records takes seconds.
 */

import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, writeCheckpoint } from '../src/ledger/index.ts';
import { createLedgerWeb } from '../src/ledger/web/index.ts';
import { buildCallRecord, DEFAULT_CONTROLS, signRecord } from '../src/provenance/index.ts';
import { quantile } from './support.ts';

const N = Number(process.env.LEDGER_WEB_BENCH_N ?? 100_000);
const SAMPLES = 30;
const keys = generateKeyPairSync('ed25519');

const dir = mkdtempSync(join(tmpdir(), 'ledger-web-bench-'));
try {
  const file = join(dir, 'ledger.sqlite');
  const base = Date.UTC(2026, 0, 1);
  let stamped = 0;
  // Records a second apart, so time filters have a range to cut.
  const writer = Ledger.open(file, { now: () => new Date(base + 1000 * stamped++) });
  let start = performance.now();
  let batch: Array<{ subject: unknown; meta: { upstream: string; principal: string } }> = [];
  for (let i = 0; i < N; i++) {
    const runId = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const failed = i % 7 === 0;
    // Signed, as a gateway with `signing` stores them: the page checks each row's signature.
    const record = signRecord(
      buildCallRecord({
        runId,
        tool: { name: `tool-${i % 5}`, version: '1.0.0', adapter: 'mcp' },
        action: 'wrapped',
        inputs: [],
        result: { text: `answer ${i}` },
        attached: false,
        capturedErrors: failed,
        parents: i > 0 && i % 3 === 0 ? [`00000000-0000-4000-8000-${String(i - 1).padStart(12, '0')}`] : [],
        controls: {
          ...DEFAULT_CONTROLS,
          captureProvenance: true,
          provenanceMode: 'minimal',
          deterministic: true,
        },
        bindResult: true,
      }),
      keys.privateKey,
    );
    batch.push({ subject: record, meta: { upstream: `up-${i % 3}`, principal: `token:user-${i % 4}` } });
    if (batch.length === 1000 || i === N - 1) {
      // As the gateway files them: a batch per transaction (Ledger.insertMany).
      writer.insertMany(batch);
      batch = [];
    }
  }
  writeCheckpoint(writer, keys.privateKey);
  writer.close();
  console.log(
    `built a ledger of ${N} signed records in ${((performance.now() - start) / 1000).toFixed(1)} s`,
  );

  const ledger = Ledger.open(file, { readOnly: true });
  const web = createLedgerWeb({ ledger, publicKey: keys.publicKey });
  const server = createServer((req, res) => void web.handle(req, res));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as AddressInfo).port;

  const get = (path: string) =>
    new Promise<void>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}`));
        res.resume();
        res.on('end', resolve);
      })
        .on('error', reject)
        .end();
    });

  /** Wall time and this process's CPU time (server and client both run here) of one request, in ms. */
  const timed = async (path: string): Promise<{ wall: number; cpu: number }> => {
    const cpu = process.cpuUsage();
    const begin = performance.now();
    await get(path);
    const used = process.cpuUsage(cpu);
    return { wall: performance.now() - begin, cpu: (used.user + used.system) / 1000 };
  };
  const ROWS = 'seq, run_id, tool, upstream, principal, outcome, error_code, created_at, record_digest';
  const deep = 1000;
  const cases: Array<{ name: string; path: string; peer: string }> = [
    {
      name: 'first page',
      path: '/ledger?limit=50',
      peer: `SELECT ${ROWS} FROM records ORDER BY seq DESC LIMIT 50`,
    },
    {
      name: `deep page (before seq ${deep})`,
      path: `/ledger?limit=50&before=${deep}`,
      peer: `SELECT ${ROWS} FROM records WHERE seq < ${deep} ORDER BY seq DESC LIMIT 50`,
    },
    {
      name: 'filtered page (tool-3, error)',
      path: '/ledger?limit=50&tool=tool-3&outcome=error',
      peer: `SELECT ${ROWS} FROM records WHERE tool = 'tool-3' AND outcome = 'error' ORDER BY seq DESC LIMIT 50`,
    },
  ];
  const read = ledger.database();
  for (const { name, path, peer } of cases) {
    await get(path); // warm: statements prepared, pages in the cache
    const page: number[] = [];
    const cpu: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const one = await timed(path);
      page.push(one.wall);
      cpu.push(one.cpu);
      start = performance.now();
      read.prepare(peer).all();
      bare.push(performance.now() - start);
    }
    page.sort((a, b) => a - b);
    cpu.sort((a, b) => a - b);
    bare.sort((a, b) => a - b);
    const p50 = quantile(page, 0.5);
    const peer50 = quantile(bare, 0.5);
    console.log(
      `${name}: ${p50.toFixed(1)} ms (p95 ${quantile(page, 0.95).toFixed(1)} ms; CPU ${quantile(cpu, 0.5).toFixed(1)} ms) vs bare SELECT ${peer50.toFixed(2)} ms: ratio ${(p50 / peer50).toFixed(0)}x (target < 100 ms)`,
    );
  }
  // Every sample a page not seen before: nothing memoized (each row's signature is verified anew).
  const cold: number[] = [];
  const coldCpu: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const one = await timed(`/ledger?limit=50&before=${N - 2000 - i * 60}`);
    cold.push(one.wall);
    coldCpu.push(one.cpu);
  }
  cold.sort((a, b) => a - b);
  coldCpu.sort((a, b) => a - b);
  const coldPeer: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    start = performance.now();
    read
      .prepare(`SELECT ${ROWS} FROM records WHERE seq < ${N - 2000 - i * 60} ORDER BY seq DESC LIMIT 50`)
      .all();
    coldPeer.push(performance.now() - start);
  }
  coldPeer.sort((a, b) => a - b);
  console.log(
    `pages never seen before (50 rows each): ${quantile(cold, 0.5).toFixed(1)} ms (p95 ${quantile(cold, 0.95).toFixed(1)} ms; CPU ${quantile(coldCpu, 0.5).toFixed(1)} ms) vs bare SELECT ${quantile(coldPeer, 0.5).toFixed(2)} ms: ratio ${(quantile(cold, 0.5) / quantile(coldPeer, 0.5)).toFixed(0)}x (target < 100 ms)`,
  );
  // A record's page and its lineage (children are found by reading every record's parents: no index).
  const middle = `00000000-0000-4000-8000-${String(Math.floor(N / 2) - (Math.floor(N / 2) % 3)).padStart(12, '0')}`;
  for (const [name, path] of [
    ['record page', `/ledger/runs/${middle}`],
    ['lineage page', `/ledger/runs/${middle}/lineage`],
  ] as const) {
    await get(path);
    const times: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < 10; i++) {
      times.push((await timed(path)).wall);
      start = performance.now();
      read.prepare(`SELECT ${ROWS} FROM records WHERE run_id = ?`).all(middle);
      bare.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    bare.sort((a, b) => a - b);
    console.log(
      `${name}: ${quantile(times, 0.5).toFixed(1)} ms vs bare SELECT of its row ${quantile(bare, 0.5).toFixed(2)} ms: ratio ${(quantile(times, 0.5) / quantile(bare, 0.5)).toFixed(0)}x`,
    );
  }
  await new Promise((done) => server.close(done));
  ledger.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
