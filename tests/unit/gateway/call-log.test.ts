import { existsSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { digestValue } from '../../../src/canonical/index.ts';
import {
  CallLog,
  type CallLogEntry,
  type CallRecordInput,
  readCallLog,
  stripVolatile,
  VOLATILE_CALL_LOG_FIELDS,
} from '../../../src/gateway/operations/call-log.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'call-log-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const fixedClock = () => new Date('2026-03-04T05:06:07.890Z');

const call: CallRecordInput = {
  requestId: 7,
  tool: 'echo',
  upstream: 'legacy',
  dialect: 'legacy',
  outcome: 'ok',
  durationMs: 3,
  transport: 'stdio',
  arguments: { text: 'secret value', n: 1.0 },
  result: { schema_version: 'mcp.envelope.v0.1', result: 'secret value' },
};

describe('CallLog', () => {
  it('writes one JSON line per call under <server>/<date>/<name>-<run id>.jsonl', async () => {
    const log = new CallLog({ dir, server: 'gateway', runId: 'run-1', now: fixedClock });
    const written = log.write({ ...call, traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) });
    log.write({
      ...call,
      outcome: 'error',
      code: 'INVALID_INPUT',
      transport: 'http',
      route: '/mcp',
      requestId: 'r2',
    });
    await log.close();

    expect(log.file).toBe(join(dir, 'gateway', '2026-03-04', 'calls-run-1.jsonl'));
    const entries = readCallLog(log.file);
    expect(entries).toHaveLength(2);
    expect(entries[0]).toEqual(written);
    expect(entries[0]).toEqual({
      ts: '2026-03-04T05:06:07.890Z',
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      requestId: 7,
      tool: 'echo',
      upstream: 'legacy',
      dialect: 'legacy',
      outcome: 'ok',
      code: null,
      resultDialect: null,
      resultVersion: null,
      durationMs: 3,
      transport: 'stdio',
      route: null,
      argumentsDigest: `sha256:${digestValue({ n: 1, text: 'secret value' }).value}`,
      resultDigest: `sha256:${digestValue(call.result).value}`,
    });
    expect(entries[1]).toMatchObject({
      outcome: 'error',
      code: 'INVALID_INPUT',
      route: '/mcp',
      requestId: 'r2',
    });
    expect(entries[1]?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(entries[1]?.spanId).toMatch(/^[0-9a-f]{16}$/);
    // No raw arguments unless asked for.
    expect(readFileSync(log.file, 'utf8')).not.toContain('secret value');
  });

  it('writes the tier of an authenticated caller, and no tier field otherwise', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    log.write({ ...call, transport: 'http', route: '/mcp', tier: 'pro' });
    log.write(call);
    await log.close();
    const [tiered, anonymous] = readCallLog(log.file);
    expect(tiered?.tier).toBe('pro');
    expect(anonymous).not.toHaveProperty('tier');
    // The tier is no volatile field: it is part of what two runs must agree on.
    expect(stripVolatile(tiered as CallLogEntry)).toHaveProperty('tier', 'pro');
  });

  it('includes raw arguments only when configured', async () => {
    const log = new CallLog({ dir, server: 'gateway', includeArguments: true });
    log.write(call);
    log.write({ ...call, arguments: undefined });
    await log.close();
    const [first, second] = readCallLog(log.file);
    expect(first?.arguments).toEqual({ text: 'secret value', n: 1 });
    expect(second?.arguments).toBeUndefined();
    expect(second?.argumentsDigest).toBeNull();
  });

  it('keeps <name>.latest.jsonl pointing at the newest log', async () => {
    const older = new CallLog({ dir, server: 'gw', runId: 'one', now: fixedClock });
    older.write(call);
    await older.close();
    const newer = new CallLog({ dir, server: 'gw', runId: 'two' });
    newer.write(call);
    newer.write(call);
    await newer.close();
    const latest = join(dir, 'gw', 'calls.latest.jsonl');
    expect(newer.latest).toBe(latest);
    expect(readlinkSync(latest)).not.toMatch(/^\//);
    expect(realpathSync(latest)).toBe(realpathSync(newer.file));
    expect(readCallLog(latest)).toHaveLength(2);
    expect(existsSync(older.file)).toBe(true);
  });

  it('moves on to a new file under the new date folder at UTC midnight, losing no line', async () => {
    let now = new Date('2026-03-04T23:59:59.000Z');
    const log = new CallLog({ dir, server: 'gw', runId: 'night', now: () => now });
    const before = log.file;
    // Enough lines that some are still buffered when the day changes.
    for (let i = 0; i < 1500; i++) {
      if (i === 1000) now = new Date('2026-03-05T00:00:00.001Z');
      log.write({ ...call, requestId: i });
    }
    const after = log.file;
    await log.close();

    expect(before).toBe(join(dir, 'gw', '2026-03-04', 'calls-night.jsonl'));
    expect(after).toBe(join(dir, 'gw', '2026-03-05', 'calls-night.jsonl'));
    const first = readCallLog(before);
    const second = readCallLog(after);
    expect(first.map((entry) => entry.requestId)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(second.map((entry) => entry.requestId)).toEqual(Array.from({ length: 500 }, (_, i) => 1000 + i));
    for (const entry of first) expect(entry.ts.startsWith('2026-03-04')).toBe(true);
    for (const entry of second) expect(entry.ts.startsWith('2026-03-05')).toBe(true);
    const latest = join(dir, 'gw', 'calls.latest.jsonl');
    expect(readlinkSync(latest)).toBe(join('2026-03-05', 'calls-night.jsonl'));
    expect(realpathSync(latest)).toBe(realpathSync(after));
  });

  it('flushes every buffered line on close', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    for (let i = 0; i < 2000; i++) log.write({ ...call, requestId: i });
    await log.close();
    const entries = readCallLog(log.file);
    expect(entries.map((entry) => entry.requestId)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(() => log.write(call)).toThrow(/closed/);
  });

  it('closes cleanly before anything was written', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    await log.close();
    await log.close();
    expect(readFileSync(log.file, 'utf8')).toBe('');
  });

  it('refuses names that would escape the log folder', () => {
    expect(() => new CallLog({ dir, server: '../etc' })).toThrow(/safe file name/);
    expect(() => new CallLog({ dir, server: 'gw', name: 'a/b' })).toThrow(/safe file name/);
    expect(() => new CallLog({ dir, server: 'gw', runId: '..' })).toThrow(/safe file name/);
  });
});

describe('stripVolatile', () => {
  it('makes the same call over stdio and HTTP compare equal', async () => {
    const log = new CallLog({ dir, server: 'gw' });
    const overStdio = log.write({ ...call, requestId: 1, durationMs: 2 });
    const overHttp = log.write({
      ...call,
      requestId: 'abc',
      durationMs: 9,
      transport: 'http',
      route: '/mcp',
    });
    await log.close();
    expect(overStdio).not.toEqual(overHttp);
    expect(stripVolatile(overStdio)).toEqual(stripVolatile(overHttp));
    for (const field of VOLATILE_CALL_LOG_FIELDS) expect(stripVolatile(overHttp)).not.toHaveProperty(field);
    expect(stripVolatile(overHttp)).toHaveProperty('resultDigest');
    // A different result is still told apart.
    const other = { ...overHttp, resultDigest: 'sha256:00' };
    expect(stripVolatile(other)).not.toEqual(stripVolatile(overStdio));
  });
});
