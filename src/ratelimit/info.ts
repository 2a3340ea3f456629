import type { NormalizedError, RateLimitInfo } from '../envelope/model.ts';
import type { RateDecision } from './gcra.ts';

/** A decision as envelopes carry it (`limit`, `remaining`, `reset_at`, `bucket`); null: the placeholder with null members. */
export function rateLimitInfo(decision: RateDecision | null): RateLimitInfo {
  if (decision === null) return { limit: null, remaining: null, reset_at: null };
  return {
    limit: decision.limit,
    remaining: decision.remaining,
    reset_at: decision.reset_at,
    bucket: decision.bucket,
  };
}

/** A denial's wait as an HTTP `Retry-After` value: whole seconds, rounded up. */
export function retryAfterSeconds(decision: RateDecision): number {
  return Math.ceil(decision.retryAfterMs / 1000);
}

/** The error a denial is answered with, worded as the real hosted servers word it. */
export function rateLimitedError(decision: RateDecision): NormalizedError {
  return {
    code: 'RATE_LIMITED',
    message: `Rate limit exceeded for bucket "${decision.bucket}". Retry after ${decision.reset_at}.`,
    retriable: true,
  };
}
