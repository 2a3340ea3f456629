import { describe, expect, it } from 'vitest';
import type { ResultDialectId } from '../../../src/envelope/dialect.ts';
import { codecFor } from '../../../src/envelope/dialects/index.ts';
import { createIdSource } from '../../../src/ids/index.ts';
import { createPipeline, readToolResult, type ToolCall } from '../../../src/mcp/index.ts';
import { RATE_LIMIT_META_KEY } from '../../../src/mcp/pipeline/rate-limit.ts';
import { RateLimiter, type RateLimitRule } from '../../../src/ratelimit/index.ts';

/**
 * The pipeline's `rateLimit` option, in process: a denied call never runs the
 * tool and is answered RATE_LIMITED in the pipeline's dialect; every answer
 * carries the binding decision where the dialect has a place for it, else in
 * `_meta`. The clock is the test's.
 */

const T0 = Date.parse('2026-11-24T09:00:00.000Z');
const RESET = '2026-11-24T09:00:30.000Z';

function setup(dialect: ResultDialectId, rules: RateLimitRule[], payload: unknown = { n: 1 }) {
  let runs = 0;
  const limiter = new RateLimiter(rules, { now: () => T0 });
  const pipeline = createPipeline({
    dialect,
    ids: createIdSource('rate'),
    rateLimit: (call) => limiter.check({ principal: call.principal, tool: call.tool.name }),
  });
  const call = (
    principal = 'p',
  ): Promise<ReturnType<typeof pipeline.callTool> extends Promise<infer R> ? R : never> =>
    pipeline.callTool({
      tool: { name: 'search' },
      arguments: {},
      principal,
      invoke: async () => {
        runs++;
        return { content: [{ type: 'text', text: JSON.stringify(payload) }] };
      },
    } satisfies ToolCall);
  return { call, runs: () => runs };
}

const ONE = [{ bucket: 'b', limit: 1, windowMs: 30_000 }];
const META = { limit: 1, remaining: 0, reset_at: RESET, bucket: 'b' };

describe('the pipeline with a rate limit', () => {
  it('answers a denied call RATE_LIMITED without running the tool, per principal', async () => {
    const { call, runs } = setup('prov-v0.1', ONE);
    expect((await call()).isError).toBeUndefined();
    const denied = await call();
    expect(denied.isError).toBe(true);
    expect(runs()).toBe(1);
    const read = readToolResult(denied);
    expect(read.ok ? undefined : read.error).toMatchObject({ code: 'RATE_LIMITED', retriable: true });
    expect(read.meta?.rate_limit).toEqual(META);
    expect((await call('q')).isError).toBeUndefined();
    expect(runs()).toBe(2);
  });

  for (const dialect of ['hosted-v2', 'scalpel-v1', 'a11y-v0.1', 'prov-v0.1'] as const) {
    it(`a ${dialect} denial carries reset_at in the envelope itself`, async () => {
      const { call } = setup(dialect, ONE);
      await call();
      const denied = await call();
      expect(denied._meta?.[RATE_LIMIT_META_KEY]).toBeUndefined();
      const model = codecFor(dialect).decode(denied.structuredContent);
      expect(model.error?.code).toBe('RATE_LIMITED');
      expect(model.meta?.rate_limit).toEqual(META);
      expect(denied._meta?.['mcp-envelope/losses']).toBeUndefined();
    });
  }

  it('hosted-v2 successes carry the metadata at the top level, the payload untouched', async () => {
    const { call } = setup('hosted-v2', ONE, { n: 1, rate_limit: 'the tool’s own member' });
    const answer = await call();
    expect(answer.structuredContent).toMatchObject({
      ok: true,
      data: { n: 1, rate_limit: 'the tool’s own member' },
      rate_limit: META,
    });
  });

  it('hosted-v2 answers carry the null placeholder when no rule applies', async () => {
    const { call } = setup('hosted-v2', [{ bucket: 'other', limit: 1, windowMs: 1000, tool: 'fill' }]);
    const answer = await call();
    expect(answer.structuredContent).toMatchObject({
      rate_limit: { limit: null, remaining: null, reset_at: null },
    });
    expect(answer._meta?.[RATE_LIMIT_META_KEY]).toBeUndefined();
  });

  for (const dialect of ['prov-v0.1', 'scalpel-v1', 'a11y-v0.1', 'legacy'] as const) {
    it(`${dialect} successes, which have no place for it, carry it in _meta`, async () => {
      const { call } = setup(dialect, ONE);
      const answer = await call();
      expect(answer._meta?.[RATE_LIMIT_META_KEY]).toEqual(META);
      // Ours is no loss of the tool's.
      expect(answer._meta?.['mcp-envelope/losses']).toBeUndefined();
    });
  }

  it('a legacy denial is its message, the metadata in _meta', async () => {
    const { call } = setup('legacy', ONE);
    await call();
    const denied = await call();
    expect(denied.isError).toBe(true);
    expect(denied.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^RATE_LIMITED: /) });
    expect(denied._meta?.[RATE_LIMIT_META_KEY]).toEqual(META);
  });

  it('a tool’s own envelope of another dialect is converted with the metadata; its own rate_limit wins', async () => {
    const own = { limit: 9, remaining: 8, reset_at: RESET, bucket: 'upstream' };
    const hosted = {
      ok: true,
      tool: 'search',
      schema_version: '2026-05-06',
      data: { n: 1, rate_limit: own },
    };
    const { call } = setup('scalpel-v1', ONE, hosted);
    const answer = await call();
    // Code Scalpel has no place for rate metadata on a success: the tool's is a loss, ours goes to _meta.
    expect(answer._meta?.[RATE_LIMIT_META_KEY]).toEqual(META);
    const converted = setup('hosted-v2', ONE, { ...hosted, data: { n: 1 } });
    const answered = await converted.call();
    expect(answered.structuredContent).toMatchObject({ ok: true, data: { n: 1 } });
    // Same dialect: passed through untouched, ours in _meta.
    expect(answered._meta?.[RATE_LIMIT_META_KEY]).toEqual(META);
  });

  it('without the option nothing is added', async () => {
    const pipeline = createPipeline({ dialect: 'hosted-v2', ids: createIdSource('rate') });
    const answer = await pipeline.callTool({
      tool: { name: 'search' },
      invoke: async () => ({ content: [{ type: 'text', text: '{"n":1}' }] }),
    });
    expect(answer.structuredContent).not.toHaveProperty('rate_limit');
    expect(answer._meta?.[RATE_LIMIT_META_KEY]).toBeUndefined();
  });
});
