import { performance } from 'node:perf_hooks';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { createIdSource } from '../src/ids/index.ts';
import { createPipeline, type Pipeline, type ToolCall } from '../src/mcp/index.ts';
import { RateLimiter, type RateLimitRule } from '../src/ratelimit/index.ts';
import { quantile } from './support.ts';

/**
 * The rate limiter per call, and what it adds to the pipeline.
 *
 * 1. The in-process limiter (GCRA, MemoryRateCounters) against
 *    rate-limiter-flexible's RateLimiterMemory, the peer, measured in the same
 *    run on the same workload: 10,000 principals calling 3 tools, each call
 *    checked against 3 rules (a bucket per principal, one per principal and
 *    tool, one global). Each call is timed on its own; p50 and p99 per call,
 *    best of the interleaved rounds. The peer's API is a promise per bucket,
 *    so its calls are awaited; ours answer synchronously and are not.
 * 2. The pipeline with and without a limiter (legacy tool, 1 KB JSON result),
 *    prov-v0.1 and hosted-v2, interleaved batches, best of 7: the microseconds
 *    the limiter adds per call (target: under 20 µs at p50).
 */

const PRINCIPALS = 10_000;
const TOOLS = ['search', 'fill', 'list'];
const CALLS = 200_000;
const ROUNDS = 5;

const rules: RateLimitRule[] = [
  { bucket: 'caller', limit: 100, windowMs: 1000 },
  { bucket: 'caller-search', limit: 50, windowMs: 1000, tool: 'search' },
  { bucket: 'everyone', limit: 1_000_000, windowMs: 1000, per: 'global' },
];

const principals = Array.from({ length: PRINCIPALS }, (_, index) => `token:${index.toString(16)}`);

/** The subject of call `i`: principals and tools in a fixed interleaving. */
function subject(i: number): { principal: string; tool: string } {
  return {
    principal: principals[(i * 7919) % PRINCIPALS] as string,
    tool: TOOLS[i % TOOLS.length] as string,
  };
}

function ours(): (i: number) => unknown {
  const limiter = new RateLimiter(rules);
  return (i) => limiter.check(subject(i));
}

/** The same three rules with the peer: one RateLimiterMemory per rule, the applying ones consumed together. */
function peer(): (i: number) => Promise<unknown> {
  const caller = new RateLimiterMemory({ points: 100, duration: 1 });
  const perTool = new RateLimiterMemory({ points: 50, duration: 1 });
  const everyone = new RateLimiterMemory({ points: 1_000_000, duration: 1 });
  const settle = (promise: Promise<unknown>) => promise.catch((denied: unknown) => denied);
  return (i) => {
    const { principal, tool } = subject(i);
    const checks = [settle(caller.consume(principal)), settle(everyone.consume('all'))];
    if (tool === 'search') checks.push(settle(perTool.consume(`${principal}:${tool}`)));
    return Promise.all(checks);
  };
}

interface Latency {
  p50: number;
  p99: number;
}

/** Per-call latency in µs: each call timed on its own. */
async function latencies(run: (i: number) => unknown, awaited: boolean): Promise<Latency> {
  const times = new Float64Array(CALLS);
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    const result = run(i);
    if (awaited) await result;
    times[i] = (performance.now() - started) * 1000;
  }
  const sorted = Array.from(times).sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}

const best = (list: Latency[], key: keyof Latency) => Math.min(...list.map((latency) => latency[key]));
const us = (value: number) => `${value.toFixed(2)} µs`;

console.log(
  `limiter: ${PRINCIPALS.toLocaleString('en')} principals, ${TOOLS.length} tools, ${rules.length} rules; ` +
    `${CALLS.toLocaleString('en')} calls per round, best of ${ROUNDS}`,
);
const mine: Latency[] = [];
const theirs: Latency[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // A fresh limiter each round, so every round starts from empty buckets.
  mine.push(await latencies(ours(), false));
  theirs.push(await latencies(peer(), true));
}
for (const key of ['p50', 'p99'] as const) {
  const a = best(mine, key);
  const b = best(theirs, key);
  console.log(
    `${key}: RateLimiter (GCRA) ${us(a)}, rate-limiter-flexible RateLimiterMemory ${us(b)}, the peer takes ${(b / a).toFixed(2)}x as long`,
  );
}

// ---------------------------------------------------------------------------
// The pipeline with and without a limiter

const RUNS = 7;
const BATCH = 2000;
const items = Array.from({ length: 26 }, (_, index) => ({
  id: index,
  name: `item-${index}`,
  score: index * 1.5,
}));
const text = JSON.stringify({ items, total: items.length });
const tool = { name: 'search', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } };
const args = { query: 'envelopes' };
const invoke: ToolCall['invoke'] = async () => ({ content: [{ type: 'text', text }] });

function pipelineCase(dialect: 'prov-v0.1' | 'hosted-v2', limited: boolean): () => Promise<unknown> {
  const limiter = new RateLimiter([{ bucket: 'caller', limit: 1_000_000, windowMs: 1000 }]);
  const pipeline: Pipeline = createPipeline({
    dialect,
    ids: createIdSource('bench'),
    ...(limited
      ? { rateLimit: (call) => limiter.check({ principal: call.principal, tool: call.tool.name }) }
      : {}),
  });
  let i = 0;
  return () => pipeline.callTool({ tool, arguments: args, invoke, principal: principals[i++ % PRINCIPALS] });
}

/** Mean µs per call of each case, batches interleaved, best batch of RUNS. */
async function perCall(cases: readonly (() => Promise<unknown>)[]): Promise<number[]> {
  for (const run of cases) for (let i = 0; i < BATCH; i++) await run();
  const samples = cases.map(() => [] as number[]);
  for (let r = 0; r < RUNS; r++) {
    for (const [index, run] of cases.entries()) {
      const started = performance.now();
      for (let i = 0; i < BATCH; i++) await run();
      samples[index]?.push(((performance.now() - started) * 1000) / BATCH);
    }
  }
  return samples.map((list) => Math.min(...list));
}

/** Per-call latency in µs of each case, calls interleaved, p50 of all. */
async function medians(cases: readonly (() => Promise<unknown>)[]): Promise<number[]> {
  const times = cases.map(() => [] as number[]);
  for (let i = 0; i < BATCH * RUNS; i++) {
    for (const [index, run] of cases.entries()) {
      const started = performance.now();
      await run();
      times[index]?.push((performance.now() - started) * 1000);
    }
  }
  return times.map((list) =>
    quantile(
      list.sort((a, b) => a - b),
      0.5,
    ),
  );
}

console.log(
  `\npipeline: legacy tool, ${Buffer.byteLength(text)} bytes of JSON; ${BATCH} calls per batch, best of ${RUNS}`,
);
for (const dialect of ['prov-v0.1', 'hosted-v2'] as const) {
  const cases = [pipelineCase(dialect, false), pipelineCase(dialect, true)];
  const [without, withLimiter] = (await perCall(cases)) as [number, number];
  const [p50Without, p50With] = (await medians(cases)) as [number, number];
  console.log(
    `${dialect}: without limiter ${us(without)}/call, with ${us(withLimiter)}/call (mean, best batch): ` +
      `${us(withLimiter - without)} added; p50 ${us(p50Without)} → ${us(p50With)}: ${us(p50With - p50Without)} added`,
  );
}
