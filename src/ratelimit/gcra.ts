/**
 * Token buckets by GCRA (the generic cell rate algorithm): each key keeps one
 * number, its theoretical arrival time (TAT), the instant its bucket would be
 * full again. A bucket holds `limit` calls and refills evenly, one call every
 * `windowMs / limit`; a call is admitted when, after it, the bucket would not
 * be owed more than a whole window. One timestamp per key, O(1) per call, and
 * no doubled burst at window edges as a fixed window allows.
 *
 * `reset_at` means what a caller needs next:
 * - on a denial, the instant the call will be admitted (its `retryAfterMs` from
 *   now): a client that waits until then and retries gets in;
 * - on an admitted call, the instant the bucket is full again, like the reset
 *   of the IETF RateLimit header fields.
 * Both are rounded up to the millisecond, so waiting until `reset_at` is never
 * too early.
 */
import { EnvelopeError } from '../errors/index.ts';

/** A bucket: `limit` calls at once, refilled evenly over `windowMs`. */
export interface RateRule {
  /** The bucket's name, as answers report it (`mcp:fill`, say). */
  bucket: string;
  /** Burst capacity: calls admitted at once from a full bucket (an integer ≥ 1). */
  limit: number;
  /** Time to refill the whole bucket, in milliseconds (> 0). */
  windowMs: number;
}

/** What a bucket said about one call. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  /** Calls still admitted at once after this one; on a denial, those the bucket holds now (fewer than the cost). */
  remaining: number;
  /** ISO 8601: when a denied call will be admitted; for an admitted one, when the bucket is full again. */
  reset_at: string;
  bucket: string;
  /** How long a denied call must wait before it is admitted; 0 for an admitted one. */
  retryAfterMs: number;
}

/** Throws USAGE_ERROR unless the rule is one a bucket can keep. */
export function assertRateRule(rule: RateRule): void {
  const problem =
    typeof rule.bucket !== 'string' || rule.bucket.length === 0
      ? 'a bucket name'
      : !Number.isInteger(rule.limit) || rule.limit < 1
        ? 'an integer limit of at least 1'
        : !Number.isFinite(rule.windowMs) || rule.windowMs <= 0
          ? 'a positive, finite windowMs'
          : undefined;
  if (problem) {
    throw new EnvelopeError('USAGE_ERROR', `A rate rule needs ${problem}`, {
      bucket: typeof rule.bucket === 'string' ? rule.bucket : null,
    });
  }
}

/** Checks a call's cost: a whole number of calls, never more than the bucket holds. */
export function assertCost(rule: RateRule, cost: number): void {
  if (!Number.isInteger(cost) || cost < 1 || cost > rule.limit) {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `A call's cost must be an integer from 1 to the bucket's limit (${rule.limit})`,
      { bucket: rule.bucket, cost: Number.isFinite(cost) ? cost : String(cost) },
    );
  }
}

/** The last second formatted, `YYYY-MM-DDTHH:MM:SS.`: calls close together share it (Date formatting costs). */
let cachedSecond = Number.NaN;
let cachedPrefix = '';

/** Milliseconds as an ISO 8601 instant, rounded up so that waiting until it is never early. */
export function instant(ms: number): string {
  const whole = Math.ceil(ms);
  const second = Math.floor(whole / 1000);
  if (second !== cachedSecond) {
    const iso = new Date(second * 1000).toISOString();
    // Years outside 0000-9999 are written with a sign and six digits: not cached.
    if (iso.length !== 24) return new Date(whole).toISOString();
    cachedSecond = second;
    cachedPrefix = iso.slice(0, 20);
  }
  const millis = whole - second * 1000;
  return `${cachedPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

/** Tolerance for floating-point sums of intervals that are not whole milliseconds. */
const EPSILON = 1e-6;

/** The outcome of one GCRA step: the decision and the key's new TAT (unchanged on a denial). */
export interface GcraStep {
  decision: RateDecision;
  tat: number;
}

/**
 * One call against a bucket whose TAT is `tat` (undefined: a full bucket), at
 * `now` (epoch milliseconds). Pure: the caller stores the new TAT.
 */
export function gcra(rule: RateRule, tat: number | undefined, now: number, cost = 1): GcraStep {
  const interval = rule.windowMs / rule.limit;
  const start = tat === undefined || tat < now ? now : tat;
  const next = start + cost * interval;
  const owed = next - now;
  if (owed <= rule.windowMs + EPSILON) {
    const remaining = Math.max(0, Math.floor((rule.windowMs - owed) / interval + EPSILON));
    return {
      tat: next,
      decision: {
        allowed: true,
        limit: rule.limit,
        remaining,
        reset_at: instant(next),
        bucket: rule.bucket,
        retryAfterMs: 0,
      },
    };
  }
  const retryAfterMs = Math.ceil(owed - rule.windowMs - EPSILON);
  const remaining = Math.max(0, Math.floor((rule.windowMs - (start - now)) / interval + EPSILON));
  return {
    tat: start,
    decision: {
      allowed: false,
      limit: rule.limit,
      remaining,
      reset_at: instant(now + retryAfterMs),
      bucket: rule.bucket,
      retryAfterMs,
    },
  };
}

/** A TAT after a refund of `cost` calls (a call admitted by one bucket and denied by another). */
export function refunded(rule: RateRule, tat: number, now: number, cost = 1): number | undefined {
  const back = tat - cost * (rule.windowMs / rule.limit);
  return back <= now ? undefined : back;
}
