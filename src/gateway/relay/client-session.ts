import type { ArtifactService } from '../../artifacts/service.ts';
import type { UpstreamStatusBoard } from '../operations/upstream-status.ts';
import type { ResultBudget } from '../upstreams/result-budget.ts';
import type { ConfiguredUpstream, Upstream, UpstreamOptions } from '../upstreams/upstream.ts';
import { advertisedCapabilities, announceRecovery } from './availability.ts';
import type { ClientIdentity } from './client-identity.ts';
import { Relay, type RelayOptions } from './relay.ts';
import {
  instantiate,
  isShared,
  newSetBudget,
  noneStarted,
  type PoolLease,
  reportDown,
  startUpstreams,
  type UpstreamPool,
  watchUpstream,
} from './upstream-pool.ts';

export interface GatewayOptions extends RelayOptions {
  upstreams: readonly ConfiguredUpstream[];
  upstream?: UpstreamOptions;
  /** Where messages about upstreams go: one down when a session opens, one back (never stdout). */
  report?: (message: string) => void;
  /** Where each upstream's state is kept for the operator (banner, info page, /healthz). */
  status?: UpstreamStatusBoard;
  /**
   * The budgets for upstream answers held at once (result-budget.ts): the
   * process's (default: the one of this process, PROCESS_RESULT_BUDGET_BYTES)
   * and each upstream set's size (default SET_RESULT_BUDGET_BYTES). Not a
   * setting: tests pass smaller ones.
   */
  resultBudgets?: { process?: ResultBudget; setBytes?: number };
  /** The artifact store and download links (large results as files); absent when artifacts are off. */
  artifacts?: ArtifactService;
}

/** One downstream session: its upstreams (its own, or its principal's shared ones) and the relay between them. */
export interface ClientSession {
  relay: Relay;
  upstreams: readonly Upstream[];
  close(): Promise<void>;
}

/** Where an HTTP session's upstreams come from. */
export interface SessionPlacement {
  /** Shared upstreams, per principal. */
  pool: UpstreamPool;
  /** Whose session it is: the bearer token's id; for an anonymous caller, the session itself. */
  principal: string;
  /** The principal is the session itself (anonymous): its set closes with it. */
  once?: boolean;
  /** The session's per-session upstreams, started ahead of need (the warm spare). */
  own?: readonly Upstream[];
  /** The client, as its initialize named it: its shared set is its capability group's, its own upstreams are told who it is. */
  client?: ClientIdentity;
}

/**
 * Connects every configured upstream. It succeeds as long as one started: the
 * others retry in the background and are served once they are back
 * (availability.ts). When none started, it fails.
 */
export async function connectUpstreams(options: GatewayOptions): Promise<Upstream[]> {
  const upstreams = instantiate(options, options.upstreams);
  await startUpstreams(options, upstreams);
  if (upstreams.every((upstream) => !upstream.available)) {
    const failure = noneStarted(upstreams);
    await Promise.all(upstreams.map((upstream) => upstream.close()));
    throw failure;
  }
  return upstreams;
}

/**
 * Starts the upstreams configured `per-session` (none started is not an error
 * here), told what `client` declared and, when `named` (they serve it alone), who it is.
 */
export async function startOwnUpstreams(
  options: GatewayOptions,
  client?: ClientIdentity,
  named = true,
): Promise<Upstream[]> {
  const upstreams = instantiate(
    options,
    options.upstreams.filter((upstream) => !isShared(upstream)),
    newSetBudget(options),
    client ? { identity: client, named } : undefined,
  );
  await startUpstreams(options, upstreams);
  return upstreams;
}

/** A client's upstreams in configuration order: its principal's shared ones and its own. */
export function arrange(
  options: GatewayOptions,
  shared: readonly Upstream[],
  own: readonly Upstream[],
): Upstream[] {
  const byName = new Map([...shared, ...own].map((upstream) => [upstream.name, upstream]));
  return options.upstreams.flatMap(({ name }) => byName.get(name) ?? []);
}

/**
 * Opens a session: without a placement (stdio, tests) it starts its own
 * connection to every upstream; over HTTP it takes its principal's shared
 * upstreams from the pool and starts only the `per-session` ones. It opens as
 * long as one upstream is up. The relay's capabilities mirror the upstreams'.
 */
export async function openClientSession(
  options: GatewayOptions,
  placement?: SessionPlacement,
): Promise<ClientSession> {
  if (!placement) {
    const upstreams = await connectUpstreams(options);
    return build(options, upstreams, upstreams);
  }
  const lease = await placement.pool.acquire(placement.principal, {
    once: placement.once === true,
    ...(placement.client ? { client: placement.client } : {}),
  });
  let own: readonly Upstream[] = [];
  try {
    own = placement.own ?? (await startOwnUpstreams(options, placement.client));
    const upstreams = arrange(options, lease.set.upstreams, own);
    if (upstreams.every((upstream) => !upstream.available)) throw noneStarted(upstreams);
    return build(options, upstreams, own, lease);
  } catch (error) {
    await Promise.all(own.map((upstream) => upstream.close()));
    lease.release();
    throw error;
  }
}

function build(
  options: GatewayOptions,
  upstreams: readonly Upstream[],
  own: readonly Upstream[],
  lease?: PoolLease,
): ClientSession {
  const capabilities = advertisedCapabilities(options, upstreams);
  const relay = new Relay(upstreams, { ...options, capabilities, shared: lease?.set.shared });
  reportDown(options, upstreams);
  const stops = [
    ...own.map((upstream) => watchUpstream(options, upstream)),
    // An upstream back from being down: the client is told its lists changed.
    ...upstreams.map((upstream) =>
      upstream.onRecovered(() => {
        void announceRecovery(relay.server, capabilities, upstream);
      }),
    ),
  ];
  let closed: Promise<void> | undefined;
  return {
    relay,
    upstreams,
    close() {
      closed ??= (async () => {
        // The relay first: its subscriptions and log level leave the shared upstreams with it.
        await relay.close();
        for (const stop of stops) stop();
        await Promise.all(own.map((upstream) => upstream.close()));
        lease?.release();
      })();
      return closed;
    },
  };
}
