import type { JSONRPCRequest, LoggingLevel, Notification, Result } from '@modelcontextprotocol/server';
import { toProtocolError } from '../jsonrpc/messages.ts';
import type { Upstream } from '../upstreams/upstream.ts';
import { type Downstream, noCallFor } from './downstream.ts';

/**
 * The downstream side of upstream connections shared by the clients of one
 * principal: its 2025-era HTTP sessions and its 2026-07-28 stateless requests,
 * each with a `Downstream` of its own attached here. What an upstream sends on
 * its own goes back to the client it concerns:
 *
 * - log messages, other notifications and server-to-client requests sent
 *   while calls are running upstream go to the client whose call is the
 *   newest one in flight on that upstream. The upstream never says which call
 *   a message belongs to, so when calls of several clients are in flight at
 *   once this is a guess that can pick the wrong client; since the clients
 *   sharing a connection all belong to one principal, a wrong guess never
 *   crosses principals;
 * - outside any call, a server-to-client request goes to the most recently
 *   active client that can take it (a 2025-era session whose client declared
 *   the capability and listens), log messages to every client, others to the
 *   most recently active one;
 * - `list_changed` goes to every client, `resources/updated` to every client
 *   subscribed to the URI.
 *
 * Requests whose effect is per connection are merged: a URI is subscribed
 * upstream once however many clients subscribe, and unsubscribed when the last
 * one unsubscribes or goes; the upstream's log level is the most verbose any
 * client asked for, and each client only sees messages at its own level (a
 * client that set none, all of them); when the clients that set one are gone
 * the upstream keeps the last, as its default is not known. Other state a
 * server keeps per connection (the client's roots, its own per-client data)
 * is one for all the clients sharing it: such upstreams are configured
 * `per-session`.
 */

const LEVELS: readonly string[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

const LIST_CHANGED: ReadonlySet<string> = new Set([
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
]);

interface Subscription {
  /** The clients subscribed to the URI. */
  holders: Set<Downstream>;
  /** Settles once the upstream answered the subscription. */
  ready: Promise<unknown>;
}

interface Shared {
  /** The client of each request in flight upstream, oldest first. */
  inFlight: Downstream[];
  subscriptions: Map<string, Subscription>;
  /** The log level each client asked for. */
  levels: Map<Downstream, LoggingLevel>;
  /** The level the upstream was last set to. */
  level: string | undefined;
  /** Level changes go out one after the other, so the last word is the upstream's. */
  levelChange: Promise<unknown>;
}

/**
 * What the gateway asks on its own (restoring, releasing) has nobody waiting
 * for the answer: an upstream that refuses or is gone leaves at most a
 * subscription whose updates reach nobody, or a level more verbose than needed.
 */
function ignore(): void {}

function uriOf(params: Record<string, unknown> | undefined): string | undefined {
  return typeof params?.uri === 'string' ? params.uri : undefined;
}

export class SharedUpstreams {
  readonly upstreams: readonly Upstream[];
  readonly #shared = new Map<Upstream, Shared>();
  /** Attached clients, least recently active first (a Set keeps insertion order). */
  readonly #clients = new Set<Downstream>();

  constructor(upstreams: readonly Upstream[]) {
    this.upstreams = upstreams;
    for (const upstream of upstreams) {
      this.#shared.set(upstream, {
        inFlight: [],
        subscriptions: new Map(),
        levels: new Map(),
        level: undefined,
        levelChange: Promise.resolve(),
      });
      upstream.setHooks({
        onNotification: (notification) => this.#notification(upstream, notification),
        onRequest: (request, ctx) => this.#request(upstream, request, ctx.mcpReq.signal),
      });
      // A restarted process knows none of the subscriptions and levels of the one before.
      upstream.onRecovered(() => this.#restore(upstream));
    }
  }

  has(upstream: Upstream): boolean {
    return this.#shared.has(upstream);
  }

  /** Clients attached now. */
  get clients(): number {
    return this.#clients.size;
  }

  /** Whether a request is running upstream (a parked 2026-07-28 call's request keeps running). */
  get busy(): boolean {
    for (const shared of this.#shared.values()) if (shared.inFlight.length > 0) return true;
    return false;
  }

  attach(client: Downstream): void {
    this.#clients.add(client);
  }

  /** The client went: its subscriptions and its log level go with it. */
  detach(client: Downstream): void {
    if (!this.#clients.delete(client)) return;
    for (const [upstream, shared] of this.#shared) {
      for (const [uri, subscription] of shared.subscriptions) {
        if (!subscription.holders.delete(client) || subscription.holders.size > 0) continue;
        shared.subscriptions.delete(uri);
        upstream.request('resources/unsubscribe', { uri }).catch(ignore);
      }
      if (shared.levels.delete(client)) this.#applyLevel(upstream, shared).catch(ignore);
    }
  }

  /** The client sent a request: it is now the most recently active. */
  touch(client: Downstream): void {
    if (this.#clients.delete(client)) this.#clients.add(client);
  }

  /** A request of the client's goes upstream; returns what to call once it settled. */
  begin(upstream: Upstream, client: Downstream): () => void {
    const inFlight = this.#of(upstream).inFlight;
    inFlight.push(client);
    return () => {
      const index = inFlight.lastIndexOf(client);
      if (index >= 0) inFlight.splice(index, 1);
    };
  }

  /** `resources/subscribe` and `resources/unsubscribe`, counted per URI across the clients. */
  async subscription(
    upstream: Upstream,
    client: Downstream,
    method: 'resources/subscribe' | 'resources/unsubscribe',
    params: Record<string, unknown> | undefined,
  ): Promise<Result> {
    const uri = uriOf(params);
    const subscriptions = this.#of(upstream).subscriptions;
    // Without a URI the upstream answers for itself (with its error).
    if (uri === undefined) return upstream.request(method, params);
    let subscription = subscriptions.get(uri);
    if (method === 'resources/subscribe') {
      if (!subscription) {
        subscription = { holders: new Set(), ready: upstream.request(method, { uri }) };
        subscriptions.set(uri, subscription);
      }
      subscription.holders.add(client);
      try {
        await subscription.ready;
        return {};
      } catch (error) {
        subscription.holders.delete(client);
        if (subscription.holders.size === 0 && subscriptions.get(uri) === subscription)
          subscriptions.delete(uri);
        throw error;
      }
    }
    // Nobody holds it: the upstream answers as it would have without sharing.
    if (!subscription) return upstream.request(method, { uri });
    if (!subscription.holders.delete(client) || subscription.holders.size > 0) return {};
    subscriptions.delete(uri);
    return upstream.request(method, { uri });
  }

  /** `logging/setLevel`: the client's own level, the upstream at the most verbose one asked for. */
  async setLevel(
    upstream: Upstream,
    client: Downstream,
    params: Record<string, unknown> | undefined,
  ): Promise<Result> {
    const level = params?.level;
    // A level the gateway does not know is the upstream's to judge.
    if (typeof level !== 'string' || !LEVELS.includes(level))
      return upstream.request('logging/setLevel', params);
    const shared = this.#of(upstream);
    const before = shared.levels.get(client);
    shared.levels.set(client, level as LoggingLevel);
    try {
      await this.#applyLevel(upstream, shared);
    } catch (error) {
      if (before === undefined) shared.levels.delete(client);
      else shared.levels.set(client, before);
      throw error;
    }
    return {};
  }

  #of(upstream: Upstream): Shared {
    const shared = this.#shared.get(upstream);
    if (!shared) throw new Error(`upstream ${upstream.name} is not shared here`);
    return shared;
  }

  /** The most verbose level any client asked for; when none asks any more, the upstream keeps its last. */
  #applyLevel(upstream: Upstream, shared: Shared): Promise<unknown> {
    const change = shared.levelChange
      .catch(() => {})
      .then(async () => {
        const wanted = Math.min(...[...shared.levels.values()].map((level) => LEVELS.indexOf(level)));
        const level = LEVELS[wanted];
        if (level === undefined || level === shared.level) return;
        await upstream.request('logging/setLevel', { level });
        shared.level = level;
      });
    shared.levelChange = change;
    return change;
  }

  #restore(upstream: Upstream): void {
    const shared = this.#of(upstream);
    shared.level = undefined;
    if (shared.levels.size > 0) this.#applyLevel(upstream, shared).catch(ignore);
    for (const [uri, subscription] of shared.subscriptions) {
      subscription.ready = upstream.request('resources/subscribe', { uri });
      subscription.ready.catch(ignore);
    }
  }

  /** Whether the client's level lets a log message through (a client that set none takes all). */
  #admits(shared: Shared, client: Downstream, notification: Notification): boolean {
    if (notification.method !== 'notifications/message') return true;
    const own = shared.levels.get(client);
    const level = (notification.params as { level?: unknown } | undefined)?.level;
    if (own === undefined || typeof level !== 'string' || !LEVELS.includes(level)) return true;
    return LEVELS.indexOf(level) >= LEVELS.indexOf(own);
  }

  #notification(upstream: Upstream, notification: Notification): void {
    const shared = this.#of(upstream);
    if (LIST_CHANGED.has(notification.method)) {
      for (const client of this.#clients) client.deliver(notification, upstream);
      return;
    }
    if (notification.method === 'notifications/resources/updated') {
      const uri = uriOf(notification.params as Record<string, unknown> | undefined);
      const holders = uri === undefined ? undefined : shared.subscriptions.get(uri)?.holders;
      for (const client of holders ?? []) client.deliver(notification, upstream);
      return;
    }
    const owner = shared.inFlight.at(-1);
    if (owner) {
      if (this.#admits(shared, owner, notification)) owner.deliver(notification, upstream);
      return;
    }
    if (notification.method === 'notifications/message') {
      for (const client of this.#clients)
        if (this.#admits(shared, client, notification)) client.deliver(notification, upstream);
      return;
    }
    [...this.#clients].at(-1)?.deliver(notification, upstream);
  }

  async #request(upstream: Upstream, request: JSONRPCRequest, signal: AbortSignal): Promise<Result> {
    const owner = this.#of(upstream).inFlight.at(-1);
    if (owner) return owner.deliverRequest(request, signal);
    const clients = [...this.#clients];
    for (let index = clients.length - 1; index >= 0; index--) {
      const client = clients[index] as Downstream;
      if (client.canRequest(request.method)) return client.deliverRequest(request, signal);
    }
    throw toProtocolError(noCallFor(request.method));
  }
}
