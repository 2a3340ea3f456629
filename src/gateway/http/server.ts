import { randomUUID } from 'node:crypto';
import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport, toWebRequest } from '@modelcontextprotocol/node';
import type { AuthInfo, Transport } from '@modelcontextprotocol/server';
import { isInitializeRequest, isLegacyRequest } from '@modelcontextprotocol/server';
import { describeErrorCode, EnvelopeError } from '../../errors/index.ts';
import { CONFIG_DEFAULTS } from '../defaults.ts';
import { readInbound } from '../jsonrpc/inbound.ts';
import { errorResponse } from '../jsonrpc/messages.ts';
import {
  arrange,
  type ClientSession,
  type GatewayOptions,
  openClientSession,
  startOwnUpstreams,
} from '../relay/client-session.ts';
import { isShared, UpstreamPool } from '../relay/upstream-pool.ts';
import { BoundedEventStore } from '../transports/2025-11-25/event-store.ts';
import { SessionTransport } from '../transports/2025-11-25/session-transport.ts';
import { StatelessHttp } from '../transports/2026-07-28/stateless-http.ts';
import type { Upstream } from '../upstreams/upstream.ts';
import { BearerAuth, type Principal, type TokenGrant } from './auth.ts';
import { DEFAULT_HTTP_PATH } from './endpoint.ts';
import { type PageUpstream, renderInfoPage } from './info-page.ts';
import { checkHostAndOrigin, type OriginPolicy } from './origin.ts';
import { sendJson } from './reply.ts';
import { closeWhenUnread } from './unread-bound.ts';

export interface HttpGatewayOptions extends OriginPolicy {
  gateway: GatewayOptions;
  host?: string;
  port?: number;
  /** Largest request body accepted, in bytes (413 above it). */
  maxBodyBytes?: number;
  /** Bearer tokens, each mapped to a tier. */
  tokens?: readonly TokenGrant[];
  /**
   * Refuse requests without a valid bearer token (default: whenever tokens are
   * given). Fails closed: required with no token configured, every request is refused.
   */
  authRequired?: boolean;
  /** The MCP endpoint's path (default `/mcp`). */
  path?: string;
  /** Most concurrent 2025-era sessions. */
  maxSessions?: number;
  /**
   * Most concurrent 2025-era sessions one principal may hold (a bearer token;
   * an anonymous caller is its remote address), so one client cannot take them all.
   */
  maxSessionsPerPrincipal?: number;
  /** Sessions idle this long are closed; a principal's shared upstreams close this long after its last session. */
  sessionIdleMs?: number;
  /**
   * A session whose client closed its GET stream and sent nothing since is
   * abandoned after this long (clients rarely send DELETE): it is closed, and its
   * per-session upstream processes end. Default 30 s.
   */
  abandonedSessionMs?: number;
  /** Told of every 2025-era session that closes, and why. */
  onSessionClosed?: (id: string, reason: SessionCloseReason) => void;
  /** Keep recent SSE events per session so a client can resume with Last-Event-ID (default false). */
  resumable?: boolean;
  /** The SSE `retry` hint sent to resumable clients, in milliseconds. */
  retryIntervalMs?: number;
  /**
   * Start upstreams at startup, ahead of need (default true): the first
   * principal's shared upstreams, and one session's worth of `per-session`
   * upstreams. Whichever way, each session that takes per-session upstreams
   * starts the next session's.
   */
  warmSpare?: boolean;
  mode?: string;
  title?: string;
  onError?: (error: unknown) => void;
}

export interface HttpGateway {
  url: string;
  server: HttpServer;
  /** Settles once the upstreams started ahead have started or failed (at once without a warm spare). */
  ready: Promise<void>;
  sessionCount(): number;
  close(): Promise<void>;
}

/** A 2025-era session's HTTP side: the transport that serves its requests. */
interface SessionEntry {
  serve(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo?: AuthInfo): Promise<void>;
  close(): Promise<void>;
  session: ClientSession;
  lastSeen: number;
  /** Who opened it: only the same principal may use or end it. */
  owner: string;
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

/** Whose a request is: its bearer token, else (anonymous) the address it came from. */
function ownerOf(req: IncomingMessage, principal?: Principal): string {
  return principal ? `token:${principal.tokenId}` : `anonymous:${req.socket.remoteAddress ?? 'unknown'}`;
}

/** Whose upstream connections a request uses: its bearer token's; anonymous callers share one set. */
function poolKeyOf(principal?: Principal): string {
  return principal?.tokenId ?? '';
}

interface SessionTransportChoice {
  transport: Transport;
  serve: SessionEntry['serve'];
  opened(): boolean;
}

/** The first protocol revision of the stateless era. */
const MODERN_ERA = '2026-07-28';

/** An HTTP-level error: `{ "error": { "code", "message" } }` with the status from the error table. */
function sendError(res: ServerResponse, error: EnvelopeError, headers: Record<string, string> = {}): void {
  sendJson(res, describeErrorCode(error.code).httpStatus, { error: error.toJSON() }, headers);
}

/** A JSON-RPC error for a request the SDK never saw (a session that is gone, or could not open). */
function sendRpcError(res: ServerResponse, status: number, error: EnvelopeError, jsonRpcCode?: number): void {
  sendJson(res, status, errorResponse(null, error, jsonRpcCode));
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new EnvelopeError('INPUT_TOO_LARGE', `Request body exceeds ${limit} bytes`, { limit_bytes: limit });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // Drain the rest unread so the connection stays usable for the 413.
      req.off('data', onData);
      req.resume();
      reject(tooLarge());
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * A request whose MCP-Protocol-Version header names 2026-07-28 or later goes
 * straight to the stateless handler, which classifies it again anyway; only the
 * others pay for the SDK's classification on a Web Request (about 65 µs).
 */
function claimsModernEra(req: IncomingMessage): boolean {
  const version = req.headers['mcp-protocol-version'];
  return typeof version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= MODERN_ERA;
}

function accepts(req: IncomingMessage, type: string): boolean {
  return (req.headers.accept ?? '').toLowerCase().includes(type);
}

/** What the page may say of each upstream (info-page.ts decides how much of it shows). */
function pageUpstreams(options: GatewayOptions): PageUpstream[] {
  return options.upstreams.map((spec) => ({
    name: spec.name,
    ...(spec.kind === 'stdio' ? { kind: 'stdio' as const } : { kind: 'http' as const, url: spec.url }),
    ...(options.status ? { state: options.status.get(spec.name).state } : {}),
  }));
}

/**
 * Serves the relay over Streamable HTTP on node:http. 2025-era clients get a
 * stateful session (its own relay and transport, so server-to-client requests
 * work and streams resume with Last-Event-ID); 2026-07-28 requests are served
 * statelessly. Both use their principal's upstream connections, shared through
 * the pool (pool.ts), except for upstreams configured `per-session`, which each
 * 2025-era session starts for itself. In front of both: Host and Origin checks,
 * a body size limit, optional bearer tokens.
 */
export async function startHttpGateway(options: HttpGatewayOptions): Promise<HttpGateway> {
  const maxBody = options.maxBodyBytes ?? CONFIG_DEFAULTS.listen.http.bodyLimitBytes;
  const maxSessions = options.maxSessions ?? CONFIG_DEFAULTS.listen.http.maxSessions;
  const maxPerPrincipal = options.maxSessionsPerPrincipal ?? Math.max(1, Math.floor(maxSessions / 4));
  // Sessions being opened (awaiting their upstreams) count against the limits too.
  const opening = new Map<string, number>();
  const held = (owner: string): number =>
    (opening.get(owner) ?? 0) + [...sessions.values()].filter((entry) => entry.owner === owner).length;
  const idleMs = options.sessionIdleMs ?? CONFIG_DEFAULTS.listen.http.sessionIdleMs;
  const auth = new BearerAuth(options.tokens ?? []);
  const authRequired = options.authRequired ?? auth.enabled;
  const mcpPath = options.path ?? DEFAULT_HTTP_PATH;
  const sessions = new Map<string, SessionEntry>();
  const report = options.onError ?? (() => {});
  let closing = false;
  // Shared upstreams: one set per principal, for its sessions and its stateless requests alike.
  const pool = new UpstreamPool(options.gateway, { idleMs });
  // Upstreams that each session starts for itself (sharing: 'per-session'), if any.
  const perSession = options.gateway.upstreams.some((upstream) => !isShared(upstream));
  // One session's per-session upstreams kept started ahead of need, so an initialize does not
  // wait for them to boot. Shared upstreams need no spare: a new session starts no process.
  let spare: Promise<Upstream[]> | undefined;
  const warmSpare = () => {
    spare = closing || !perSession ? undefined : startOwnUpstreams(options.gateway);
  };
  const takeSession = async (principal: string): Promise<ClientSession> => {
    // Claim the spare before awaiting it: two initializes arriving together must not get the same one.
    const claimed = spare;
    warmSpare();
    let own = await claimed;
    // A spare none of whose upstreams started is no better than starting afresh.
    if (own?.every((upstream) => !upstream.available)) {
      await Promise.all(own.map((upstream) => upstream.close()));
      own = undefined;
    }
    return openClientSession(options.gateway, { pool, principal, ...(own ? { own } : {}) });
  };

  // Per-session upstreams kept for the info page when there is no spare to ask.
  let pageOwn: Promise<Upstream[]> | undefined;

  const stateless = new StatelessHttp({
    gateway: options.gateway,
    pool,
    maxBodyBytes: maxBody,
    onError: report,
  });

  async function newSession(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    owner: string,
    principal: string,
    authInfo?: AuthInfo,
  ) {
    // Counted and reserved before any await, so initializes arriving together cannot all pass the cap.
    const pending = [...opening.values()].reduce((sum, count) => sum + count, 0);
    if (sessions.size + pending >= maxSessions) {
      sendError(res, new EnvelopeError('RESOURCE_EXHAUSTED', 'Too many open sessions', { max: maxSessions }));
      return;
    }
    if (held(owner) >= maxPerPrincipal) {
      // The principal's least recently used idle session makes room: clients rarely end
      // sessions (the SDK client's close() sends no DELETE), so an old idle one is abandoned.
      const idle = [...sessions.values()]
        .filter((entry) => entry.owner === owner && entry.active === 0)
        .sort((a, b) => a.lastSeen - b.lastSeen)[0];
      if (idle) await idle.end('evicted');
    }
    if (held(owner) >= maxPerPrincipal) {
      sendError(
        res,
        new EnvelopeError('RESOURCE_EXHAUSTED', 'Too many open sessions for this client', {
          max: maxPerPrincipal,
        }),
      );
      return;
    }
    opening.set(owner, (opening.get(owner) ?? 0) + 1);
    let session: ClientSession;
    try {
      session = await takeSession(principal);
    } catch (error) {
      const failure =
        error instanceof EnvelopeError ? error : new EnvelopeError('ADAPTER.EXECUTION.FAILED', String(error));
      sendRpcError(res, 502, failure);
      return;
    } finally {
      const count = (opening.get(owner) ?? 1) - 1;
      if (count > 0) opening.set(owner, count);
      else opening.delete(owner);
    }
    const id = randomUUID();
    const entry = sessionEntry(id, session, owner);
    // Known before the initialize is answered, so the client's next request finds it.
    sessions.set(id, entry);
    await entry.serve(req, res, body, authInfo);
    // An initialize that was refused opened nothing: nothing else would close it.
    if (!entry.opened()) await entry.close();
  }

  /** A session's HTTP side, on the transport its options call for. */
  function sessionEntry(
    id: string,
    session: ClientSession,
    owner: string,
  ): SessionEntry & { opened(): boolean } {
    const { transport, serve, opened } = options.resumable ? resumableTransport(id) : directTransport(id);
    let reason: SessionCloseReason = 'ended';
    transport.onclose = () => {
      sessions.delete(id);
      void session.close();
      options.onSessionClosed?.(id, reason);
    };
    const connected = session.relay.server.connect(transport);
    const entry = {
      session,
      owner,
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
      };
    }
    // A shared upstream's request outside any call goes to a session that can receive it.
    session.relay.downstream.setReachable(() => entry.listening);
    return entry;
  }

  /** The default: JSON replies, SSE only for requests that send something first (session-transport.ts). */
  function directTransport(id: string): SessionTransportChoice {
    const transport = new SessionTransport(id);
    return {
      transport,
      serve: (req, res, body, authInfo) => transport.handle(req, res, body, authInfo),
      opened: () => transport.initialized,
    };
  }

  /** Resumable streams: the SDK's transport with a bounded replay store for Last-Event-ID. */
  function resumableTransport(id: string): SessionTransportChoice {
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      eventStore: new BoundedEventStore(),
      retryInterval: options.retryIntervalMs ?? 1000,
    });
    return {
      transport,
      serve: (req, res, body, authInfo) => {
        closeWhenUnread(res, (message) => report(new Error(`session ${id}: ${message}`)));
        return transport.handleRequest(Object.assign(req, { auth: authInfo }), res, body);
      },
      opened: () => transport.sessionId !== undefined,
    };
  }

  async function handleMcp(req: IncomingMessage, res: ServerResponse, principal?: Principal): Promise<void> {
    const authInfo: AuthInfo | undefined = principal
      ? { token: principal.tokenId, clientId: principal.tokenId, scopes: [], extra: { tier: principal.tier } }
      : undefined;
    const sessionId = req.headers['mcp-session-id'];
    const method = req.method ?? 'GET';

    if (method === 'GET' && !sessionId && accepts(req, 'text/html') && !accepts(req, 'text/event-stream')) {
      await sendInfoPage(res, poolKeyOf(principal));
      return;
    }
    if (method === 'GET' && !accepts(req, 'text/event-stream')) {
      sendError(
        res,
        new EnvelopeError(
          'METHOD_NOT_ALLOWED',
          `GET ${mcpPath} serves SSE streams (Accept: text/event-stream) and, to a browser (Accept: text/html), a page listing the tools and how to connect`,
        ),
        {
          allow: 'GET, POST, DELETE',
        },
      );
      return;
    }
    if (method !== 'GET' && method !== 'POST' && method !== 'DELETE') {
      sendError(res, new EnvelopeError('METHOD_NOT_ALLOWED', `${method} is not supported on /mcp`), {
        allow: 'GET, POST, DELETE',
      });
      return;
    }

    let body: unknown;
    if (method === 'POST') {
      const inbound = readInbound(await readBody(req, maxBody), 'body');
      if (inbound.kind !== 'message') {
        if (inbound.kind === 'refused') {
          // The table's status: 400 for a malformed body, 413 for one with too many members.
          sendJson(
            res,
            inbound.error.httpStatus,
            errorResponse(inbound.id, inbound.error, inbound.jsonRpcCode),
          );
        }
        return;
      }
      body = inbound.value;
    }

    if (typeof sessionId === 'string') {
      const entry = sessions.get(sessionId);
      // Another principal's session is as unknown as one that never existed.
      if (!entry || entry.owner !== ownerOf(req, principal)) {
        sendRpcError(res, 404, new EnvelopeError('NOT_FOUND', 'Session not found'), -32001);
        return;
      }
      entry.lastSeen = Date.now();
      await entry.serve(req, res, body, authInfo);
      return;
    }
    if (method === 'POST') {
      const messages = Array.isArray(body) ? body : [body];
      if (messages.some((message) => message?.method === 'initialize' && isInitializeRequest(message))) {
        await newSession(req, res, body, ownerOf(req, principal), poolKeyOf(principal), authInfo);
        return;
      }
      if (claimsModernEra(req) || !(await isLegacyRequest(await toWebRequest(req, body), body))) {
        await stateless.handle(req, res, body, authInfo);
        return;
      }
    }
    sendRpcError(
      res,
      400,
      new EnvelopeError('INVALID_INPUT', 'Bad Request: Mcp-Session-Id header is required'),
      -32000,
    );
  }

  async function sendInfoPage(res: ServerResponse, principal: string): Promise<void> {
    let tools: { name: string; description?: string }[] = [];
    const lease = await pool.acquire(principal).catch(() => undefined);
    try {
      // The caller's shared upstreams, and the spare's per-session ones, answer tools/list
      // without starting processes just for a page.
      let own: Upstream[] = [];
      if (perSession) {
        const spared = await spare;
        if (!spared) pageOwn ??= startOwnUpstreams(options.gateway);
        own = spared ?? (await (pageOwn as Promise<Upstream[]>));
      }
      const upstreams = arrange(options.gateway, lease?.set.upstreams ?? [], own);
      for (const upstream of upstreams) {
        if (!upstream.available || !upstream.capabilities.tools) continue;
        const listed = await upstream.request('tools/list', undefined, { timeoutMs: 5000 });
        const names = (listed.tools as { name: string; description?: string }[] | undefined) ?? [];
        const prefix = upstreams.length > 1 ? `${upstream.name}__` : '';
        tools = tools.concat(
          names.map((tool) => ({ name: prefix + tool.name, description: tool.description })),
        );
      }
    } catch {
      // The page still explains the endpoint when the upstream is down.
    } finally {
      lease?.release();
    }
    const address = server.address() as AddressInfo;
    const html = renderInfoPage({
      title: options.title ?? 'mcp-envelope gateway',
      mode: options.mode ?? 'passthrough',
      endpoint: `http://${options.host ?? '127.0.0.1'}:${address.port}${mcpPath}`,
      upstreams: pageUpstreams(options.gateway),
      tools,
      authRequired,
    });
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': "default-src 'none'",
      'x-content-type-options': 'nosniff',
    });
    res.end(html);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    checkHostAndOrigin(req.headers.host, req.headers.origin, options);
    if (path === '/healthz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, new EnvelopeError('METHOD_NOT_ALLOWED', 'Use GET /healthz'), { allow: 'GET' });
        return;
      }
      // Anyone may ask, token or not: states only. Why an upstream is down, what it wrote and how
      // busy the gateway is stay on the operator's side.
      const board = options.gateway.status;
      sendJson(res, 200, {
        status: board?.summary() ?? 'ok',
        ...(board
          ? { upstreams: Object.fromEntries(board.all().map(({ name, status }) => [name, status.state])) }
          : {}),
      });
      return;
    }
    if (path !== mcpPath) {
      // The root says where things are; anything else is unknown.
      if (path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
        sendJson(res, 200, {
          mcp: mcpPath,
          page: `GET ${mcpPath} with Accept: text/html (a browser) shows the tools and how to connect`,
          health: '/healthz',
        });
        return;
      }
      sendError(res, new EnvelopeError('NOT_FOUND', `No route for ${path}; MCP is served at ${mcpPath}`));
      return;
    }
    // A presented token is always checked; without one, the caller is anonymous unless auth is required.
    let principal: Principal | undefined;
    if (authRequired || (auth.enabled && req.headers.authorization !== undefined))
      principal = auth.authenticate(req.headers.authorization);
    await handleMcp(req, res, principal);
  }

  const server = createServer((req, res) => {
    if (closing) {
      sendError(res, new EnvelopeError('DEPENDENCY_UNAVAILABLE', 'The gateway is shutting down'));
      return;
    }
    route(req, res).catch((error: unknown) => {
      if (error instanceof EnvelopeError) {
        const headers: Record<string, string> =
          error.code === 'AUTH_REQUIRED' || error.code === 'UNAUTHORIZED'
            ? { 'www-authenticate': 'Bearer realm="mcp-envelope"' }
            : {};
        sendError(res, error, headers);
        return;
      }
      report(error);
      sendError(res, new EnvelopeError('INTERNAL_ERROR', 'The gateway failed to handle the request'));
    });
  });
  // Node's 5 s keep-alive lets the server close an idle connection just as a busy client
  // sends on it ("other side closed"); clients end their own idle connections well before this.
  server.keepAliveTimeout = 65_000;

  const abandonedMs = options.abandonedSessionMs ?? CONFIG_DEFAULTS.listen.http.abandonedSessionMs;
  const sweeper = setInterval(
    () => {
      const now = Date.now();
      for (const entry of sessions.values()) {
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
  sweeper.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  let ready: Promise<void> = Promise.resolve();
  if (options.warmSpare !== false) {
    warmSpare();
    const started = spare;
    ready = Promise.all([pool.prewarm(), started]).then(() => {});
  }
  const address = server.address() as AddressInfo;
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${hostForUrl}:${address.port}${mcpPath}`,
    server,
    ready,
    sessionCount: () => sessions.size,
    async close() {
      closing = true;
      clearInterval(sweeper);
      await Promise.all([...sessions.values()].map((entry) => entry.end('shutdown').catch(() => {})));
      await Promise.all([...sessions.values()].map((entry) => entry.session.close()));
      await stateless.close().catch(() => {});
      const left = [...((await spare) ?? []), ...((await pageOwn) ?? [])];
      await Promise.all(left.map((upstream) => upstream.close()));
      await pool.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
