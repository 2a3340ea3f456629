import { describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { MemoryRateCounters } from '../../../src/ratelimit/counters.ts';

const T0 = Date.parse('2026-11-24T09:00:00.000Z');
const rule = { bucket: 'mcp:fill', limit: 3, windowMs: 3000 };

describe('GCRA token bucket (MemoryRateCounters)', () => {
  it('admits a full burst of `limit` calls at once, then denies', () => {
    const counters = new MemoryRateCounters();
    const taken = [1, 2, 3, 4].map(() => counters.take('k', rule, T0));
    expect(taken.map((decision) => decision.allowed)).toEqual([true, true, true, false]);
    expect(taken.map((decision) => decision.remaining)).toEqual([2, 1, 0, 0]);
    expect(taken[0]).toMatchObject({ limit: 3, bucket: 'mcp:fill', retryAfterMs: 0 });
  });

  it('on success, reset_at is when the bucket is full again', () => {
    const counters = new MemoryRateCounters();
    expect(counters.take('k', rule, T0).reset_at).toBe('2026-11-24T09:00:01.000Z');
    expect(counters.take('k', rule, T0).reset_at).toBe('2026-11-24T09:00:02.000Z');
  });

  it('on a denial, reset_at is when the next call is admitted, and it is', () => {
    const counters = new MemoryRateCounters();
    for (let i = 0; i < 3; i++) counters.take('k', rule, T0);
    const denied = counters.take('k', rule, T0 + 250);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 750, reset_at: '2026-11-24T09:00:01.000Z' });
    expect(counters.take('k', rule, T0 + 999).allowed).toBe(false);
    const reset = Date.parse(denied.reset_at);
    expect(counters.take('k', rule, reset)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('refills evenly: one call per windowMs / limit, never more than the burst', () => {
    const counters = new MemoryRateCounters();
    for (let i = 0; i < 3; i++) counters.take('k', rule, T0);
    expect(counters.take('k', rule, T0 + 1000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(counters.take('k', rule, T0 + 1000).allowed).toBe(false);
    // Long idle: back to a full bucket, not more (no doubled burst at a window edge).
    const later = T0 + 60_000;
    const burst = [1, 2, 3, 4].map(() => counters.take('k', rule, later).allowed);
    expect(burst).toEqual([true, true, true, false]);
  });

  it('keeps keys apart', () => {
    const counters = new MemoryRateCounters();
    for (let i = 0; i < 3; i++) counters.take('a', rule, T0);
    expect(counters.take('a', rule, T0).allowed).toBe(false);
    expect(counters.take('b', rule, T0).allowed).toBe(true);
  });

  it('handles windows that are not a whole number of milliseconds per call', () => {
    const counters = new MemoryRateCounters();
    const odd = { bucket: 'odd', limit: 3, windowMs: 1000 };
    expect([1, 2, 3, 4].map(() => counters.take('k', odd, T0).allowed)).toEqual([true, true, true, false]);
    const denied = counters.take('k', odd, T0);
    expect(denied.retryAfterMs).toBe(334);
    expect(counters.take('k', odd, Date.parse(denied.reset_at)).allowed).toBe(true);
  });

  it('costs more than one call when asked, and refuses a cost the bucket can never hold', () => {
    const counters = new MemoryRateCounters();
    expect(counters.take('k', rule, T0, 2)).toMatchObject({ allowed: true, remaining: 1 });
    expect(counters.take('k', rule, T0, 2)).toMatchObject({ allowed: false, remaining: 1 });
    expect(() => counters.take('k', rule, T0, 4)).toThrow(EnvelopeError);
    expect(() => counters.take('k', rule, T0, 0)).toThrow(/cost/);
  });

  it('refunds calls: a key whose bucket is full again is dropped', () => {
    const counters = new MemoryRateCounters();
    counters.take('k', rule, T0);
    expect(counters.size).toBe(1);
    counters.refund('k', rule, T0);
    expect(counters.size).toBe(0);
  });
});

describe('MemoryRateCounters bounds', () => {
  it('never tracks more than maxKeys, and never forgets an exhausted bucket to make room', () => {
    const counters = new MemoryRateCounters({ maxKeys: 3 });
    // 'a' is exhausted; 'b' and 'c' have one call each taken, nearer to full.
    for (let i = 0; i < 3; i++) counters.take('a', rule, T0);
    expect(counters.take('a', rule, T0).allowed).toBe(false);
    counters.take('b', rule, T0);
    counters.take('c', rule, T0);
    // New principals keep coming: the map stays at its cap, and 'a' stays throttled.
    for (let i = 0; i < 100; i++) {
      counters.take(`fresh-${i}`, rule, T0);
      expect(counters.size).toBeLessThanOrEqual(3);
      expect(counters.take('a', rule, T0).allowed, `after ${i + 1} new keys`).toBe(false);
    }
  });

  it('drops keys whose bucket is full again as it meets them', () => {
    const counters = new MemoryRateCounters();
    for (let i = 0; i < 5000; i++) counters.take(`principal-${i}`, rule, T0);
    expect(counters.size).toBe(5000);
    // Long after every bucket refilled, new keys sweep the old ones away.
    for (let i = 0; i < 5000; i++) counters.take(`later-${i}`, rule, T0 + 10_000);
    expect(counters.size).toBeLessThan(5000 + 1024);
  });
});
