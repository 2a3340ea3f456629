/**
 * How a crashed stdio upstream is restarted, or a dropped remote one
 * reconnected: exponential backoff, capped, with a budget of attempts in a row.
 * The defaults are the configuration schema's (upstreams[].restart), so the
 * configuration, the proxy and an Upstream built without options agree.
 */
import { CONFIG_DEFAULTS } from '../defaults.ts';

export interface RestartPolicy {
  /** Restarts allowed in a row before the upstream is declared down for good. */
  maxRestarts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  /** Each further restart waits this many times longer, up to maxDelayMs. */
  factor: number;
  /** An upstream that stayed up this long gets its restart budget back. */
  stableAfterMs: number;
}

const configured = CONFIG_DEFAULTS.upstream.restart;

export const DEFAULT_RESTART_POLICY: Readonly<RestartPolicy> = Object.freeze({
  maxRestarts: configured.maxAttempts,
  initialDelayMs: configured.initialDelayMs,
  maxDelayMs: configured.maxDelayMs,
  factor: configured.factor,
  // Not a setting: how long an upstream must stay up to earn its restart budget back.
  stableAfterMs: 30_000,
});

/** The delay before restart attempt `attempt` (1-based): `initialDelayMs × factor^(attempt−1)`, capped. */
export function restartDelayMs(
  policy: Pick<RestartPolicy, 'initialDelayMs' | 'maxDelayMs' | 'factor'>,
  attempt: number,
): number {
  const { initialDelayMs, maxDelayMs, factor } = policy;
  return Math.min(maxDelayMs, Math.round(initialDelayMs * factor ** Math.max(0, attempt - 1)));
}

/**
 * The restarts in a row an upstream that went down has used: those before it,
 * unless it stayed up long enough to earn its budget back.
 */
export function restartsInARow(
  policy: Pick<RestartPolicy, 'stableAfterMs'>,
  used: number,
  upForMs: number,
): number {
  return upForMs > policy.stableAfterMs ? 0 : used;
}

/**
 * The next restart after `used` restarts in a row: which attempt it is and how
 * long to wait for it, or undefined once the budget is spent.
 */
export function nextRestart(
  policy: RestartPolicy,
  used: number,
): { attempt: number; delayMs: number } | undefined {
  if (used >= policy.maxRestarts) return undefined;
  const attempt = used + 1;
  return { attempt, delayMs: restartDelayMs(policy, attempt) };
}
