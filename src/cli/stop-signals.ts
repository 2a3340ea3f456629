/** How a serving command (proxy, gateway) is stopped: the signals it obeys and its last resort. */

/**
 * The signals that stop the gateway. SIGHUP too: upstreams run in process
 * groups of their own, so a closing terminal's hangup reaches them only
 * through the gateway.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Resolves on the first stop signal; from then on the default action no longer ends the process before its upstreams. */
export function stopRequested(): { requested: Promise<void>; dispose(): void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  const stop = () => resolve();
  for (const signal of STOP_SIGNALS) process.on(signal, stop);
  return {
    requested: promise,
    dispose: () => {
      for (const signal of STOP_SIGNALS) process.off(signal, stop);
    },
  };
}

/** Ends the process shortly unless it ends by itself first: a handle an upstream left open must not keep it alive. */
export function exitSoon(): void {
  setTimeout(() => process.exit(), 1000).unref();
}
