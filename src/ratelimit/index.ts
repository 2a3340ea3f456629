/**
 * mcp-envelope/ratelimit: token buckets (GCRA) for tool calls, in process by
 * default and behind an interface a shared store can implement. The gateway's
 * `rateLimits` and the pipeline's `rateLimit` option use it.
 */
export {
  DEFAULT_MAX_KEYS,
  MemoryRateCounters,
  type MemoryRateCountersOptions,
  type RateCounters,
} from './counters.ts';
export type { RateDecision, RateRule } from './gcra.ts';
export { rateLimitInfo, retryAfterSeconds } from './info.ts';
export {
  type RateCheck,
  RateLimiter,
  type RateLimiterOptions,
  type RateLimitRule,
  type RateSubject,
} from './limiter.ts';
