import type { JSONRPCMessage, MessageExtraInfo, RequestId, Transport } from '@modelcontextprotocol/server';
import { PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../errors/index.ts';
import { errorResponse, requestIdOf } from '../jsonrpc/messages.ts';
import { WrappedTransport } from '../jsonrpc/wrapped-transport.ts';
import type { Upstream } from '../upstreams/upstream.ts';
import { splitUri } from './namespace.ts';

/**
 * A 2026-07-28 client asks for resource updates on a `subscriptions/listen`
 * stream, which the SDK's serving entries answer without the relay ever seeing
 * it. The gateway looks at the listen request on its way in and keeps the
 * upstream subscribed (`resources/subscribe`) to every URI some open stream
 * listens for, so the upstream's `resources/updated` has somewhere to go.
 */

/** URIs one listen request may name. */
export const MAX_URIS_PER_LISTEN = 100;

/** Distinct URIs kept subscribed upstream per upstream session. */
export const MAX_LISTENED_URIS = 1000;

/** Listen streams one stdio connection, or one principal over HTTP, may hold open (the SDK's own default limit). */
export const MAX_OPEN_LISTENS = 1024;

/** Why one more listen stream is refused: the same answer on stdio and over HTTP. */
export function tooManyListens(): EnvelopeError {
  return new EnvelopeError('RESOURCE_EXHAUSTED', `At most ${MAX_OPEN_LISTENS} listen streams at once`, {
    max: MAX_OPEN_LISTENS,
  });
}

/**
 * The resource URIs a 2026-07-28 `subscriptions/listen` request asks updates
 * for; undefined when the message is not such a request. Too many URIs is
 * INPUT_TOO_LARGE.
 */
export function listenedResources(message: unknown): string[] | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const { method, params } = message as { method?: unknown; params?: Record<string, unknown> };
  if (method !== 'subscriptions/listen' || typeof params !== 'object' || params === null) return undefined;
  const meta = params._meta as Record<string, unknown> | undefined;
  if (typeof meta?.[PROTOCOL_VERSION_META_KEY] !== 'string') return undefined;
  const wanted = (params.notifications as { resourceSubscriptions?: unknown } | undefined)
    ?.resourceSubscriptions;
  if (!Array.isArray(wanted)) return undefined;
  const uris = [...new Set(wanted.filter((uri): uri is string => typeof uri === 'string'))];
  if (uris.length > MAX_URIS_PER_LISTEN) {
    throw new EnvelopeError(
      'INPUT_TOO_LARGE',
      `A listen request may name at most ${MAX_URIS_PER_LISTEN} resources`,
      { max: MAX_URIS_PER_LISTEN },
    );
  }
  return uris;
}

/** How a subscription request reaches an upstream. */
export type SubscriptionRequest = (
  upstream: Upstream,
  method: 'resources/subscribe' | 'resources/unsubscribe',
  params: { uri: string },
) => Promise<unknown>;

/** Counts, per URI, the open listen streams that want it; the upstream is subscribed while any does. */
export class ResourceListens {
  readonly #upstreams: readonly Upstream[];
  readonly #report: (error: unknown) => void;
  readonly #request: SubscriptionRequest;
  readonly #counts = new Map<string, number>();
  readonly #subscribing = new Map<string, Promise<void>>();

  constructor(
    upstreams: readonly Upstream[],
    report: (error: unknown) => void = () => {},
    // Over a shared upstream, subscriptions are counted with those of the principal's other clients.
    request: SubscriptionRequest = (upstream, method, params) => upstream.request(method, params),
  ) {
    this.#upstreams = upstreams;
    this.#report = report;
    this.#request = request;
    // A restarted (or late-started) upstream has no subscriptions of ours.
    for (const upstream of upstreams) upstream.onRecovered(() => this.#resubscribe());
  }

  /** Subscribes upstream to the URIs no stream listened for yet; resolves once the upstream agreed. */
  async acquire(uris: readonly string[]): Promise<void> {
    if (this.#able().length === 0) return;
    const fresh = uris.filter((uri) => !this.#counts.has(uri));
    if (this.#counts.size + fresh.length > MAX_LISTENED_URIS) {
      throw new EnvelopeError(
        'RESOURCE_EXHAUSTED',
        `At most ${MAX_LISTENED_URIS} resources may be listened for`,
        {
          max: MAX_LISTENED_URIS,
        },
      );
    }
    for (const uri of uris) this.#counts.set(uri, (this.#counts.get(uri) ?? 0) + 1);
    for (const uri of fresh) this.#subscribing.set(uri, this.#send('resources/subscribe', uri));
    await Promise.all(uris.map((uri) => this.#subscribing.get(uri)));
  }

  /** A stream closed: URIs nobody listens for any more are unsubscribed upstream. */
  release(uris: readonly string[]): void {
    for (const uri of uris) {
      const count = (this.#counts.get(uri) ?? 0) - 1;
      if (count > 0) {
        this.#counts.set(uri, count);
        continue;
      }
      if (!this.#counts.delete(uri)) continue;
      this.#subscribing.delete(uri);
      void this.#send('resources/unsubscribe', uri);
    }
  }

  /** Subscribes again to everything listened for, once an upstream is back. */
  #resubscribe(): void {
    for (const uri of this.#counts.keys()) this.#subscribing.set(uri, this.#send('resources/subscribe', uri));
  }

  /** The upstreams that take subscriptions (the SDK acknowledges none for the others anyway). */
  #able(): Upstream[] {
    return this.#upstreams.filter((upstream) => upstream.capabilities.resources?.subscribe);
  }

  async #send(method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): Promise<void> {
    // With several upstreams a namespaced URI is its upstream's alone (namespace.ts).
    const names = new Set(this.#upstreams.map((upstream) => upstream.name));
    const split = this.#upstreams.length > 1 ? splitUri(uri, names) : undefined;
    const targets = split
      ? this.#able().filter((upstream) => upstream.name === split.upstream)
      : this.#able();
    await Promise.all(
      targets.map((upstream) =>
        // An upstream that does not know the URI says so; the stream stays open all the same.
        this.#request(upstream, method, { uri: split?.uri ?? uri }).then(() => {}, this.#report),
      ),
    );
  }
}

/**
 * A transport wrapper for serveStdio: listen requests wait until the upstream
 * is subscribed, then go on (in order with everything else); a cancelled
 * listen, or the connection closing, releases its URIs.
 */
export class ListenWatchingTransport extends WrappedTransport {
  /** The connection's listens, asked for each time: its upstreams may be chosen after it opened. */
  readonly #listensOf: () => ResourceListens;
  readonly #open = new Map<RequestId, string[]>();
  /** Messages behind a listen request wait for it, so nothing overtakes it. */
  #queue: Promise<void> | undefined;

  constructor(inner: Transport, listens: ResourceListens | (() => ResourceListens)) {
    super(inner);
    this.#listensOf = typeof listens === 'function' ? listens : () => listens;
  }

  protected override closed(): void {
    for (const uris of this.#open.values()) this.#listensOf().release(uris);
    this.#open.clear();
    this.onclose?.();
  }

  protected receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    let uris: string[] | undefined;
    try {
      uris = listenedResources(message);
    } catch (error) {
      const id = requestIdOf(message);
      if (id !== undefined && error instanceof EnvelopeError) void this.#refuse(id, error);
      return;
    }
    if (!uris?.length && !this.#queue) {
      this.#releaseCancelled(message);
      this.onmessage?.(message, extra);
      return;
    }
    const listening = uris;
    const step = async () => {
      this.#releaseCancelled(message);
      const id = requestIdOf(message);
      if (listening?.length && id !== undefined) {
        // A listen id used again replaces its stream, so the old one's URIs go.
        this.#forget(id);
        try {
          if (this.#open.size >= MAX_OPEN_LISTENS) throw tooManyListens();
          await this.#listensOf().acquire(listening);
        } catch (error) {
          if (error instanceof EnvelopeError) return this.#refuse(id, error);
          throw error;
        }
        this.#open.set(id, listening);
      }
      this.onmessage?.(message, extra);
    };
    const queued: Promise<void> = (this.#queue ?? Promise.resolve())
      .then(step)
      .catch((error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))))
      .finally(() => {
        if (this.#queue === queued) this.#queue = undefined;
      });
    this.#queue = queued;
  }

  #releaseCancelled(message: JSONRPCMessage): void {
    if ((message as { method?: unknown }).method !== 'notifications/cancelled') return;
    const id = (message as { params?: { requestId?: unknown } }).params?.requestId;
    if (typeof id === 'string' || typeof id === 'number') this.#forget(id);
  }

  #forget(id: RequestId): void {
    const uris = this.#open.get(id);
    if (!uris) return;
    this.#open.delete(id);
    this.#listensOf().release(uris);
  }

  #refuse(id: RequestId, error: EnvelopeError): Promise<void> {
    return this.inner.send(errorResponse(id, error)).catch(() => {});
  }
}
