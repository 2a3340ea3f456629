import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { ResultBudget } from '../../src/gateway/upstreams/result-budget.ts';
import { Upstream } from '../../src/gateway/upstreams/upstream.ts';
import { FIXTURE, type Running, startListening } from './processes.ts';

/**
 * Large answers in flight at once are bounded for the whole gateway process
 * and per upstream set (per principal over HTTP): what does not fit is
 * answered with RESOURCE_EXHAUSTED, what fits arrives whole, the process
 * keeps serving, and its memory stays within a bound.
 */

const GATEWAY = fileURLToPath(new URL('../fixtures/servers/budget-gateway.ts', import.meta.url));
const MIB = 1024 * 1024;
const ANSWER_BYTES = 24 * MIB;
const PRINCIPALS = 12;

let gateway: Running | undefined;
const clients: Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => {})));
  await gateway?.stop();
  gateway = undefined;
});

function start(processBytes: number, setBytes: number): Promise<Running> {
  return startListening([GATEWAY, String(processBytes), String(setBytes), String(PRINCIPALS)]);
}

async function connect(url: string, principal: number): Promise<Client> {
  const client = new Client({ name: 'budget-test', version: '1.0.0' });
  const headers = { authorization: `Bearer token-${principal}-0123456789abcdef` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

/** The process's peak resident memory so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((row) => row.startsWith('VmHWM:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1]) * 1024;
}

type Outcome = { whole: true } | { whole: false; code: unknown; data: Record<string, unknown> };

async function blob(client: Client, bytes: number): Promise<Outcome> {
  try {
    const result = await client.callTool({ name: 'blob', arguments: { bytes } }, { timeout: 120_000 });
    const text = (result.content as { text?: string }[])[0]?.text ?? '';
    // Whole: every byte the tool produced, nothing cut.
    expect(text.length).toBe(bytes);
    expect(/^x*$/.test(text)).toBe(true);
    return { whole: true };
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    const data = error.data as Record<string, unknown>;
    return { whole: false, code: data.canonical_code, data };
  }
}

describe('answers held at once by the gateway', () => {
  it('refuses what does not fit the process budget, answers the rest whole, and keeps serving within a memory bound', async () => {
    gateway = await start(48 * MIB, 48 * MIB);
    const pid = gateway.child.pid as number;
    const url = gateway.url;
    const sessions = await Promise.all(Array.from({ length: PRINCIPALS }, (_, index) => connect(url, index)));
    const outcomes = await Promise.all(sessions.map((client) => blob(client, ANSWER_BYTES)));
    const refused = outcomes.filter((outcome) => !outcome.whole);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThan(PRINCIPALS);
    for (const outcome of refused) {
      expect(outcome).toMatchObject({
        code: 'RESOURCE_EXHAUSTED',
        data: { limit: 'process result bytes', limit_bytes: 48 * MIB },
      });
      expect(outcome.data.in_flight_bytes).toEqual(expect.any(Number));
    }
    // Still serving: the refused ones succeed when asked again one at a time.
    for (const client of sessions.slice(0, 2))
      expect(await blob(client, ANSWER_BYTES)).toEqual({ whole: true });
    const peak = peakRss(pid);
    process.stderr.write(`gateway peak RSS with budgets: ${Math.round(peak / MIB)} MiB\n`);
    // Measured on Linux x64, Node 24: about 810 MiB without budgets, about 430 MiB with these.
    expect(peak).toBeLessThan(600 * MIB);
  });

  it('refuses one answer larger than its set’s budget, and serves that principal next', async () => {
    gateway = await start(512 * MIB, 16 * MIB);
    const client = await connect(gateway.url, 0);
    expect(await blob(client, 20 * MIB)).toMatchObject({
      whole: false,
      code: 'RESOURCE_EXHAUSTED',
      data: { limit: 'upstream set result bytes', limit_bytes: 16 * MIB },
    });
    expect(await blob(client, 8 * MIB)).toEqual({ whole: true });
  });

  it('holds an HTTP upstream’s answer by its size too: one larger than the budget is refused', async () => {
    gateway = await startListening([FIXTURE, '--http', '0']);
    const budget = new ResultBudget(1 * MIB, 'upstream set', new ResultBudget(512 * MIB, 'process'));
    const upstream = new Upstream(
      { name: 'remote', kind: 'http', url: gateway.url },
      { resultBudget: budget },
    );
    try {
      await upstream.connect();
      const call = (bytes: number) => upstream.request('tools/call', { name: 'blob', arguments: { bytes } });
      await expect(call(2 * MIB)).rejects.toMatchObject({
        code: 'RESOURCE_EXHAUSTED',
        details: { limit: 'upstream set result bytes', limit_bytes: MIB },
      });
      const whole = (await call(MIB / 2)) as { content: { text: string }[] };
      expect(whole.content[0]?.text.length).toBe(MIB / 2);
      await new Promise((resolve) => setImmediate(resolve));
      expect(budget.inFlightBytes).toBe(0);
    } finally {
      await upstream.close();
    }
  });
});
