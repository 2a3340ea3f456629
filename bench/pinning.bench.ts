/**
 * The per-call cost of tool pinning's check (PinGuard.checkCall, in enforce)
 * on a pinned, unchanged tool, as the relay pays it on every tools/call once
 * the definition was checked (the first call of each listed definition, and
 * every refused one, also reads the pins' version): against the same
 * call path without the check (the peer: looking the tool up in its
 * upstream's cached list, as every call in envelope mode does), measured in
 * the same run. Pins are kept in an SQLite file, as in the ledger's; in the
 * second figure another connection writes to that file between calls (as the
 * gateway's ledger does on each recorded call), so each check also reads the
 * pins' version counter. Target: the check under 10 µs per call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Tool } from '@modelcontextprotocol/server';
import { PinGuard } from '../src/gateway/pinning/pin-guard.ts';
import { PinStore } from '../src/gateway/pinning/pin-store.ts';

const CALLS = 200_000;
const WRITING_CALLS = 20_000;
const ROUNDS = 5;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const tools = new Map<string, Tool>(
  Array.from({ length: 50 }, (_, i) => [
    `tool_${i}`,
    {
      name: `tool_${i}`,
      description: `Does thing ${i} with the documents it is given, carefully`,
      inputSchema: {
        type: 'object',
        properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1 } },
        required: ['query'],
      },
    } as Tool,
  ]),
);
const source = { name: 'docs', serverInfo: { name: 'docs-server', version: '1.0.0' } };
const listed = async () => tools;
const names = [...tools.keys()];

const dir = mkdtempSync(join(tmpdir(), 'pinning-bench-'));
try {
  const file = join(dir, 'pins.sqlite');
  const store = PinStore.open(file);
  const pins = new PinGuard({ store, modes: { docs: 'enforce' } });
  pins.review(source, 'tool', [...tools.values()] as unknown as Record<string, unknown>[]);

  async function peer(calls: number): Promise<number> {
    const start = performance.now();
    for (let i = 0; i < calls; i++) {
      const tool = await (await listed()).get(names[i % names.length] as string);
      if (!tool) throw new Error('no tool');
    }
    return ((performance.now() - start) * 1000) / calls;
  }

  async function checked(calls: number): Promise<number> {
    const start = performance.now();
    for (let i = 0; i < calls; i++) {
      const name = names[i % names.length] as string;
      const tool = await (await listed()).get(name);
      if ((await pins.checkCall(source, tool, listed, name)) === undefined) throw new Error('no digest');
    }
    return ((performance.now() - start) * 1000) / calls;
  }

  // Warm both paths (digests cached per tool object, as in the gateway).
  await peer(CALLS);
  await checked(CALLS);
  const without: number[] = [];
  const withCheck: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    without.push(await peer(CALLS));
    withCheck.push(await checked(CALLS));
  }
  const a = median(withCheck);
  const b = median(without);
  console.log(`call path with the pin check:    ${a.toFixed(3)} µs/call`);
  console.log(`call path without it (peer):     ${b.toFixed(3)} µs/call`);
  console.log(
    `ratio with/without: ${(a / b).toFixed(2)}x; the check costs ${(a - b).toFixed(3)} µs/call (target < 10 µs; median of ${ROUNDS} rounds of ${CALLS})`,
  );

  // Another connection writes to the file between calls: each check reads the version counter again.
  const writer = new DatabaseSync(file);
  writer.exec('CREATE TABLE IF NOT EXISTS noise (n INTEGER)');
  const insert = writer.prepare('INSERT INTO noise (n) VALUES (?)');
  const timedWith: number[] = [];
  const timedWithout: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let spentWith = 0;
    let spentWithout = 0;
    for (let i = 0; i < WRITING_CALLS; i++) {
      insert.run(i);
      const name = names[i % names.length] as string;
      let start = performance.now();
      const tool = await (await listed()).get(name);
      spentWithout += performance.now() - start;
      start = performance.now();
      const again = await (await listed()).get(name);
      await pins.checkCall(source, again, listed, name);
      spentWith += performance.now() - start;
      if (!tool) throw new Error('no tool');
    }
    timedWith.push((spentWith * 1000) / WRITING_CALLS);
    timedWithout.push((spentWithout * 1000) / WRITING_CALLS);
  }
  writer.close();
  const c = median(timedWith);
  const d = median(timedWithout);
  console.log(
    `with the file written between calls: ${c.toFixed(3)} µs/call with the check, ${d.toFixed(3)} without`,
  );
  console.log(
    `ratio with/without: ${(c / d).toFixed(2)}x; the check costs ${(c - d).toFixed(3)} µs/call (target < 10 µs; median of ${ROUNDS} rounds of ${WRITING_CALLS})`,
  );
  store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
