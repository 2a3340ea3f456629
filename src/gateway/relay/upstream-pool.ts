import { EnvelopeError } from '../../errors/index.ts';
import { CONFIG_DEFAULTS } from '../defaults.ts';
import type { ClientIdentity, ConfiguredUpstream, Upstream } from '../upstreams/upstream.ts';
import { capabilityGroup } from './client-identity.ts';
import { SharedUpstreams } from './shared-upstreams.ts';
import type { UpstreamFleet } from './upstream-fleet.ts';

/**
 * The HTTP gateway's upstream connections shared between clients: one set per
 * principal (a bearer token; an anonymous 2025-era session; anonymous
 * 2026-07-28 requests, which share one set that never guesses whose a
 * server-to-client request is), serving all of its 2025-era sessions and its
 * 2026-07-28 requests, so that a hundred
 * sessions of one client cost one process per upstream, not a hundred. Sets
 * are never shared between principals: what an upstream sends on its own can
 * only ever reach the principal whose set it belongs to.
 *
 * A set is opened by its principal's first session or request and held by
 * leases (a session holds one for its life, a stateless request while it is
 * served). Once no lease is held and no request runs upstream, the set is
 * closed after `idleMs` (the session idle time); one none of whose upstreams
 * ever started is closed at once, so that the next client starts them afresh. Upstreams
 * configured `per-session` are not here: each session starts its own. The sets
 * are instantiated and watched by the gateway's fleet (upstream-fleet.ts).
 */

/** One principal's shared upstreams. */
export interface SharedSet {
  /** In configuration order; only the shared ones. */
  readonly upstreams: readonly Upstream[];
  readonly shared: SharedUpstreams;
  /** Called when the set closes (idle, or the gateway closing); returns the unsubscribe. */
  onClosed(listener: () => void): () => void;
}

export interface PoolLease {
  readonly set: SharedSet;
  /** Idempotent. */
  release(): void;
}

interface Entry {
  /** The capabilities its upstreams were told (`capabilityGroup`). */
  group: string;
  ready: Promise<SharedSet>;
  users: number;
  timer?: NodeJS.Timeout;
  /** Whether any of its upstreams ever came up (one between restarts is worth waiting for). */
  started: boolean;
  upstreams: readonly Upstream[];
}

/** Every upstream of the set spent its restart budget: it serves nothing until replaced. */
function gaveUp(entry: Entry): boolean {
  return entry.upstreams.length > 0 && entry.upstreams.every((upstream) => upstream.state === 'gave-up');
}

export interface PoolOptions {
  /** How long a set outlives its last lease (default 30 minutes). */
  idleMs?: number;
}

export class UpstreamPool {
  readonly #fleet: UpstreamFleet;
  readonly #configured: readonly ConfiguredUpstream[];
  readonly #idleMs: number;
  readonly #sets = new Map<string, Entry>();
  /** A set started ahead of the first principal (prewarm), given to whichever comes first. */
  #ahead: Entry | undefined;
  readonly #closers = new WeakMap<Entry, () => Promise<void>>();
  #closed = false;

  constructor(fleet: UpstreamFleet, options: PoolOptions = {}) {
    this.#fleet = fleet;
    this.#configured = fleet.shared;
    this.#idleMs = options.idleMs ?? CONFIG_DEFAULTS.listen.http.sessionIdleMs;
  }

  /** Whether any upstream is shared (else every session starts its own). */
  get enabled(): boolean {
    return this.#configured.length > 0;
  }

  /** Sets held now (one per principal and capability group). */
  get principals(): number {
    return this.#sets.size;
  }

  /**
   * Starts a set before any client asks, so that the first one does not wait
   * for processes to boot and the operator sees each upstream's state at once.
   * It is not replaced once taken: later principals start their own.
   */
  prewarm(): Promise<void> {
    if (!this.enabled || this.#closed) return Promise.resolve();
    this.#ahead ??= this.#open();
    return this.#ahead.ready.then(() => {});
  }

  /**
   * The principal's set for clients that declared what `client` declared,
   * opened on first use; hold the lease while using it. `once`: the principal
   * ends with its lease (an anonymous session), so the set closes as soon as
   * its last lease is released instead of idling.
   */
  async acquire(
    principal: string,
    options: { once?: boolean; client?: ClientIdentity } = {},
  ): Promise<PoolLease> {
    if (this.#closed) throw new EnvelopeError('DEPENDENCY_UNAVAILABLE', 'The gateway is shutting down');
    const group = capabilityGroup(options.client, this.#fleet.sharedSpeakModern());
    const key = `${principal}\u0000${group}`;
    let entry = this.#sets.get(key);
    if (entry && gaveUp(entry)) {
      // One client's crashes spent the restart budget: the sessions holding this set keep
      // it (and its failures), but the next one starts afresh instead of inheriting the outage.
      this.#sets.delete(key);
      this.#fleet.report(`upstreams of a client gave up; starting them afresh for a new session`);
      if (entry.users === 0) void this.#closers.get(entry)?.();
      entry = undefined;
    }
    let opened = false;
    if (!entry) {
      // The set started ahead serves the first client whose capabilities it was told; for
      // any other, its work (starting early, showing each upstream's state) is done.
      const ahead = this.#ahead;
      this.#ahead = undefined;
      if (ahead?.group === group) entry = ahead;
      else {
        if (ahead) void this.#closers.get(ahead)?.();
        entry = this.#open(options.client);
        opened = true;
      }
      this.#sets.set(key, entry);
    }
    entry.users++;
    clearTimeout(entry.timer);
    const held = entry;
    const set = await held.ready;
    if (!opened && held.users === 1 && this.#sets.get(key) === held && !held.started) {
      // Nobody else uses it and nothing in it ever started (started ahead, or retrying after
      // failing for an earlier client): start afresh, as a session starting its own would.
      held.users--;
      this.#sets.delete(key);
      void this.#closers.get(held)?.();
      return this.acquire(principal, options);
    }
    let released = false;
    return {
      set,
      release: () => {
        if (released) return;
        released = true;
        this.#release(key, held, set, options.once === true);
      },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const entries = [...this.#sets.values(), ...(this.#ahead ? [this.#ahead] : [])];
    this.#sets.clear();
    this.#ahead = undefined;
    await Promise.all(entries.map((entry) => this.#closers.get(entry)?.()));
  }

  #open(client?: ClientIdentity): Entry {
    const listeners = new Set<() => void>();
    const fleet = this.#fleet;
    const upstreams = fleet.instantiate(
      this.#configured,
      fleet.newSetBudget(),
      client ? { identity: client, named: false } : undefined,
    );
    const shared = new SharedUpstreams(upstreams);
    const stops = upstreams.map((upstream) => fleet.watch(upstream));
    const set: SharedSet = {
      upstreams,
      shared,
      onClosed(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const entry: Entry = {
      group: capabilityGroup(client, fleet.sharedSpeakModern()),
      ready: fleet.start(upstreams).then(() => {
        entry.started ||= upstreams.some((upstream) => upstream.available);
        return set;
      }),
      users: 0,
      upstreams,
      // A set with nothing to start (every upstream per-session) has nothing to retry either.
      started: upstreams.length === 0,
    };
    for (const upstream of upstreams)
      upstream.onRecovered(() => {
        entry.started = true;
      });
    let closing: Promise<void> | undefined;
    this.#closers.set(entry, () => {
      closing ??= (async () => {
        clearTimeout(entry.timer);
        await entry.ready;
        for (const listener of listeners) listener();
        for (const stop of stops) stop();
        await Promise.all(upstreams.map((upstream) => upstream.close()));
      })();
      return closing;
    });
    return entry;
  }

  #release(key: string, entry: Entry, set: SharedSet, once: boolean): void {
    entry.users--;
    if (entry.users > 0) return;
    // Replaced while in use (it gave up), or its principal is gone: nobody will take it again.
    if (once && this.#sets.get(key) === entry) this.#sets.delete(key);
    if (this.#sets.get(key) !== entry) {
      void this.#closers.get(entry)?.();
      return;
    }
    const close = () => {
      if (entry.users > 0 || this.#sets.get(key) !== entry) return;
      // A request still running upstream (a parked 2026-07-28 call's) keeps the set.
      if (set.shared.busy) {
        entry.timer = setTimeout(close, this.#idleMs);
        entry.timer.unref();
        return;
      }
      this.#sets.delete(key);
      void this.#closers.get(entry)?.();
    };
    // None of them ever started: nothing is worth keeping, and the next client gets a fresh start.
    if (!entry.started) {
      close();
      return;
    }
    entry.timer = setTimeout(close, this.#idleMs);
    entry.timer.unref();
  }
}
