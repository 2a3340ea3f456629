/**
 * How a crashed stdio upstream is restarted, or a dropped remote one
 * reconnected: exponential backoff, capped, with a budget of attempts in a row.
 * The defaults are defined here once; the configuration and the proxy both use them.
 */

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

export const DEFAULT_RESTART_POLICY: Readonly<RestartPolicy> = Object.freeze({
  maxRestarts: 5,
  initialDelayMs: 100,
  maxDelayMs: 5000,
  factor: 2,
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
