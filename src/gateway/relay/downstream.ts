import type {
  JSONRPCRequest,
  LoggingLevel,
  Notification,
  Result,
  Server,
  ServerContext,
  ServerNotifier,
} from '@modelcontextprotocol/server';
import { canonicalize } from '../../canonical/index.ts';
import { STATELESS_WIRE_REVISION } from '../../errors/codes.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { ANY_RESULT, toProtocolError } from '../jsonrpc/messages.ts';
import {
  type ClientIdentity,
  declares,
  type Upstream,
  type UpstreamRequestOptions,
} from '../upstreams/upstream.ts';
import {
  declaredCapabilities,
  InputRounds,
  invalidState,
  type Progress,
  ROOTS_INPUT_KEY,
  ROUND_METHODS,
} from './input-required.ts';
import type { SharedUpstreams } from './shared-upstreams.ts';

/**
 * The downstream side of one upstream session: which downstream requests are
 * in flight, and where each message the upstream sends on its own goes. In the
 * 2025 era a server-to-client request is pushed on the newest request's
 * stream; in the 2026-07-28 era it joins the newest call's input round.
 * Upstreams shared with other clients of the same principal reach it through
 * `SharedUpstreams`, which picks the client a message is for.
 */

/** Change notifications: 2026-07-28 clients get them on `subscriptions/listen` streams only. */
export const CHANGE_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
]);

/**
 * The most an outgoing stream (an SSE reply, a session's GET stream, the stdio
 * output) holds for a client that has stopped reading. Past it the stream is
 * closed: the client has stopped taking what it asked for, and keeping more
 * would let one client grow the gateway without limit.
 */
export const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

/**
 * Past this backlog, advisory notifications to the stream are dropped instead
 * of queued: a flood of them then never fills the stream up to
 * `MAX_QUEUED_BYTES`, and the answers behind them still get through.
 */
export const ADVISORY_QUEUED_BYTES = 1024 * 1024;

/** Notifications a client can lose without losing an answer: progress, log messages, list changes. */
const ADVISORY_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/progress',
  'notifications/message',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
]);

/**
 * What a writer does with a message for a stream that already holds `queued`
 * bytes the client has not taken: write it, drop it (advisory notifications
 * only), or close the stream (anything else, once past the bound). Responses
 * and server-to-client requests are never dropped: the stream closes instead.
 */
export function admitOutgoing(
  queued: number,
  message: { method?: unknown; id?: unknown },
): 'write' | 'drop' | 'close' {
  if (queued <= ADVISORY_QUEUED_BYTES) return 'write';
  if (
    message.id === undefined &&
    typeof message.method === 'string' &&
    ADVISORY_NOTIFICATIONS.has(message.method)
  )
    return 'drop';
  return queued > MAX_QUEUED_BYTES ? 'close' : 'write';
}

/** The report of what was dropped on one stream, worded once for every writer. */
export function droppedReport(dropped: number, stream: string): string {
  return `dropped ${dropped} notifications (progress, log messages, list changes) on ${stream}: the client was not reading fast enough to take them`;
}

/** Where messages go that no downstream request in flight can carry. */
export interface DownstreamSink {
  notify(notification: Notification): Promise<void>;
  /** A server-to-client request outside any call (2025 era only). */
  request?(
    message: { method: string; params?: Record<string, unknown> },
    signal: AbortSignal,
  ): Promise<Result>;
  /** Whether `request` can carry this method now (the era allows it, the client declared it). */
  accepts?(method: string): boolean;
}

/** The 2026-07-28 era: requests stand alone, without an HTTP session. */
export function isStatelessEra(server: Server): boolean {
  const version = server.getNegotiatedProtocolVersion();
  return version !== undefined && version >= STATELESS_WIRE_REVISION;
}

/** A long-lived downstream connection as sink: unsolicited messages go on the connection itself. */
export function connectionSink(server: Server): DownstreamSink {
  return {
    // serveStdio moves a 2026-07-28 connection's change notifications onto its listen streams;
    // that era has no unsolicited log messages.
    notify: (notification) =>
      isStatelessEra(server) && !CHANGE_NOTIFICATIONS.has(notification.method)
        ? Promise.resolve()
        : server.notification(notification),
    // Before the client has spoken (an upstream asking at start) there is nobody to ask yet.
    request: (message, signal) =>
      isStatelessEra(server) || server.getClientCapabilities() === undefined
        ? Promise.reject(noCallFor(message.method))
        : (server.request(message, ANY_RESULT, { signal }) as Promise<Result>),
    accepts: (method) =>
      server.transport !== undefined &&
      !isStatelessEra(server) &&
      declares(server.getClientCapabilities(), method),
  };
}

/** Stateless 2026-07-28 HTTP: change notifications go to the listen streams through the handler's facade. */
export function listenSink(notify: ServerNotifier): DownstreamSink {
  return {
    async notify(notification) {
      const uri = (notification.params as { uri?: unknown } | undefined)?.uri;
      if (notification.method === 'notifications/tools/list_changed') notify.toolsChanged();
      else if (notification.method === 'notifications/prompts/list_changed') notify.promptsChanged();
      else if (notification.method === 'notifications/resources/list_changed') notify.resourcesChanged();
      else if (notification.method === 'notifications/resources/updated' && typeof uri === 'string')
        notify.resourceUpdated(uri);
    },
  };
}

export function noCallFor(method: string): EnvelopeError {
  return new EnvelopeError('DEPENDENCY_UNAVAILABLE', `No downstream call in flight can answer ${method}`, {
    method,
  });
}

/** The call as the client named it, so a retry can be matched against the call it resumes. */
function identityOf(method: string, params: Record<string, unknown> | undefined): string {
  const named = { method, name: params?.name, uri: params?.uri, arguments: params?.arguments ?? {} };
  try {
    return canonicalize(named);
  } catch {
    return JSON.stringify(named);
  }
}

/**
 * How long a call waits for an upstream told its roots changed to ask for
 * them again, before it goes ahead anyway (the upstream may not care).
 */
export const ROOTS_REASK_MS = 2000;

/** Whether a 2026-07-28 request's client declares roots. */
function declaresRoots(ctx: ServerContext): boolean {
  return declaredCapabilities(ctx)?.roots !== undefined;
}

function isRootsAnswer(value: unknown): value is Result {
  return typeof value === 'object' && value !== null && Array.isArray((value as { roots?: unknown }).roots);
}

function progressTokenOf(meta: unknown): string | number | undefined {
  const token = (meta as { progressToken?: unknown } | undefined)?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

export class Downstream {
  readonly rounds: InputRounds;
  readonly #inFlight: ServerContext[] = [];
  readonly #stateless = new WeakSet<ServerContext>();
  readonly #identity = new WeakMap<ServerContext, string>();
  /** Notifications to the downstream, in the order the upstream sent them. */
  #outbox: Promise<void> = Promise.resolve();
  readonly #notified = new WeakSet<ServerContext>();
  #sink: DownstreamSink | undefined;
  readonly #shared: SharedUpstreams | undefined;
  /** Whether the client can be reached outside its requests (a 2025-era client listening on its GET stream). */
  #reachable: () => boolean = () => true;

  /** Its requests are of clients that cannot be told apart: an upstream message goes to one only when it is alone. */
  readonly #exclusive: boolean;

  /**
   * The roots a 2026-07-28 client gave the gateway's own round, for upstreams
   * that ask for them outside any call (which that era's clients cannot be asked).
   */
  #roots: Result | undefined;
  /** Upstreams told of these roots, by connection: each is told once. */
  readonly #rootsTold = new WeakMap<Upstream, number>();
  /** While upstreams told the roots changed ask again, they are answered from `#roots`. */
  #announcing = 0;
  /** Upstream `roots/list` requests waiting for the roots a call's round is bringing. */
  readonly #heldRoots = new Set<{ resolve(roots: Result): void; reject(reason: unknown): void }>();
  readonly #upstreams: readonly Upstream[];
  readonly #longestTimeoutMs: number;

  constructor(
    upstreams: readonly Upstream[],
    options: {
      maxParked?: number | undefined;
      shared?: SharedUpstreams | undefined;
      exclusive?: boolean | undefined;
    } = {},
  ) {
    const longest = Math.max(...upstreams.map((upstream) => upstream.longestTimeoutMs()));
    this.#upstreams = upstreams;
    this.#longestTimeoutMs = longest;
    this.#exclusive = options.exclusive === true;
    this.rounds = new InputRounds({
      maxParked: options.maxParked,
      exclusive: options.exclusive,
      // A parked call lives at most its timeout past the round; its state need not outlive that.
      ttlSeconds: Math.ceil(longest / 1000) + 1,
      progress: (ctx, progress) => this.#progress(ctx, progressTokenOf(ctx.mcpReq._meta), progress),
    });
    this.#shared = options.shared;
    this.#shared?.attach(this);
    for (const upstream of upstreams) {
      // A shared upstream's messages come through SharedUpstreams, which picks the client.
      if (this.#shared?.has(upstream)) continue;
      upstream.setHooks({
        onNotification: (notification) => this.#fromUpstream(notification, upstream),
        onRequest: (request, ctx) => this.#serverToClient(request, ctx.mcpReq.signal),
      });
    }
  }

  setSink(sink: DownstreamSink): void {
    this.#sink = sink;
  }

  /** How an upstream's message names what it concerns for this client (several upstreams: namespaced). */
  setRenamer(rename: (upstream: Upstream, notification: Notification) => Notification): void {
    this.#rename = rename;
  }

  #rename: ((upstream: Upstream, notification: Notification) => Notification) | undefined;

  /** The client just spoke: on shared upstreams, it is now its principal's most recently active. */
  touch(): void {
    this.#shared?.touch(this);
  }

  /** Whether the client can be asked something outside its own requests now. */
  get reachable(): boolean {
    return this.#reachable();
  }

  setReachable(reachable: () => boolean): void {
    this.#reachable = reachable;
  }

  /** A message of a shared upstream, for this client. */
  deliver(notification: Notification, upstream: Upstream): void {
    this.#fromUpstream(notification, upstream);
  }

  /** A server-to-client request of a shared upstream, for this client. */
  deliverRequest(request: JSONRPCRequest, signal: AbortSignal): Promise<Result> {
    return this.#serverToClient(request, signal);
  }

  /** Whether a server-to-client request outside any call can be put to this client. */
  canRequest(method: string): boolean {
    if (method === 'roots/list' && (this.#roots !== undefined || this.#rootsCallOnItsWay() !== undefined))
      return true;
    return this.#sink?.accepts?.(method) === true && this.#reachable();
  }

  /**
   * Before a 2026-07-28 client's call goes upstream. An upstream that asked
   * for roots when no client could be asked (right after it started, or
   * while this call was on its way) works from roots of its own; so a client
   * that declares roots is first asked for them in a round of the gateway's
   * own. Its retry's answer goes to the upstream's waiting request, and
   * upstreams that were refused are told the roots changed and given them
   * when they ask again (bounded by ROOTS_REASK_MS). Returns that round, or
   * undefined to go on with the call.
   */
  async #rootsFirst(ctx: ServerContext): Promise<Result | undefined> {
    if (this.rounds.isRootsRetry(ctx)) {
      const answer = ctx.mcpReq.inputResponses?.[ROOTS_INPUT_KEY];
      // A client that declined leaves the upstreams with their own roots; asking again would loop.
      if (!isRootsAnswer(answer)) {
        this.#releaseHeldRoots(noCallFor('roots/list'));
        return undefined;
      }
      this.#roots = answer;
    }
    const wanting = this.#upstreams.filter(
      (upstream) =>
        upstream.available &&
        !upstream.modern &&
        upstream.rootsUnanswered &&
        this.#rootsTold.get(upstream) !== upstream.generation,
    );
    if (wanting.length === 0 && this.#heldRoots.size === 0) return undefined;
    const roots = this.#roots;
    if (roots === undefined) {
      return declaresRoots(ctx) ? this.rounds.askRoots(ctx, this.#identity.get(ctx) ?? '') : undefined;
    }
    for (const held of this.#heldRoots) held.resolve(roots);
    this.#heldRoots.clear();
    this.#announcing++;
    try {
      await Promise.all(
        wanting.map(async (upstream) => {
          this.#rootsTold.set(upstream, upstream.generation);
          const asked = upstream.nextRootsAnswer(ROOTS_REASK_MS);
          await upstream.notify({ method: 'notifications/roots/list_changed' });
          await asked;
        }),
      );
    } finally {
      this.#announcing--;
    }
    return undefined;
  }

  /** A 2026-07-28 call in flight whose client declares roots, which its round can ask for. */
  #rootsCallOnItsWay(): ServerContext | undefined {
    return this.#inFlight.findLast(
      (ctx) => this.#identity.has(ctx) && !ctx.mcpReq.signal.aborted && declaresRoots(ctx),
    );
  }

  /** The upstreams' `roots/list` held for the client's roots (below), refused when they cannot come. */
  #releaseHeldRoots(reason: unknown): void {
    for (const held of this.#heldRoots) held.reject(reason);
    this.#heldRoots.clear();
  }

  /**
   * An upstream asked for roots while a 2026-07-28 call that declares them
   * was on its way but not yet upstream: the request waits for the roots that
   * call's round brings (at most the longest call timeout).
   */
  #holdRoots(signal: AbortSignal): Promise<Result> {
    return new Promise((resolve, reject) => {
      const held = {
        resolve: (roots: Result) => {
          clearTimeout(timer);
          resolve(roots);
        },
        reject: (reason: unknown) => {
          clearTimeout(timer);
          reject(reason);
        },
      };
      const timer = setTimeout(() => {
        this.#heldRoots.delete(held);
        held.reject(noCallFor('roots/list'));
      }, this.#longestTimeoutMs);
      timer.unref();
      signal.addEventListener('abort', () => {
        if (this.#heldRoots.delete(held)) held.reject(signal.reason);
      });
      this.#heldRoots.add(held);
    });
  }

  /**
   * A request the gateway sends for this client outside any downstream
   * request (a 2026-07-28 listen stream's subscriptions): on a shared upstream
   * it is counted with the other clients'.
   */
  request(upstream: Upstream, method: string, params: Record<string, unknown> | undefined): Promise<Result> {
    const shared = this.#shared?.has(upstream) ? this.#shared : undefined;
    if (shared && (method === 'resources/subscribe' || method === 'resources/unsubscribe'))
      return shared.subscription(upstream, this, method, params);
    return upstream.request(method, params);
  }

  /**
   * A downstream request begins. A 2026-07-28 retry of a parked call is
   * matched to it here, so a bad one is refused before anything else runs.
   */
  enter(ctx: ServerContext, stateless: boolean, params: Record<string, unknown> | undefined): void {
    this.#inFlight.push(ctx);
    this.touch();
    if (!stateless) return;
    this.#stateless.add(ctx);
    const method = ctx.mcpReq.method;
    if (!ROUND_METHODS.has(method)) return;
    const identity = identityOf(method, params);
    this.#identity.set(ctx, identity);
    this.rounds.claim(ctx, identity);
  }

  leave(ctx: ServerContext): void {
    const index = this.#inFlight.lastIndexOf(ctx);
    if (index >= 0) this.#inFlight.splice(index, 1);
    this.rounds.release(ctx);
  }

  /** Resolves once the notifications the upstream sent ahead of this request's result are out. */
  async settled(ctx: ServerContext): Promise<void> {
    await this.#outbox;
    // Clients settle a response at once but handle notifications a microtask later; a
    // response in the same read as the last notification could overtake it there.
    if (this.#notified.has(ctx)) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /**
   * Forwards one request to an upstream, mapping the progress token both ways.
   * On a shared upstream, subscriptions and the log level are merged with the
   * other clients', and the request counts as in flight while it runs upstream.
   */
  forward(
    upstream: Upstream,
    method: string,
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
    client?: ClientIdentity,
  ): Promise<Result> {
    const shared = this.#shared?.has(upstream) ? this.#shared : undefined;
    if (shared && (method === 'resources/subscribe' || method === 'resources/unsubscribe'))
      return shared.subscription(upstream, this, method, params);
    if (shared && method === 'logging/setLevel') return shared.setLevel(upstream, this, params);
    if (this.rounds.isRootsRetry(ctx) && params) {
      // The answers and state were the gateway's own round's: the call goes upstream as first made.
      const { inputResponses: _answers, requestState: _state, ...call } = params;
      params = call;
    }
    const send = (own: UpstreamRequestOptions, sent = params): Promise<Result> => {
      const options = client ? { ...own, client } : own;
      if (!shared) return upstream.request(method, sent, options);
      const done = shared.begin(upstream, this);
      return upstream.request(method, sent, options).finally(done);
    };
    const identity = this.#identity.get(ctx);
    if (identity !== undefined && method === ctx.mcpReq.method)
      return this.#call(upstream, params, ctx, identity, send);
    return send({ signal: ctx.mcpReq.signal, onprogress: this.#onprogress(ctx, params) });
  }

  /** The upstream request's progress, sent on with the token the downstream request gave. */
  #onprogress(
    ctx: ServerContext,
    params: Record<string, unknown> | undefined,
  ): ((progress: Progress) => void) | undefined {
    const token = progressTokenOf(params?._meta);
    return token === undefined ? undefined : (progress) => this.#progress(ctx, token, progress);
  }

  /** A 2026-07-28 client's call (tools/call, prompts/get, resources/read), which may go in rounds. */
  async #call(
    upstream: Upstream,
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
    identity: string,
    send: (options: UpstreamRequestOptions, sent?: Record<string, unknown>) => Promise<Result>,
  ): Promise<Result> {
    const roots = await this.#rootsFirst(ctx);
    if (roots) return roots;
    if (upstream.modern) {
      return this.#relayRounds(upstream, params, ctx, identity, send);
    }
    return this.rounds.run(ctx, {
      identity,
      timeoutMs: upstream.timeoutFor(ctx.mcpReq.method, params),
      start: (signal, onprogress) => send({ signal, onprogress }),
    });
  }

  /**
   * A 2026-07-28 client's call on a 2026-07-28 upstream: the upstream's own
   * rounds go to the client as they are (its requests, its state inside the
   * gateway's), and the client's retry back to the upstream with its answers
   * and the upstream's state. Nothing is parked here.
   */
  async #relayRounds(
    upstream: Upstream,
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
    identity: string,
    send: (options: UpstreamRequestOptions, sent?: Record<string, unknown>) => Promise<Result>,
  ): Promise<Result> {
    const round = this.rounds.relayedRound(ctx);
    if (round && round.upstream !== upstream.name) throw invalidState();
    // The client's answers go as it gave them (a first call may carry some already); the state
    // the upstream gets is its own, never the gateway's.
    const { inputResponses: _answers, requestState: _state, ...call } = params ?? {};
    const answers = this.rounds.isRootsRetry(ctx) ? undefined : ctx.mcpReq.inputResponses;
    const sent = {
      ...call,
      ...(answers === undefined ? {} : { inputResponses: answers }),
      ...(round?.state === undefined ? {} : { requestState: round.state }),
    };
    const onprogress = this.#onprogress(ctx, params);
    const result = await send({ signal: ctx.mcpReq.signal, onprogress, allowInputRequired: true }, sent);
    if ((result as { resultType?: unknown }).resultType !== 'input_required') return result;
    return this.rounds.relay(ctx, upstream.name, identity, result);
  }

  close(): void {
    this.#releaseHeldRoots(noCallFor('roots/list'));
    this.rounds.close();
    this.#shared?.detach(this);
  }

  #progress(ctx: ServerContext, token: string | number | undefined, progress: Progress): void {
    if (token === undefined) return;
    this.#queue(ctx, () =>
      ctx.mcpReq.notify({ method: 'notifications/progress', params: { ...progress, progressToken: token } }),
    );
  }

  /** The downstream request an upstream message most likely belongs to: the newest one in flight. */
  #current(): ServerContext | undefined {
    if (this.#exclusive) {
      // Clients that cannot be told apart: only the one request running can be meant.
      const live = this.#inFlight.filter((ctx) => !ctx.mcpReq.signal.aborted);
      return live.length === 1 ? live[0] : undefined;
    }
    const ctx = this.#inFlight.at(-1);
    return ctx && !ctx.mcpReq.signal.aborted ? ctx : undefined;
  }

  #queue(ctx: ServerContext | undefined, send: () => Promise<void> | undefined): void {
    if (ctx) this.#notified.add(ctx);
    this.#outbox = this.#outbox
      .then(send)
      .then(() => {})
      .catch(() => {
        // A downstream that went away cannot be told; the upstream is not at fault.
      });
  }

  #fromUpstream(sent: Notification, upstream: Upstream): void {
    const notification = this.#rename ? this.#rename(upstream, sent) : sent;
    const live = this.#current();
    // Inside a call, the message rides that call's stream, as the upstream sent it during the call.
    if (live && !this.#stateless.has(live)) {
      this.#queue(live, () => live.mcpReq.notify(notification));
      return;
    }
    if (live && !CHANGE_NOTIFICATIONS.has(notification.method)) {
      // 2026-07-28: a log message reaches the client only at the level its request's _meta asks for.
      const params = notification.params as { level?: unknown; data?: unknown; logger?: string } | undefined;
      this.#queue(live, () =>
        notification.method === 'notifications/message' && typeof params?.level === 'string'
          ? live.mcpReq.log(params.level as LoggingLevel, params.data, params.logger)
          : live.mcpReq.notify(notification),
      );
      return;
    }
    this.#queue(undefined, () => this.#sink?.notify(notification));
  }

  async #serverToClient(request: JSONRPCRequest, signal: AbortSignal): Promise<Result> {
    const message = { method: request.method, params: request.params };
    const live = this.#current();
    const roots = request.method === 'roots/list' ? this.#roots : undefined;
    // Asked again after being told the roots changed: the answer the client gave for it.
    if (roots && this.#announcing > 0) return roots;
    try {
      if (live && !this.#stateless.has(live)) {
        return (await live.mcpReq.send(message, ANY_RESULT, { signal })) as Result;
      }
      const round = this.rounds.offer(message, signal);
      if (round) return await round;
      if (roots) return roots;
      // A call on its way that declares roots will ask its client for them before it goes upstream.
      if (request.method === 'roots/list' && this.#rootsCallOnItsWay()) return await this.#holdRoots(signal);
      if (!this.#sink?.request) throw noCallFor(request.method);
      return await this.#sink.request(message, signal);
    } catch (error) {
      throw toProtocolError(error);
    }
  }
}
