import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';

import {
  PROCESS_RESULT_BUDGET_BYTES,
  processResultBudget,
  ResultBudget,
  SET_RESULT_BUDGET_BYTES,
  serializedSizeOf,
  setResultBudget,
} from '../../../src/gateway/upstreams/result-budget.ts';
import { deliveredBy } from '../../support/child-script.ts';

function refusal(run: () => unknown): EnvelopeError {
  try {
    run();
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('ResultBudget', () => {
  it('holds bytes in the set and the process, and lets them go once', () => {
    const process = new ResultBudget(100, 'process');
    const set = new ResultBudget(60, 'upstream set', process);
    const held = set.reserve(40);
    expect([set.inFlightBytes, process.inFlightBytes]).toEqual([40, 40]);
    held.release();
    held.release();
    expect([set.inFlightBytes, process.inFlightBytes]).toEqual([0, 0]);
    expect(held.bytes).toBe(0);
  });

  it('refuses what does not fit the set with RESOURCE_EXHAUSTED naming the limit and what was in flight', () => {
    const set = new ResultBudget(60, 'upstream set', new ResultBudget(100, 'process'));
    set.reserve(50);
    const error = refusal(() => set.reserve(11));
    expect(error.code).toBe('RESOURCE_EXHAUSTED');
    expect(error.retriable).toBe(true);
    expect(error.details).toEqual({
      limit: 'upstream set result bytes',
      limit_bytes: 60,
      in_flight_bytes: 50,
      requested_bytes: 11,
    });
    // Nothing was taken by the refusal.
    expect(set.inFlightBytes).toBe(50);
    expect(set.reserve(10).bytes).toBe(10);
  });

  it('refuses what does not fit the process although each set has room, taking from neither', () => {
    const process = new ResultBudget(100, 'process');
    const a = new ResultBudget(60, 'upstream set', process);
    const b = new ResultBudget(60, 'upstream set', process);
    a.reserve(60);
    const error = refusal(() => b.reserve(41));
    expect(error.details).toMatchObject({
      limit: 'process result bytes',
      limit_bytes: 100,
      in_flight_bytes: 60,
    });
    expect([b.inFlightBytes, process.inFlightBytes]).toEqual([0, 60]);
  });

  it('refuses a single answer larger than the set at once', () => {
    const set = new ResultBudget(60, 'upstream set', new ResultBudget(100, 'process'));
    expect(refusal(() => set.reserve(61)).details).toMatchObject({ limit_bytes: 60, in_flight_bytes: 0 });
  });

  it('grows and shrinks a reservation, keeping what it held when growing does not fit', () => {
    const set = new ResultBudget(60, 'upstream set', new ResultBudget(100, 'process'));
    const held = set.reserve(10);
    held.resize(50);
    expect(set.inFlightBytes).toBe(50);
    expect(refusal(() => held.resize(61)).code).toBe('RESOURCE_EXHAUSTED');
    expect([held.bytes, set.inFlightBytes]).toEqual([50, 50]);
    held.resize(5);
    expect(set.inFlightBytes).toBe(5);
    held.release();
    expect(set.inFlightBytes).toBe(0);
  });

  it('has one process budget per process, of the documented sizes', () => {
    expect(processResultBudget()).toBe(processResultBudget());
    expect(processResultBudget().limitBytes).toBe(PROCESS_RESULT_BUDGET_BYTES);
    const set = setResultBudget();
    expect([set.limitBytes, set.parent]).toEqual([SET_RESULT_BUDGET_BYTES, processResultBudget()]);
    expect([PROCESS_RESULT_BUDGET_BYTES, SET_RESULT_BUDGET_BYTES]).toEqual([
      192 * 1024 * 1024,
      96 * 1024 * 1024,
    ]);
  });

  it('estimates a parsed answer’s serialized size without serializing it', () => {
    const value = { content: [{ type: 'text', text: 'x'.repeat(1000) }], isError: false, n: 12, z: null };
    const exact = JSON.stringify(value).length;
    const estimate = serializedSizeOf(value);
    expect(estimate).toBeGreaterThanOrEqual(exact - 10);
    expect(estimate).toBeLessThanOrEqual(exact + 10);
    let deep: unknown = 'leaf';
    for (let depth = 0; depth < 100_000; depth++) deep = [deep];
    expect(serializedSizeOf(deep)).toBeGreaterThan(100_000);
  });
});

/** Runs a child that writes the given stdout lines (each in several writes) and exits; collects what the transport delivers. */
async function delivered(
  lines: string[],
  budget: ResultBudget,
): Promise<{ messages: JSONRPCMessage[]; stderr: string }> {
  const script = `
    const lines = ${JSON.stringify(lines)};
    let i = 0;
    const next = () => {
      if (i === lines.length) return;
      const line = lines[i++] + '\\n';
      const half = Math.floor(line.length / 2);
      process.stdout.write(line.slice(0, half));
      process.stdout.write(line.slice(half), next);
    };
    next();`;
  return deliveredBy(script, { budget });
}

const answer = (id: number, bytes: number) =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'x'.repeat(bytes) }] } });

describe('ChildProcessTransport holding answers against a budget', () => {
  it('passes answers within the budget whole, refuses a larger one by its id, and lets every byte go', async () => {
    const budget = new ResultBudget(50_000, 'upstream set', new ResultBudget(100_000, 'process'));
    const { messages, stderr } = await delivered(
      [answer(1, 40_000), answer(2, 60_000), answer(3, 10)],
      budget,
    );
    expect(messages).toHaveLength(3);
    expect(messages[0]).toEqual(JSON.parse(answer(1, 40_000)));
    expect(messages[1]).toMatchObject({
      jsonrpc: '2.0',
      id: 2,
      error: {
        data: {
          canonical_code: 'RESOURCE_EXHAUSTED',
          limit: 'upstream set result bytes',
          limit_bytes: 50_000,
        },
      },
    });
    expect(messages[2]).toEqual(JSON.parse(answer(3, 10)));
    expect(stderr).toContain('did not fit the result budget');
    // Released a turn of the event loop after delivery.
    await new Promise((resolve) => setImmediate(resolve));
    expect([budget.inFlightBytes, budget.parent?.inFlightBytes]).toEqual([0, 0]);
  });

  it('refuses an answer while another one is held, since together they do not fit', async () => {
    const budget = new ResultBudget(50_000, 'upstream set');
    const other = budget.reserve(30_000);
    const { messages } = await delivered([answer(7, 30_000)], budget);
    expect(messages[0]).toMatchObject({ id: 7, error: { data: { canonical_code: 'RESOURCE_EXHAUSTED' } } });
    // In flight: the other answer, and this one's bytes read so far.
    const data = (messages[0] as { error: { data: { in_flight_bytes: number } } }).error.data;
    expect(data.in_flight_bytes).toBeGreaterThanOrEqual(30_000);
    other.release();
  });
});
