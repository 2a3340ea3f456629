/**
 * Checks a call against every rule that applies to it: per principal or for
 * everyone, for all tools or one tool, for all upstreams or one. The answer is
 * the binding decision: a denial when any bucket denies (the longest wait of
 * them), else the admitting bucket with the fewest calls left; null when no
 * rule applies. Buckets that admitted a call another bucket denied get the
 * call back, so a throttled caller does not drain its other buckets.
 */
import { EnvelopeError } from '../errors/index.ts';
import { MemoryRateCounters, type RateCounters } from './counters.ts';
import { assertRateRule, type RateDecision, type RateRule } from './gcra.ts';

/** A bucket and the calls it counts. */
export interface RateLimitRule extends RateRule {
  /** `principal` (default): one bucket per caller; `global`: one bucket shared by all callers. */
  per?: 'principal' | 'global';
  /** Only calls to this upstream; default every one. */
  upstream?: string;
  /** Only calls of this tool (its own name, as its server lists it); default every one. */
  tool?: string;
}

/** Who makes a call and what it calls. */
export interface RateSubject {
  /** The caller (a bearer token's id, an address, `local`); callers without one share a bucket. */
  principal?: string;
  upstream?: string;
  tool?: string;
}

export interface RateLimiterOptions {
  /** Where buckets are kept; default a MemoryRateCounters. */
  counters?: RateCounters;
  /** The clock, in epoch milliseconds; default Date.now. */
  now?: () => number;
}

export type RateCheck = RateDecision | null | Promise<RateDecision | null>;

/** Separates a bucket's name from the principal in a counter key (neither holds a NUL). */
const KEY_SEPARATOR = '\u0000';

export class RateLimiter {
  readonly rules: readonly RateLimitRule[];
  readonly #counters: RateCounters;
  readonly #now: () => number;

  constructor(rules: readonly RateLimitRule[], options: RateLimiterOptions = {}) {
    const buckets = new Set<string>();
    for (const rule of rules) {
      assertRateRule(rule);
      if (buckets.has(rule.bucket)) {
        throw new EnvelopeError('USAGE_ERROR', `Rate bucket "${rule.bucket}" is named by two rules`, {
          bucket: rule.bucket,
        });
      }
      buckets.add(rule.bucket);
    }
    this.rules = rules.map((rule) => Object.freeze({ ...rule }));
    this.#counters = options.counters ?? new MemoryRateCounters();
    this.#now = options.now ?? Date.now;
  }

  /** The rules that apply to a call. */
  matching(subject: RateSubject): RateLimitRule[] {
    return this.rules.filter(
      (rule) =>
        (rule.upstream === undefined || rule.upstream === subject.upstream) &&
        (rule.tool === undefined || rule.tool === subject.tool),
    );
  }

  /**
   * Takes one call (or `cost`) from every bucket that applies; returns the
   * binding decision, or null when no rule applies. Synchronous with the
   * in-process counters; a promise only when the counters answer with one.
   */
  check(subject: RateSubject, cost = 1): RateCheck {
    const rules = this.matching(subject);
    if (rules.length === 0) return null;
    const now = this.#now();
    const keys = rules.map((rule) => keyOf(rule, subject));
    const taken = rules.map((rule, index) => this.#counters.take(keys[index] as string, rule, now, cost));
    if (taken.some((decision) => decision instanceof Promise)) {
      return Promise.all(taken).then((decisions) => this.#bind(rules, keys, decisions, now, cost));
    }
    return this.#bind(rules, keys, taken as RateDecision[], now, cost);
  }

  #bind(
    rules: readonly RateLimitRule[],
    keys: readonly string[],
    decisions: readonly RateDecision[],
    now: number,
    cost: number,
  ): RateDecision | Promise<RateDecision> {
    let binding = decisions[0] as RateDecision;
    let denied: RateDecision | undefined;
    for (const decision of decisions) {
      if (!decision.allowed) {
        if (!denied || decision.retryAfterMs > denied.retryAfterMs) denied = decision;
      } else if (decision.remaining < binding.remaining) {
        binding = decision;
      }
    }
    if (!denied) return binding;
    const refunds: Promise<void>[] = [];
    decisions.forEach((decision, index) => {
      if (!decision.allowed) return;
      const refund = this.#counters.refund(keys[index] as string, rules[index] as RateLimitRule, now, cost);
      if (refund instanceof Promise) refunds.push(refund);
    });
    const result = denied;
    return refunds.length === 0 ? result : Promise.all(refunds).then(() => result);
  }
}

function keyOf(rule: RateLimitRule, subject: RateSubject): string {
  return rule.per === 'global' ? rule.bucket : `${rule.bucket}${KEY_SEPARATOR}${subject.principal ?? ''}`;
}
