import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CallLog,
  type CallLogFacts,
  defaultInstance,
  instanceName,
  latestCallLogLinks,
  readCallLog,
  readLatestCallLogs,
  stripVolatile,
  VOLATILE_CALL_LOG_FIELDS,
} from '../../../src/gateway/operations/call-log.ts';
import type { CallSummary } from '../../../src/mcp/index.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'call-log-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const fixedClock = () => new Date('2026-03-04T05:06:07.890Z');

const summary: CallSummary = {
  tool: 'echo',
  dialect: 'legacy',
  outcome: 'ok',
  failure: null,
  action: 'wrapped',
  code: null,
  requestId: 'r1',
  durationMs: 3,
  argumentsDigest: `sha256:${'a'.repeat(64)}`,
  resultDigest: `sha256:${'b'.repeat(64)}`,
  resultDialect: 'legacy',
  resultVersion: null,
  sourceDialect: 'legacy',
  sourceVersion: null,
  toolRan: true,
  provenance: null,
  losses: 0,
};
const facts: CallLogFacts = {
  upstream: 'legacy',
  transport: 'stdio',
  arguments: { text: 'secret value', n: 1.0 },
};

describe('CallLog', () => {
  it('writes one pino line per call under <server>/<date>/<name>-<instance>.jsonl', async () => {
    const log = new CallLog({ dir, server: 'gateway', instance: 'blue', now: fixedClock });
    log.write(summary, { ...facts, traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) });
    log.write(
      { ...summary, outcome: 'error', failure: 'invalid_input', code: 'INVALID_INPUT', requestId: 'r2' },
      { ...facts, transport: 'http', route: '/mcp' },
    );
    await log.close();

    expect(log.file).toBe(join(dir, 'gateway', '2026-03-04', 'calls-blue.jsonl'));
    const [first, second] = readFileSync(log.file, 'utf8').trim().split('\n');
    // pino's level and its timestamp lead every line, then the call's fields in a fixed order.
    expect(first).toMatch(/^\{"level":30,"ts":"2026-03-04T05:06:07\.890Z","traceId":/);
    const entries = readCallLog(log.file);
    expect(entries).toHaveLength(2);
    expect(entries[0]).toEqual({
      level: 30,
      ts: '2026-03-04T05:06:07.890Z',
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      requestId: 'r1',
      tool: 'echo',
      upstream: 'legacy',
      dialect: 'legacy',
      outcome: 'ok',
      code: null,
      resultDialect: 'legacy',
      resultVersion: null,
      durationMs: 3,
      transport: 'stdio',
      route: null,
      argumentsDigest: summary.argumentsDigest,
      resultDigest: summary.resultDigest,
    });
    expect(Object.keys(entries[0] ?? {})).toEqual(Object.keys(JSON.parse(first ?? '{}')));
    expect(entries[1]).toMatchObject({
      outcome: 'error',
      code: 'INVALID_INPUT',
      route: '/mcp',
      requestId: 'r2',
    });
    expect(second).toBeDefined();
    expect(entries[1]?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(entries[1]?.spanId).toMatch(/^[0-9a-f]{16}$/);
    // No raw arguments unless asked for.
    expect(readFileSync(log.file, 'utf8')).not.toContain('secret value');
  });

  it('writes the tier of an authenticated caller, and no tier field otherwise', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    log.write(summary, { ...facts, transport: 'http', route: '/mcp', tier: 'pro' });
    log.write(summary, facts);
    await log.close();
    const [tiered, anonymous] = readCallLog(log.file);
    expect(tiered?.tier).toBe('pro');
    expect(anonymous).not.toHaveProperty('tier');
    // The tier is no volatile field: it is part of what two runs must agree on.
    expect(stripVolatile(tiered ?? {})).toHaveProperty('tier', 'pro');
  });

  it('includes raw arguments only when configured', async () => {
    const log = new CallLog({ dir, server: 'gateway', includeArguments: true });
    log.write(summary, facts);
    log.write({ ...summary, argumentsDigest: null }, { ...facts, arguments: undefined });
    await log.close();
    const [first, second] = readCallLog(log.file);
    expect(first?.arguments).toEqual({ text: 'secret value', n: 1 });
    expect(second?.arguments).toBeUndefined();
    expect(second?.argumentsDigest).toBeNull();
  });

  it('keeps <name>-<instance>.latest.jsonl pointing at the instance newest file, appending across restarts', async () => {
    const first = new CallLog({ dir, server: 'gw', instance: 'blue', now: fixedClock });
    first.write(summary, facts);
    await first.close();
    // The same instance started again the same day: the same file, appended to.
    const again = new CallLog({ dir, server: 'gw', instance: 'blue', now: fixedClock });
    again.write(summary, facts);
    again.write(summary, facts);
    await again.close();
    const latest = join(dir, 'gw', 'calls-blue.latest.jsonl');
    expect(again.latest).toBe(latest);
    expect(again.file).toBe(first.file);
    expect(readlinkSync(latest)).toBe(join('2026-03-04', 'calls-blue.jsonl'));
    expect(realpathSync(latest)).toBe(realpathSync(again.file));
    expect(readCallLog(latest)).toHaveLength(3);
  });

  it('gives two instances logging to one folder a file and a link each', async () => {
    const blue = new CallLog({ dir, server: 'gw', instance: 'blue', now: fixedClock });
    const green = new CallLog({ dir, server: 'gw', instance: 'green', now: fixedClock });
    // Interleaved, as two gateways writing at the same time.
    for (let i = 0; i < 500; i++) {
      blue.write({ ...summary, requestId: `blue-${i}` }, facts);
      green.write({ ...summary, requestId: `green-${i}` }, facts);
    }
    await Promise.all([blue.close(), green.close()]);
    expect(blue.file).not.toBe(green.file);
    expect(latestCallLogLinks(join(dir, 'gw')).sort()).toEqual([blue.latest, green.latest].sort());
    for (const [log, name] of [
      [blue, 'blue'],
      [green, 'green'],
    ] as const) {
      expect(realpathSync(log.latest)).toBe(realpathSync(log.file));
      const ids = readCallLog(log.latest).map((entry) => entry.requestId);
      expect(ids).toEqual(Array.from({ length: 500 }, (_, i) => `${name}-${i}`));
    }
    // Read as a folder: both instances' lines, each instance's in its order.
    const merged = readLatestCallLogs(join(dir, 'gw')).map((entry) => entry.requestId ?? '');
    expect(merged).toHaveLength(1000);
    expect(merged.filter((id) => id.startsWith('blue-'))).toEqual(
      Array.from({ length: 500 }, (_, i) => `blue-${i}`),
    );
  });

  it('moves on to a new file under the new date folder at UTC midnight, losing no line', async () => {
    let now = new Date('2026-03-04T23:59:59.000Z');
    const log = new CallLog({ dir, server: 'gw', instance: 'night', now: () => now });
    const before = log.file;
    // Enough lines that some are still buffered when the day changes.
    for (let i = 0; i < 1500; i++) {
      if (i === 1000) now = new Date('2026-03-05T00:00:00.001Z');
      log.write({ ...summary, requestId: `${i}` }, facts);
    }
    const after = log.file;
    await log.close();

    expect(before).toBe(join(dir, 'gw', '2026-03-04', 'calls-night.jsonl'));
    expect(after).toBe(join(dir, 'gw', '2026-03-05', 'calls-night.jsonl'));
    const first = readCallLog(before);
    const second = readCallLog(after);
    expect(first.map((entry) => entry.requestId)).toEqual(Array.from({ length: 1000 }, (_, i) => `${i}`));
    expect(second.map((entry) => entry.requestId)).toEqual(
      Array.from({ length: 500 }, (_, i) => `${1000 + i}`),
    );
    for (const entry of first) expect(entry.ts.startsWith('2026-03-04')).toBe(true);
    for (const entry of second) expect(entry.ts.startsWith('2026-03-05')).toBe(true);
    const latest = join(dir, 'gw', 'calls-night.latest.jsonl');
    expect(readlinkSync(latest)).toBe(join('2026-03-05', 'calls-night.jsonl'));
    expect(realpathSync(latest)).toBe(realpathSync(after));
  });

  it('flushes every buffered line on close', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    for (let i = 0; i < 2000; i++) log.write({ ...summary, requestId: `${i}` }, facts);
    await log.close();
    const entries = readCallLog(log.file);
    expect(entries.map((entry) => entry.requestId)).toEqual(Array.from({ length: 2000 }, (_, i) => `${i}`));
    expect(() => log.write(summary, facts)).toThrow(/closed/);
  });

  it('closes cleanly before anything was written', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    await log.close();
    await log.close();
    expect(readFileSync(log.file, 'utf8')).toBe('');
    expect(readLatestCallLogs(join(dir, 'gw'))).toEqual([]);
    expect(readLatestCallLogs(join(dir, 'nobody'))).toEqual([]);
  });

  it('refuses names that would escape the log folder', () => {
    expect(() => new CallLog({ dir, server: '../etc' })).toThrow(/safe file name/);
    expect(() => new CallLog({ dir, server: 'gw', name: 'a/b' })).toThrow(/safe file name/);
    expect(() => new CallLog({ dir, server: 'gw', instance: '..' })).toThrow(/safe file name/);
  });

  it('names an instance by host and process unless one is configured', () => {
    expect(defaultInstance()).toMatch(new RegExp(`-${process.pid}$`));
    expect(instanceName({})).toBe(defaultInstance());
    expect(instanceName({ MCP_ENVELOPE_INSTANCE: 'gw-a' })).toBe('gw-a');
    expect(instanceName({ MCP_ENVELOPE_INSTANCE: '' })).toBe(defaultInstance());
  });
});

describe('call logs of two processes in one folder', () => {
  const module = fileURLToPath(new URL('../../../src/gateway/operations/call-log.ts', import.meta.url));
  // A process that logs under its default instance name and prints where.
  const script = `
    import { CallLog } from ${JSON.stringify(module)};
    const log = new CallLog({ dir: process.argv[1], server: 'gw' });
    const summary = { tool: 'echo', dialect: 'legacy', outcome: 'ok', code: null, requestId: process.argv[2],
      durationMs: 1, argumentsDigest: null, resultDigest: null, resultDialect: 'legacy', resultVersion: null };
    for (let i = 0; i < 200; i++) log.write(summary, { upstream: 'legacy', transport: 'stdio' });
    await log.close();
    console.log(JSON.stringify({ file: log.file, latest: log.latest }));
  `;
  const run = promisify(execFile);

  it('keep a file and a latest link each', async () => {
    const [one, two] = await Promise.all(
      ['one', 'two'].map(async (id) => {
        const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, dir, id]);
        return { id, ...(JSON.parse(stdout) as { file: string; latest: string }) };
      }),
    );
    if (!one || !two) throw new Error('both processes should have logged');
    expect(one.file).not.toBe(two.file);
    expect(one.latest).not.toBe(two.latest);
    const [day] = readdirSync(join(dir, 'gw')).filter((name) => /^\d{4}-\d{2}-\d{2}$/.test(name));
    expect(readdirSync(join(dir, 'gw', day ?? '')).sort()).toHaveLength(2);
    for (const { id, file, latest } of [one, two]) {
      expect(existsSync(file)).toBe(true);
      expect(realpathSync(latest)).toBe(realpathSync(file));
      const ids = new Set(readCallLog(latest).map((entry) => entry.requestId));
      expect([...ids]).toEqual([id]);
      expect(readCallLog(latest)).toHaveLength(200);
    }
  });
});

describe('stripVolatile', () => {
  it('makes the same call over stdio and HTTP compare equal', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    log.write({ ...summary, requestId: '1', durationMs: 2 }, facts);
    log.write(
      { ...summary, requestId: 'abc', durationMs: 9 },
      { ...facts, transport: 'http', route: '/mcp' },
    );
    await log.close();
    const [overStdio, overHttp] = readCallLog(log.file);
    if (!overStdio || !overHttp) throw new Error('two lines were written');
    expect(overStdio).not.toEqual(overHttp);
    expect(stripVolatile(overStdio)).toEqual(stripVolatile(overHttp));
    for (const field of VOLATILE_CALL_LOG_FIELDS) expect(stripVolatile(overHttp)).not.toHaveProperty(field);
    expect(stripVolatile(overHttp)).toHaveProperty('resultDigest');
    // A different result is still told apart.
    const other = { ...overHttp, resultDigest: 'sha256:00' };
    expect(stripVolatile(other)).not.toEqual(stripVolatile(overStdio));
  });
});
