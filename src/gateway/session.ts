import { Relay, type RelayOptions } from './relay.ts';
import { type ConfiguredUpstream, Upstream, type UpstreamOptions } from './upstream.ts';

export interface GatewayOptions extends RelayOptions {
  upstreams: readonly ConfiguredUpstream[];
  upstream?: UpstreamOptions;
}

/** One downstream session: its own upstream connections and the relay between them. */
export interface GatewaySession {
  relay: Relay;
  upstreams: readonly Upstream[];
  close(): Promise<void>;
}

/** Connects every configured upstream; if one fails, the others are closed again. */
export async function connectUpstreams(options: GatewayOptions): Promise<Upstream[]> {
  const upstreams = options.upstreams.map(
    ({ options: own, ...spec }) => new Upstream(spec, { ...options.upstream, ...own }),
  );
  try {
    await Promise.all(upstreams.map((upstream) => upstream.connect()));
  } catch (error) {
    await Promise.all(upstreams.map((upstream) => upstream.close()));
    throw error;
  }
  return upstreams;
}

/**
 * Connects the upstreams, then builds the relay whose capabilities mirror theirs.
 * Each session owns its upstreams, so server-to-client requests, subscriptions
 * and log levels never cross between downstream clients.
 */
export async function openSession(options: GatewayOptions): Promise<GatewaySession> {
  const upstreams = await connectUpstreams(options);
  const relay = new Relay(upstreams, options);
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
