import type { Upstream } from '../upstreams/upstream.ts';
import { announceRecovery } from './availability.ts';
import type { ClientIdentity } from './client-identity.ts';
import { Relay } from './relay.ts';
import { noneStarted, type UpstreamFleet } from './upstream-fleet.ts';
import type { PoolLease, UpstreamPool } from './upstream-pool.ts';

/** One downstream session: its upstreams (its own, or its principal's shared ones) and the relay between them. */
export interface ClientSession {
  relay: Relay;
  upstreams: readonly Upstream[];
  /** Closes the relay and the upstreams it owns, but those in `keep` (handed to another session). */
  close(keep?: ReadonlySet<Upstream>): Promise<void>;
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
 * Opens a session: without a placement (stdio, tests) it starts its own
 * connection to every upstream; over HTTP it takes its principal's shared
 * upstreams from the pool and starts only the `per-session` ones. It opens as
 * long as one upstream is up. The relay's capabilities mirror the upstreams'.
 */
export async function openClientSession(
  fleet: UpstreamFleet,
  placement?: SessionPlacement,
): Promise<ClientSession> {
  if (!placement) {
    const upstreams = await fleet.connectAll();
    return build(fleet, upstreams, upstreams);
  }
  const lease = await placement.pool.acquire(placement.principal, {
    once: placement.once === true,
    ...(placement.client ? { client: placement.client } : {}),
  });
  let own: readonly Upstream[] = [];
  try {
    own = placement.own ?? (await fleet.startOwn(placement.client));
    const upstreams = fleet.arrange(lease.set.upstreams, own);
    if (upstreams.every((upstream) => !upstream.available)) throw noneStarted(upstreams);
    return build(fleet, upstreams, own, lease);
  } catch (error) {
    await Promise.all(own.map((upstream) => upstream.close()));
    lease.release();
    throw error;
  }
}

function build(
  fleet: UpstreamFleet,
  upstreams: readonly Upstream[],
  own: readonly Upstream[],
  lease?: PoolLease,
): ClientSession {
  const capabilities = fleet.advertisedCapabilities(upstreams);
  const relay = new Relay(upstreams, { ...fleet.options, capabilities, shared: lease?.set.shared });
  fleet.reportDown(upstreams);
  const stops = [
    ...own.map((upstream) => fleet.watch(upstream)),
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
    close(keep) {
      closed ??= (async () => {
        // The relay first: its subscriptions and log level leave the shared upstreams with it.
        await relay.close();
        for (const stop of stops) stop();
        await Promise.all(own.filter((upstream) => !keep?.has(upstream)).map((upstream) => upstream.close()));
        lease?.release();
      })();
      return closed;
    },
  };
}

/**
 * The stdio gateway's session once its client's first message said who it
 * is (serve-stdio.ts): each upstream that is up is started again, told what
 * the client declared and who it is, in its era; one that is down stays as it
 * is, retrying under its restart policy. Resolves undefined, leaving `ahead`
 * as it was, when none of the new ones started.
 */
export async function reopenForClient(
  fleet: UpstreamFleet,
  ahead: ClientSession,
  client: ClientIdentity,
): Promise<ClientSession | undefined> {
  const up = new Set(
    ahead.upstreams.filter((upstream) => upstream.available).map((upstream) => upstream.name),
  );
  const fresh = fleet.instantiate(
    fleet.configured.filter(({ name }) => up.has(name)),
    fleet.newSetBudget(),
    { identity: client, named: true },
  );
  await fleet.start(fresh);
  if (fresh.every((upstream) => !upstream.available)) {
    await Promise.all(fresh.map((upstream) => upstream.close()));
    return undefined;
  }
  const kept = ahead.upstreams.filter((upstream) => !up.has(upstream.name));
  await ahead.close(new Set(kept));
  const upstreams = fleet.arrange(kept, fresh);
  return build(fleet, upstreams, upstreams);
}
