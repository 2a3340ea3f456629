import { describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import {
  MemoryRateCounters,
  type RateCounters,
  type RateDecision,
  RateLimiter,
  rateLimitInfo,
  retryAfterSeconds,
} from '../../../src/ratelimit/index.ts';

const T0 = Date.parse('2026-11-24T09:00:00.000Z');

function clock(start = T0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

function decided(check: ReturnType<RateLimiter['check']>): RateDecision | null {
  if (check instanceof Promise) throw new Error('expected a synchronous decision');
  return check;
}

describe('RateLimiter', () => {
  it('returns null when no rule applies, and matches by upstream and tool', () => {
    const time = clock();
    const limiter = new RateLimiter(
      [
        { bucket: 'fill', limit: 1, windowMs: 1000, tool: 'fill_template' },
        { bucket: 'docs', limit: 5, windowMs: 1000, upstream: 'docs' },
      ],
      { now: time.now },
    );
    expect(limiter.check({ principal: 'p', upstream: 'other', tool: 'list' })).toBeNull();
    expect(decided(limiter.check({ principal: 'p', upstream: 'other', tool: 'fill_template' }))?.bucket).toBe(
      'fill',
    );
    expect(decided(limiter.check({ principal: 'p', upstream: 'docs', tool: 'list' }))?.bucket).toBe('docs');
  });

  it('keeps per-principal buckets apart and a global bucket shared', () => {
    const time = clock();
    const limiter = new RateLimiter(
      [
        { bucket: 'mine', limit: 1, windowMs: 1000 },
        { bucket: 'everyone', limit: 3, windowMs: 1000, per: 'global' },
      ],
      { now: time.now },
    );
    expect(decided(limiter.check({ principal: 'a' }))?.allowed).toBe(true);
    expect(decided(limiter.check({ principal: 'a' }))).toMatchObject({ allowed: false, bucket: 'mine' });
    expect(decided(limiter.check({ principal: 'b' }))?.allowed).toBe(true);
    expect(decided(limiter.check({ principal: 'c' }))?.allowed).toBe(true);
    // The shared bucket is empty now (a, b, c), though d's own is full.
    expect(decided(limiter.check({ principal: 'd' }))).toMatchObject({ allowed: false, bucket: 'everyone' });
  });

  it('binds to the bucket with the fewest calls left, and to the longest wait when denied', () => {
    const time = clock();
    const limiter = new RateLimiter(
      [
        { bucket: 'wide', limit: 10, windowMs: 10_000 },
        { bucket: 'narrow', limit: 2, windowMs: 10_000 },
      ],
      { now: time.now },
    );
    expect(decided(limiter.check({}))).toMatchObject({ bucket: 'narrow', remaining: 1 });
    expect(decided(limiter.check({}))).toMatchObject({ bucket: 'narrow', remaining: 0 });
    expect(decided(limiter.check({}))).toMatchObject({
      allowed: false,
      bucket: 'narrow',
      retryAfterMs: 5000,
    });
  });

  it('gives back what other buckets took for a denied call', () => {
    const time = clock();
    const limiter = new RateLimiter(
      [
        { bucket: 'wide', limit: 3, windowMs: 3000 },
        { bucket: 'narrow', limit: 1, windowMs: 60_000, tool: 'slow' },
      ],
      { now: time.now },
    );
    expect(decided(limiter.check({ tool: 'slow' }))?.allowed).toBe(true);
    for (let i = 0; i < 5; i++) expect(decided(limiter.check({ tool: 'slow' }))?.bucket).toBe('narrow');
    // Five denials later, the wide bucket still has the two calls the first left.
    expect(decided(limiter.check({ tool: 'fast' }))).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('waits for an asynchronous store when the counters answer with promises', async () => {
    const memory = new MemoryRateCounters();
    const shared: RateCounters = {
      take: async (key, rule, now, cost) => memory.take(key, rule, now, cost),
      refund: async (key, rule, now, cost) => memory.refund(key, rule, now, cost),
    };
    const limiter = new RateLimiter([{ bucket: 'b', limit: 1, windowMs: 1000 }], {
      counters: shared,
      now: () => T0,
    });
    const first = limiter.check({ principal: 'p' });
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toMatchObject({ allowed: true });
    expect(await limiter.check({ principal: 'p' })).toMatchObject({ allowed: false });
  });

  it('refuses rules it cannot keep', () => {
    expect(() => new RateLimiter([{ bucket: '', limit: 1, windowMs: 1 }])).toThrow(EnvelopeError);
    expect(() => new RateLimiter([{ bucket: 'b', limit: 0, windowMs: 1 }])).toThrow(/limit/);
    expect(() => new RateLimiter([{ bucket: 'b', limit: 1.5, windowMs: 1 }])).toThrow(/limit/);
    expect(() => new RateLimiter([{ bucket: 'b', limit: 1, windowMs: 0 }])).toThrow(/windowMs/);
    expect(
      () =>
        new RateLimiter([
          { bucket: 'b', limit: 1, windowMs: 1 },
          { bucket: 'b', limit: 2, windowMs: 1 },
        ]),
    ).toThrow(/two rules/);
  });

  it('states a decision as envelopes carry it, and as Retry-After seconds', () => {
    const limiter = new RateLimiter([{ bucket: 'b', limit: 1, windowMs: 1500 }], { now: () => T0 });
    limiter.check({});
    const denied = decided(limiter.check({})) as RateDecision;
    expect(rateLimitInfo(denied)).toEqual({
      limit: 1,
      remaining: 0,
      reset_at: '2026-11-24T09:00:01.500Z',
      bucket: 'b',
    });
    expect(retryAfterSeconds(denied)).toBe(2);
    expect(rateLimitInfo(null)).toEqual({ limit: null, remaining: null, reset_at: null });
  });
});
