import type { UpstreamStatusBoard } from '../operations/upstream-status.ts';
import { advertisedCapabilities, announceRecovery, rememberCapabilities } from '../upstreams/availability.ts';
import { type ConfiguredUpstream, Upstream, type UpstreamOptions } from '../upstreams/upstream.ts';
import { Relay, type RelayOptions } from './relay.ts';

export interface GatewayOptions extends RelayOptions {
  upstreams: readonly ConfiguredUpstream[];
  upstream?: UpstreamOptions;
  /** Where messages about upstreams go: one down when a session opens, one back (never stdout). */
  report?: (message: string) => void;
  /** Where each upstream's state is kept for the operator (banner, info page, /healthz). */
  status?: UpstreamStatusBoard;
}

/** One downstream session: its own upstream connections and the relay between them. */
export interface ClientSession {
  relay: Relay;
  upstreams: readonly Upstream[];
  close(): Promise<void>;
}

/**
 * Connects every configured upstream. It succeeds as long as one started: the
 * others retry in the background and are served once they are back
 * (availability.ts); each one down is reported. When none started, it fails.
 */
export async function connectUpstreams(options: GatewayOptions): Promise<Upstream[]> {
  const upstreams = options.upstreams.map(
    ({ options: own, ...spec }) => new Upstream(spec, { ...options.upstream, ...own }),
  );
  const started = await Promise.allSettled(upstreams.map((upstream) => upstream.connect()));
  for (const upstream of upstreams) options.status?.observe(upstream);
  const failures = started.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
  if (failures.length === upstreams.length) {
    await Promise.all(upstreams.map((upstream) => upstream.close()));
    throw failures[0];
  }
  for (const upstream of upstreams) rememberCapabilities(options, upstream);
  return upstreams;
}

/**
 * Reports each upstream that is down, and calls `announce` with each one that
 * comes back (after remembering what it now offers).
 */
export function watchRecoveries(
  options: GatewayOptions,
  upstreams: readonly Upstream[],
  announce: (upstream: Upstream) => void,
): void {
  for (const upstream of upstreams) {
    let reported = false;
    if (!upstream.available) {
      reported = true;
      options.report?.(`${describeDown(upstream)}; serving without it and retrying in the background`);
    }
    upstream.onGaveUp((restarts) => {
      options.status?.observe(upstream, true);
      options.report?.(
        `upstream ${upstream.name} gave up after ${restarts} restart attempts; ` +
          'calls to it fail until the gateway is restarted',
      );
    });
    upstream.onRecovered(() => {
      options.status?.observe(upstream);
      if (reported) options.report?.(`upstream ${upstream.name} is back`);
      reported = false;
      rememberCapabilities(options, upstream);
      announce(upstream);
    });
  }
}

/**
 * Connects the upstreams, then builds the relay whose capabilities mirror theirs.
 * Each session owns its upstreams, so server-to-client requests, subscriptions
 * and log levels never cross between downstream clients.
 */
export async function openClientSession(options: GatewayOptions): Promise<ClientSession> {
  const upstreams = await connectUpstreams(options);
  const capabilities = advertisedCapabilities(options, upstreams);
  const relay = new Relay(upstreams, { ...options, capabilities });
  watchRecoveries(options, upstreams, (upstream) => {
    void announceRecovery(relay.server, capabilities, upstream);
  });
  let closed: Promise<void> | undefined;
  return {
    relay,
    upstreams,
    close() {
      closed ??= (async () => {
        await relay.close();
        await Promise.all(upstreams.map((upstream) => upstream.close()));
      })();
      return closed;
    },
  };
}

/** Why an upstream is down, on one line: the failure and the last line its process wrote on stderr. */
function describeDown(upstream: Upstream): string {
  const failure = upstream.failure;
  const stderr = typeof failure?.details?.stderr === 'string' ? failure.details.stderr : '';
  const last = stderr.trim().split('\n').at(-1)?.trim();
  return `${failure?.message ?? `upstream ${upstream.name} is down`}${last ? ` (stderr: ${last})` : ''}`;
}
