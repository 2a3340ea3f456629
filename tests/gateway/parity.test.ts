import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  readLatestCallLogs,
  type StableCallLogEntry,
  stripVolatile,
} from '../../src/gateway/operations/call-log.ts';
import { Ledger } from '../../src/ledger/index.ts';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { gatewayStdio, type Running } from './processes.ts';

/**
 * Transport parity: the same scripted calls through `gateway --stdio` and
 * `gateway --http`, each with the same deterministic-id seed and a fresh
 * ledger and log, must give identical envelopes and identical call-log lines
 * once the volatile fields are stripped. The stripped lines are also kept as a
 * golden file, so a change in what the gateway logs is a reviewed change
 * (regenerate with UPDATE_GOLDEN=1).
 */

const SEED = 'parity-golden';
const GOLDEN = fileURLToPath(new URL('../fixtures/gateway/parity.golden.jsonl', import.meta.url));

interface ScriptedCall {
  name: string;
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/**
 * One of each kind: success of every payload shape, tool error, thrown error, invalid input,
 * passthrough, provenance, an unknown tool, an upstream crash and the call after its restart.
 */
const SCRIPT: readonly ScriptedCall[] = [
  { name: 'legacy__plain_text' },
  { name: 'legacy__json_text' },
  { name: 'legacy__array' },
  { name: 'legacy__number' },
  { name: 'legacy__boolean' },
  { name: 'legacy__null' },
  { name: 'legacy__echo', arguments: { text: 'same on both' } },
  { name: 'legacy__stats', arguments: { values: [1, 2, 3.5] } },
  { name: 'legacy__own_error' },
  { name: 'legacy__throws' },
  { name: 'legacy__echo', arguments: { text: 5 } },
  { name: 'envelopes__report' },
  { name: 'envelopes__word_count', arguments: { text: 'one two' } },
  { name: 'envelopes__place_order', arguments: { item: 'x', quantity: 0 } },
  { name: 'envelopes__checksum', arguments: { text: 'abc' }, _meta: { capture_provenance: true } },
  { name: 'legacy__echo', arguments: { text: 'record me' }, _meta: { capture_provenance: true } },
  { name: 'python__add', arguments: { a: 1, b: 2 } },
  { name: 'python__upper', arguments: { text: 'up' } },
  { name: 'python__fail' },
  { name: 'python__add', arguments: { a: 1, b: 2 }, _meta: { capture_provenance: true } },
  {
    name: 'legacy__json_text',
    _meta: { capture_provenance: true, provenance_mode: 'full', capture_artifacts: true },
  },
  { name: 'legacy__no_such_tool' },
  { name: 'legacy__crash' },
  { name: 'legacy__echo', arguments: { text: 'after the restart' } },
];

interface Run {
  results: unknown[];
  log: StableCallLogEntry[];
  /** The ledger's entries without created_at (the time of filing). */
  ledger: object[];
}

function ledgerEntries(file: string): object[] {
  const ledger = Ledger.open(file);
  try {
    return ledger.list().map(({ created_at: _filedAt, ...entry }) => entry);
  } finally {
    ledger.close();
  }
}

async function script(client: Client): Promise<unknown[]> {
  const results: unknown[] = [];
  // Sequential on purpose: deterministic ids follow the order of calls.
  for (const call of SCRIPT) {
    // A protocol error (the unknown tool) is part of the behaviour to compare, not a failure of the run.
    results.push(
      await client.callTool({ arguments: {}, ...call }).catch((error: unknown) => ({
        thrown: error instanceof Error ? error.message : String(error),
      })),
    );
  }
  return results;
}

/** The call log's lines, read after the gateway closed it. */
function stableLog(logs: string): StableCallLogEntry[] {
  return readLatestCallLogs(join(logs, 'gateway')).map(stripVolatile);
}

async function overStdio(): Promise<Run> {
  const paths = gatewayDir();
  const client = new Client({ name: 'parity-stdio', version: '1.0.0' });
  const transport = gatewayStdio(paths.config, {
    args: ['--stdio', '--no-http', '--deterministic-ids', SEED],
  });
  await client.connect(transport);
  try {
    const results = await script(client);
    // Closing stdin ends the gateway, which flushes and closes its log; close() waits for the
    // process to end, and gives up on it (killing it) only after seconds.
    const pid = transport.pid;
    await client.close();
    expect(pid !== null && isRunning(pid), 'the gateway is still running after close()').toBe(false);
    return { results, log: stableLog(paths.logs), ledger: ledgerEntries(paths.ledger) };
  } finally {
    await client.close();
  }
}

/** Whether a process with this id exists (signal 0 only checks). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function overHttp(): Promise<Run> {
  const paths = gatewayDir();
  let gateway: Running | undefined;
  const client = new Client({ name: 'parity-http', version: '1.0.0' });
  try {
    gateway = await startGatewayHttp(['--config', paths.config, '--no-stdio', '--deterministic-ids', SEED]);
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const results = await script(client);
    await client.close();
    // SIGTERM closes the gateway, which flushes its log.
    await gateway.stop();
    return { results, log: stableLog(paths.logs), ledger: ledgerEntries(paths.ledger) };
  } finally {
    await client.close();
    await gateway?.stop();
  }
}

/** Compares two lists of objects field by field, naming the first line and field that differ. */
function fieldDiffs(actual: readonly object[], expected: readonly object[], what: string): string[] {
  const diffs: string[] = [];
  if (actual.length !== expected.length)
    diffs.push(`${what}: ${actual.length} lines, expected ${expected.length}`);
  for (let line = 0; line < Math.min(actual.length, expected.length); line++) {
    const a = actual[line] as Record<string, unknown>;
    const e = expected[line] as Record<string, unknown>;
    for (const field of new Set([...Object.keys(a), ...Object.keys(e)])) {
      const left = JSON.stringify(a[field]);
      const right = JSON.stringify(e[field]);
      if (left !== right) {
        diffs.push(
          `${what} line ${line + 1} (${SCRIPT[line]?.name}) field ${field}: ${left} != expected ${right}`,
        );
      }
    }
  }
  return diffs;
}

describe('transport parity: the same calls over stdio and HTTP', () => {
  let stdio: Run;
  let http: Run;

  beforeAll(async () => {
    [stdio, http] = await Promise.all([overStdio(), overHttp()]);
  }, 60_000);

  afterAll(removeGatewayDirs);

  it('ran every scripted call and logged one line each', () => {
    expect(stdio.results).toHaveLength(SCRIPT.length);
    expect(stdio.log).toHaveLength(SCRIPT.length);
    expect(http.log).toHaveLength(SCRIPT.length);
  });

  it('gives identical envelopes, structured and as text', () => {
    for (let index = 0; index < SCRIPT.length; index++) {
      expect(JSON.stringify(http.results[index]), `call ${index + 1} (${SCRIPT[index]?.name})`).toBe(
        JSON.stringify(stdio.results[index]),
      );
    }
  });

  it('gives identical call-log lines once volatile fields are stripped', () => {
    expect(fieldDiffs(http.log, stdio.log, 'http vs stdio')).toEqual([]);
  });

  it('files the same provenance records in the ledger', () => {
    expect(stdio.ledger.length).toBe(SCRIPT.filter((call) => call._meta?.capture_provenance).length);
    expect(JSON.stringify(http.ledger)).toBe(JSON.stringify(stdio.ledger));
  });

  it('matches the golden call log (UPDATE_GOLDEN=1 regenerates it)', () => {
    const lines = stdio.log.map((entry) => JSON.stringify(entry));
    if (process.env.UPDATE_GOLDEN === '1') {
      mkdirSync(dirname(GOLDEN), { recursive: true });
      writeFileSync(GOLDEN, `${lines.join('\n')}\n`);
    }
    expect(existsSync(GOLDEN), `${GOLDEN} is missing: run with UPDATE_GOLDEN=1`).toBe(true);
    const golden = readFileSync(GOLDEN, 'utf8')
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as object);
    expect(fieldDiffs(stdio.log, golden, 'golden')).toEqual([]);
  });
});
