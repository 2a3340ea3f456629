/**
 * Where buckets are kept. The in-process store answers synchronously (no
 * promise on the hot path); the interface also admits a promise, so a store
 * shared between gateway processes can come next.
 */
import { assertCost, gcra, type RateDecision, type RateRule, refunded } from './gcra.ts';

export interface RateCounters {
  /** Takes `cost` calls from `key`'s bucket under `rule` at `now` (epoch ms), or says why not. */
  take(key: string, rule: RateRule, now: number, cost?: number): RateDecision | Promise<RateDecision>;
  /**
   * Gives back calls taken from `key`'s bucket: a call one bucket admitted and
   * another denied is not charged to the first.
   */
  refund(key: string, rule: RateRule, now: number, cost?: number): void | Promise<void>;
}

export interface MemoryRateCountersOptions {
  /** Most keys tracked at once; beyond it the buckets nearest to full go (default 100,000). */
  maxKeys?: number;
}

export const DEFAULT_MAX_KEYS = 100_000;
/** A full sweep of expired keys runs once the map has doubled since the last one, from this size. */
const MIN_SWEEP_SIZE = 1024;

/**
 * Buckets in a Map, one TAT per key, in the order keys were added. Bounded: a
 * key whose bucket is full again is the same as no key, so expired keys are
 * dropped as they are met (all of them whenever the map has doubled since the
 * last sweep); and at `maxKeys` the keys whose buckets are nearest to full are
 * evicted, so many principals cannot grow memory without bound, and an
 * exhausted bucket is the last to be forgotten (an evicted key starts again
 * from a full bucket).
 */
export class MemoryRateCounters implements RateCounters {
  readonly #tats = new Map<string, number>();
  readonly #maxKeys: number;
  #sweepAt = MIN_SWEEP_SIZE;

  constructor(options: MemoryRateCountersOptions = {}) {
    const max = options.maxKeys ?? DEFAULT_MAX_KEYS;
    this.#maxKeys = Number.isInteger(max) && max >= 1 ? max : DEFAULT_MAX_KEYS;
  }

  /** Keys tracked now. */
  get size(): number {
    return this.#tats.size;
  }

  take(key: string, rule: RateRule, now: number, cost = 1): RateDecision {
    assertCost(rule, cost);
    const tats = this.#tats;
    const tat = tats.get(key);
    const step = gcra(rule, tat, now, cost);
    if (step.decision.allowed) {
      // Updated in place: moving a key to the end (delete, then set) makes V8 rehash the
      // whole map every few calls once a hot key churns among many others.
      if (tat === undefined) this.#makeRoom(now);
      tats.set(key, step.tat);
    }
    return step.decision;
  }

  refund(key: string, rule: RateRule, now: number, cost = 1): void {
    const tat = this.#tats.get(key);
    if (tat === undefined) return;
    const back = refunded(rule, tat, now, cost);
    if (back === undefined) this.#tats.delete(key);
    else this.#tats.set(key, back);
  }

  /**
   * Before a new key: every expired key goes once the map has doubled since the
   * last sweep, and at the cap the oldest keys go, a hundredth of the cap at a
   * time. Both are amortized O(1) per key added; nothing walks the map per call
   * (a Map read from its front after deletions is slow in V8: the iterator steps
   * over every deleted slot).
   */
  #makeRoom(now: number): void {
    const tats = this.#tats;
    if (tats.size >= this.#sweepAt) {
      for (const [key, tat] of tats) if (tat <= now) tats.delete(key);
      this.#sweepAt = Math.max(MIN_SWEEP_SIZE, tats.size * 2);
    }
    if (tats.size < this.#maxKeys) return;
    let excess = tats.size - this.#maxKeys + Math.max(1, Math.floor(this.#maxKeys / 100));
    // The buckets nearest to full go first (the smallest TAT): an exhausted bucket, whose TAT
    // lies furthest ahead, is the last to be forgotten, so filling the map with fresh keys
    // cannot hand a throttled caller a full bucket again.
    const threshold = kthSmallest([...tats.values()], excess - 1);
    for (const [key, tat] of tats) {
      if (excess <= 0) break;
      if (tat <= threshold) {
        tats.delete(key);
        excess--;
      }
    }
  }
}

/** The k-th smallest of `values` (0-based), by quickselect: linear on average, `values` reordered. */
function kthSmallest(values: number[], k: number): number {
  let low = 0;
  let high = values.length - 1;
  const at = Math.min(Math.max(k, 0), high);
  while (low < high) {
    const pivot = values[(low + high) >> 1] as number;
    let i = low;
    let j = high;
    while (i <= j) {
      while ((values[i] as number) < pivot) i++;
      while ((values[j] as number) > pivot) j--;
      if (i <= j) {
        const swap = values[i] as number;
        values[i] = values[j] as number;
        values[j] = swap;
        i++;
        j--;
      }
    }
    if (at <= j) high = j;
    else if (at >= i) low = i;
    else break;
  }
  return values[at] as number;
}
