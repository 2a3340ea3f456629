import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { AuthInfo, Transport } from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../../errors/index.ts';
import { CONFIG_DEFAULTS } from '../../defaults.ts';
import { sendError, sendRpcError } from '../../http/reply.ts';
import { closeWhenUnread } from '../../http/unread-bound.ts';
import { type ClientIdentity, initializingClient, sameClient } from '../../relay/client-identity.ts';
import { type ClientSession, openClientSession } from '../../relay/client-session.ts';
import type { UpstreamFleet } from '../../relay/upstream-fleet.ts';
import { UpstreamPool } from '../../relay/upstream-pool.ts';
import type { Upstream } from '../../upstreams/upstream.ts';
import { BoundedEventStore } from './event-store.ts';
import { SessionTransport } from './session-transport.ts';

/**
 * The 2025-era sessions of one HTTP gateway: opened on `initialize`, capped in
 * total and per principal (counted with those still opening, so initializes
 * arriving together cannot all pass), bound to the principal that opened them,
 * reaped when idle or abandoned (the GET stream gone and nothing sent), each
 * on its transport over its principal's shared upstreams (and its own, for
 * upstreams that are `per-session`). An anonymous caller's session is its own
 * principal, with an upstream set of its own that closes with it; the caps
 * still count per caller (its address), so they bound those sets too.
 */

/** A 2025-era session's HTTP side: the transport that serves its requests. */
interface SessionEntry {
  serve(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo?: AuthInfo): Promise<void>;
  close(): Promise<void>;
  session: ClientSession;
  lastSeen: number;
  /** Who opened it: only the same caller may use or end it, and its caps count per caller. */
  owner: string;
  /**
   * Whose its traffic is (rate limits, artifacts, upstream set): the caller's
   * bearer token, or for an anonymous caller the session itself.
   */
  principal: string;
  /** Requests being served on it now (an open SSE stream counts while it is open). */
  active: number;
  /** When the client's GET stream went away, while it has not opened another. */
  streamClosedAt?: number;
  /** Whether the client listens on its GET stream, where requests outside its own go. */
  listening: boolean;
  /** Closes it, saying why. */
  end(reason: SessionCloseReason): Promise<void>;
}

/** Why a 2025-era session closed. */
export type SessionCloseReason = 'ended' | 'idle' | 'abandoned' | 'evicted' | 'shutdown';

interface SessionTransportChoice {
  transport: Transport;
  serve: SessionEntry['serve'];
  opened(): boolean;
}

export interface SessionTableOptions {
  /** The gateway's upstreams: the shared sets are built over it, and each session's own. */
  fleet: UpstreamFleet;
  maxSessions?: number;
  maxSessionsPerPrincipal?: number;
  sessionIdleMs?: number;
  abandonedSessionMs?: number;
  resumable?: boolean;
  retryIntervalMs?: number;
  onSessionClosed?: (id: string, reason: SessionCloseReason) => void;
  report: (error: unknown) => void;
}

/** The principal an anonymous caller's 2025-era session is: the session itself. */
export function anonymousSession(id: string): string {
  return `anonymous:session:${id}`;
}

export class SessionTable {
  /** Shared upstreams: one set per principal, for its sessions and its stateless requests alike. */
  readonly pool: UpstreamPool;
  readonly #options: SessionTableOptions;
  readonly #sessions = new Map<string, SessionEntry>();
  /** Sessions being opened (awaiting their upstreams), per owner: they count against the limits too. */
  readonly #opening = new Map<string, number>();
  readonly #maxSessions: number;
  readonly #maxPerPrincipal: number;
  readonly #sweeper: NodeJS.Timeout;
  /** Whether some upstream is started per session (sharing: 'per-session'). */
  readonly #perSession: boolean;
  /**
   * One session's per-session upstreams kept started ahead of need, so an
   * initialize does not wait for them to boot. Shared upstreams need no spare:
   * a new session starts no process.
   */
  #spare: Promise<Upstream[]> | undefined;
  /** The client the spare's upstreams were told of (none: everything the gateway can relay). */
  #spareFor: ClientIdentity | undefined;
  /** Per-session upstreams kept for the info page when there is no spare to ask. */
  #pageOwn: Promise<Upstream[]> | undefined;
  #closing = false;

  constructor(options: SessionTableOptions) {
    this.#options = options;
    const defaults = CONFIG_DEFAULTS.listen.http;
    this.#maxSessions = options.maxSessions ?? defaults.maxSessions;
    this.#maxPerPrincipal = options.maxSessionsPerPrincipal ?? Math.max(1, Math.floor(this.#maxSessions / 4));
    const idleMs = options.sessionIdleMs ?? defaults.sessionIdleMs;
    const abandonedMs = options.abandonedSessionMs ?? defaults.abandonedSessionMs;
    this.pool = new UpstreamPool(options.fleet, { idleMs });
    this.#perSession = options.fleet.perSession;
    this.#sweeper = setInterval(
      () => {
        const now = Date.now();
        for (const entry of this.#sessions.values()) {
          if (now - entry.lastSeen > idleMs) void entry.end('idle');
          else if (
            entry.streamClosedAt !== undefined &&
            entry.active === 0 &&
            now - Math.max(entry.streamClosedAt, entry.lastSeen) > abandonedMs
          )
            void entry.end('abandoned');
        }
      },
      Math.max(10, Math.min(idleMs, abandonedMs, 60_000) / 2),
    );
    this.#sweeper.unref();
  }

  get size(): number {
    return this.#sessions.size;
  }

  get(id: string): SessionEntry | undefined {
    return this.#sessions.get(id);
  }

  /** Starts upstreams ahead of the first client; settles once they have started or failed. */
  prewarm(): Promise<void> {
    this.#warmSpare();
    return Promise.all([this.pool.prewarm(), this.#spare]).then(() => {});
  }

  /** Per-session upstreams the info page may ask for tools without starting processes just for it. */
  async ownForPage(): Promise<Upstream[]> {
    if (!this.#perSession) return [];
    const spared = await this.#spare;
    if (spared) return spared;
    this.#pageOwn ??= this.#options.fleet.startOwn();
    return this.#pageOwn;
  }

  /** Ends every session (their upstreams of their own with them). */
  async closeSessions(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    const entries = [...this.#sessions.values()];
    await Promise.all(entries.map((entry) => entry.end('shutdown').catch(() => {})));
    await Promise.all(entries.map((entry) => entry.session.close()));
  }

  /** Closes what is left: the spare, the page's upstreams and the pool. */
  async close(): Promise<void> {
    await this.closeSessions();
    const left = [...((await this.#spare) ?? []), ...((await this.#pageOwn) ?? [])];
    await Promise.all(left.map((upstream) => upstream.close()));
    await this.pool.close();
  }

  #held(owner: string): number {
    return (
      (this.#opening.get(owner) ?? 0) +
      [...this.#sessions.values()].filter((entry) => entry.owner === owner).length
    );
  }

  #warmSpare(client?: ClientIdentity): void {
    this.#spareFor = client;
    this.#spare = this.#closing || !this.#perSession ? undefined : this.#options.fleet.startOwn(client);
  }

  async #take(principal: string, once: boolean, client: ClientIdentity): Promise<ClientSession> {
    // Claim the spare before awaiting it: two initializes arriving together must not get the same one.
    const claimed = this.#spare;
    const spareFor = this.#spareFor;
    // The next spare is told this client: the same client opening its next session is the common case.
    this.#warmSpare(client);
    let own = await claimed;
    // A spare none of whose upstreams started is no better than starting afresh, nor one told of
    // another client: per-session upstreams are told who their client is and what it declared.
    if (own && (own.every((upstream) => !upstream.available) || !sameClient(spareFor, client))) {
      await Promise.all(own.map((upstream) => upstream.close()));
      own = undefined;
    }
    return openClientSession(this.#options.fleet, {
      pool: this.pool,
      principal,
      once,
      client,
      ...(own ? { own } : {}),
    });
  }

  /**
   * With every session taken, a caller holding fewer than the largest holder
   * gets room: that holder's least recently used idle session is ended. So a
   * few principals at their per-principal cap (four of them fill the default
   * 64) cannot keep everyone else out; sessions with a request running are
   * never ended for it.
   */
  async #makeFairRoom(owner: string): Promise<void> {
    const held = new Map<string, number>();
    for (const entry of this.#sessions.values()) held.set(entry.owner, (held.get(entry.owner) ?? 0) + 1);
    const mine = this.#held(owner);
    let largest: string | undefined;
    for (const [holder, count] of held) {
      if (count > mine + 1 && (largest === undefined || count > (held.get(largest) ?? 0))) largest = holder;
    }
    if (largest === undefined) return;
    const idle = [...this.#sessions.values()]
      .filter((entry) => entry.owner === largest && entry.active === 0)
      .sort((a, b) => a.lastSeen - b.lastSeen)[0];
    if (idle) await idle.end('evicted');
  }

  /**
   * Opens a session on `initialize`. `owner` is the caller its caps count
   * against; `principal` the pool key of its bearer token, undefined for an
   * anonymous caller, whose session is then its own principal.
   */
  async open(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    owner: string,
    principal: string | undefined,
    authInfo?: AuthInfo,
  ) {
    // Counted and reserved before any await, so initializes arriving together cannot all pass the cap.
    const pending = [...this.#opening.values()].reduce((sum, count) => sum + count, 0);
    if (this.#sessions.size + pending >= this.#maxSessions) await this.#makeFairRoom(owner);
    const opened = [...this.#opening.values()].reduce((sum, count) => sum + count, 0);
    if (this.#sessions.size + opened >= this.#maxSessions) {
      sendError(
        res,
        new EnvelopeError('RESOURCE_EXHAUSTED', 'Too many open sessions', { max: this.#maxSessions }),
      );
      return;
    }
    if (this.#held(owner) >= this.#maxPerPrincipal) {
      // The principal's least recently used idle session makes room: clients rarely end
      // sessions (the SDK client's close() sends no DELETE), so an old idle one is abandoned.
      const idle = [...this.#sessions.values()]
        .filter((entry) => entry.owner === owner && entry.active === 0)
        .sort((a, b) => a.lastSeen - b.lastSeen)[0];
      if (idle) await idle.end('evicted');
    }
    if (this.#held(owner) >= this.#maxPerPrincipal) {
      sendError(
        res,
        new EnvelopeError('RESOURCE_EXHAUSTED', 'Too many open sessions for this client', {
          max: this.#maxPerPrincipal,
        }),
      );
      return;
    }
    this.#opening.set(owner, (this.#opening.get(owner) ?? 0) + 1);
    const id = randomUUID();
    // An anonymous session is a principal of its own: its own upstream set (so what an upstream
    // asks reaches only this session's client), rate-limit buckets and artifacts, ended with it.
    const anonymous = principal === undefined;
    const pooled = principal ?? anonymousSession(id);
    if (anonymous && authInfo?.extra) authInfo.extra.principal = pooled;
    let session: ClientSession;
    try {
      session = await this.#take(pooled, anonymous, initializingClient(body));
    } catch (error) {
      const failure =
        error instanceof EnvelopeError ? error : new EnvelopeError('ADAPTER.EXECUTION.FAILED', String(error));
      sendRpcError(res, 502, failure);
      return;
    } finally {
      const count = (this.#opening.get(owner) ?? 1) - 1;
      if (count > 0) this.#opening.set(owner, count);
      else this.#opening.delete(owner);
    }
    const entry = this.#entry(id, session, owner, anonymous ? pooled : owner);
    // Known before the initialize is answered, so the client's next request finds it.
    this.#sessions.set(id, entry);
    await entry.serve(req, res, body, authInfo);
    // An initialize that was refused opened nothing: nothing else would close it.
    if (!entry.opened()) await entry.close();
  }

  /** A session's HTTP side, on the transport its options call for. */
  #entry(
    id: string,
    session: ClientSession,
    owner: string,
    principal: string,
  ): SessionEntry & { opened(): boolean } {
    const { transport, serve, opened } = this.#options.resumable ? this.#resumable(id) : this.#direct(id);
    let reason: SessionCloseReason = 'ended';
    transport.onclose = () => {
      this.#sessions.delete(id);
      void session.close();
      this.#options.onSessionClosed?.(id, reason);
    };
    const connected = session.relay.server.connect(transport);
    const entry = {
      session,
      owner,
      principal,
      active: 0,
      lastSeen: Date.now(),
      // The SDK's resumable transport keeps what it cannot deliver for the client's return.
      listening: !(transport instanceof SessionTransport),
      serve: async (req: IncomingMessage, res: ServerResponse, body: unknown, authInfo?: AuthInfo) => {
        entry.active++;
        try {
          await connected;
          await serve(req, res, body, authInfo);
        } finally {
          entry.active--;
          entry.lastSeen = Date.now();
        }
      },
      close: () => transport.close(),
      end: (why: SessionCloseReason) => {
        reason = why;
        return transport.close();
      },
      opened,
    };
    if (transport instanceof SessionTransport) {
      transport.onstreamchange = (open) => {
        entry.listening = open;
        if (open) delete (entry as SessionEntry).streamClosedAt;
        else (entry as SessionEntry).streamClosedAt = Date.now();
        // The client can now be asked for its roots, which an upstream may have wanted since it started.
        if (open) session.relay.announceRoots();
      };
    }
    // A shared upstream's request outside any call goes to a session that can receive it.
    session.relay.downstream.setReachable(() => entry.listening);
    return entry;
  }

  /** The default: JSON replies, SSE only for requests that send something first (session-transport.ts). */
  #direct(id: string): SessionTransportChoice {
    const transport = new SessionTransport(id);
    return {
      transport,
      serve: (req, res, body, authInfo) => transport.handle(req, res, body, authInfo),
      opened: () => transport.initialized,
    };
  }

  /** Resumable streams: the SDK's transport with a bounded replay store for Last-Event-ID. */
  #resumable(id: string): SessionTransportChoice {
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      eventStore: new BoundedEventStore(),
      retryInterval: this.#options.retryIntervalMs ?? 1000,
    });
    return {
      transport,
      serve: (req, res, body, authInfo) => {
        closeWhenUnread(res, (message) => this.#options.report(new Error(`session ${id}: ${message}`)));
        return transport.handleRequest(Object.assign(req, { auth: authInfo }), res, body);
      },
      opened: () => transport.sessionId !== undefined,
    };
  }
}
