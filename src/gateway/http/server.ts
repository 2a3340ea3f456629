import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { toWebRequest } from '@modelcontextprotocol/node';
import type { AuthInfo, Tool } from '@modelcontextprotocol/server';
import { isInitializeRequest, isLegacyRequest } from '@modelcontextprotocol/server';
import { STATELESS_WIRE_REVISION } from '../../errors/codes.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { CONFIG_DEFAULTS } from '../defaults.ts';
import { RATE_LIMITED_LISTENER, retryAfterOnDenial } from '../enforcement/rate-limits.ts';
import { readInbound } from '../jsonrpc/inbound.ts';
import { errorResponse } from '../jsonrpc/messages.ts';
import type { UpstreamFleet } from '../relay/upstream-fleet.ts';
import { type SessionCloseReason, SessionTable } from '../transports/2025-11-25/sessions.ts';

export type { SessionCloseReason } from '../transports/2025-11-25/sessions.ts';

import { StatelessHttp } from '../transports/2026-07-28/stateless-http.ts';
import { BearerAuth, type Principal, type TokenGrant } from './auth.ts';
import { DEFAULT_HTTP_PATH } from './endpoint.ts';
import { type PageTool, type PageUpstream, renderInfoPage } from './info-page.ts';
import { checkHostAndOrigin, type OriginPolicy } from './origin.ts';
import { sendError, sendJson, sendRpcError } from './reply.ts';
import { isServerCardPath, serverCardPaths, serveServerCard } from './server-card.ts';

export interface HttpGatewayOptions extends OriginPolicy {
  /** The gateway's upstreams, built once for it (upstream-fleet.ts). */
  fleet: UpstreamFleet;
  host?: string;
  port?: number;
  /** Largest request body accepted, in bytes (413 above it). */
  maxBodyBytes?: number;
  /** How long a request's headers and body may take to arrive; default REQUEST_READ_TIMEOUT_MS. */
  requestReadTimeoutMs?: number;
  /** How long a download may go with its client taking nothing; default DOWNLOAD_SEND_TIMEOUT_MS. */
  downloadSendTimeoutMs?: number;
  /** Downloads one address may have running at once; default DOWNLOADS_PER_ADDRESS. */
  downloadsPerAddress?: number;
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
  /**
   * Downloads of artifacts (`GET <path>?id=…`). No bearer token is asked: the
   * signed id is the capability. Host and Origin checks apply as everywhere.
   */
  downloads?: { path: string; handler: (req: IncomingMessage, res: ServerResponse) => Promise<void> };
  /** Told the endpoint's URL once the server listens, before any upstream is started. */
  onListening?: (url: string) => void;
}

export interface HttpGateway {
  url: string;
  server: HttpServer;
  /** Settles once the upstreams started ahead have started or failed (at once without a warm spare). */
  ready: Promise<void>;
  sessionCount(): number;
  close(): Promise<void>;
}

/** Whose a request is: its bearer token, else (anonymous) the address it came from. */
/** Bodies from this size on are parsed in an event-loop turn of their own. */
const LARGE_BODY_BYTES = 256 * 1024;

/** How long a request's headers and body may take to arrive. */
export const REQUEST_READ_TIMEOUT_MS = 30_000;
/** How long a download may go without its client taking a byte before it is cut. */
export const DOWNLOAD_SEND_TIMEOUT_MS = 30_000;
/** Downloads one address may have running at once (needing no token, they are counted by address). */
export const DOWNLOADS_PER_ADDRESS = 8;

/**
 * A download, bounded: an address gets DOWNLOADS_PER_ADDRESS at once (429
 * RATE_LIMITED past them), and one whose client stops reading is cut after
 * DOWNLOAD_SEND_TIMEOUT_MS, so stalled readers cannot hold buffers and file
 * handles without limit (1,500 of them took 2.2 GB).
 */
async function downloadBounded(
  req: IncomingMessage,
  res: ServerResponse,
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  downloadsByAddress: Map<string, number>,
  bounds: { perAddress: number; sendTimeoutMs: number; onCut: (address: string) => void },
): Promise<void> {
  const address = req.socket.remoteAddress ?? 'unknown';
  const running = downloadsByAddress.get(address) ?? 0;
  if (running >= bounds.perAddress) {
    sendError(
      res,
      new EnvelopeError(
        'RATE_LIMITED',
        `${running} downloads are running from this address; try again once one ends`,
        {
          limit: DOWNLOADS_PER_ADDRESS,
        },
      ),
      { 'retry-after': '1' },
    );
    return;
  }
  downloadsByAddress.set(address, running + 1);
  res.setTimeout(bounds.sendTimeoutMs, () => {
    res.destroy();
    bounds.onCut(address);
  });
  try {
    await handler(req, res);
  } finally {
    const left = (downloadsByAddress.get(address) ?? 1) - 1;
    if (left > 0) downloadsByAddress.set(address, left);
    else downloadsByAddress.delete(address);
  }
}

function ownerOf(req: IncomingMessage, principal?: Principal): string {
  return principal ? `token:${principal.tokenId}` : `anonymous:${req.socket.remoteAddress ?? 'unknown'}`;
}

/**
 * Whose upstream connections a request uses: its bearer token's. Anonymous 2026-07-28 requests
 * share one set that never guesses whose a server-to-client request is; an anonymous 2025-era
 * session has a set of its own (sessions.ts).
 */
function poolKeyOf(principal?: Principal): string {
  return principal?.tokenId ?? '';
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
  return (
    typeof version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= STATELESS_WIRE_REVISION
  );
}

function accepts(req: IncomingMessage, type: string): boolean {
  return (req.headers.accept ?? '').toLowerCase().includes(type);
}

/** What the page may say of each upstream (info-page.ts decides how much of it shows). */
function pageUpstreams(fleet: UpstreamFleet): PageUpstream[] {
  const status = fleet.status;
  return fleet.configured.map((spec) => ({
    name: spec.name,
    ...(spec.kind === 'stdio' ? { kind: 'stdio' as const } : { kind: 'http' as const, url: spec.url }),
    ...(status ? { state: status.get(spec.name).state } : {}),
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
  const auth = new BearerAuth(options.tokens ?? []);
  const authRequired = options.authRequired ?? auth.enabled;
  const mcpPath = options.path ?? DEFAULT_HTTP_PATH;
  const report = options.onError ?? (() => {});
  let closing = false;
  const table = new SessionTable({ ...options, report });
  const { pool } = table;

  const stateless = new StatelessHttp({
    fleet: options.fleet,
    pool,
    maxBodyBytes: maxBody,
    onError: report,
  });

  /** Downloads running, by the address they come from. */
  const downloadsByAddress = new Map<string, number>();

  async function handleMcp(req: IncomingMessage, res: ServerResponse, principal?: Principal): Promise<void> {
    // `extra.principal` names the principal for rate limits, artifacts and input rounds: its token,
    // else (anonymous) its address, or within an anonymous 2025-era session the session itself.
    const extra: Record<string, unknown> = { principal: ownerOf(req, principal) };
    const authInfo: AuthInfo = principal
      ? {
          token: principal.tokenId,
          clientId: principal.tokenId,
          scopes: [],
          extra: { tier: principal.tier, ...extra },
        }
      : { token: '', clientId: '', scopes: [], extra };
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
      const bytes = await readBody(req, maxBody);
      // A large body is parsed in a turn of its own, and handled in the next: what arrived
      // meanwhile (another client's ping) goes first each time.
      const large = bytes.length > LARGE_BODY_BYTES;
      if (large) await nextTurn();
      const inbound = readInbound(bytes, 'body');
      if (large) await nextTurn();
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
      // A denied tools/call answered alone gets a Retry-After header (JSON responses).
      const onRateLimited = retryAfterOnDenial(req, res, body);
      if (onRateLimited && authInfo.extra) authInfo.extra[RATE_LIMITED_LISTENER] = onRateLimited;
    }

    if (typeof sessionId === 'string') {
      const entry = table.get(sessionId);
      // Another principal's session is as unknown as one that never existed.
      if (!entry || entry.owner !== ownerOf(req, principal)) {
        sendRpcError(res, 404, new EnvelopeError('NOT_FOUND', 'Session not found'), -32001);
        return;
      }
      entry.lastSeen = Date.now();
      if (authInfo.extra) authInfo.extra.principal = entry.principal;
      await entry.serve(req, res, body, authInfo);
      return;
    }
    if (method === 'POST') {
      const messages = Array.isArray(body) ? body : [body];
      if (messages.some((message) => message?.method === 'initialize' && isInitializeRequest(message))) {
        await table.open(req, res, body, ownerOf(req, principal), principal?.tokenId, authInfo);
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
    let tools: PageTool[] = [];
    const lease = await pool.acquire(principal).catch(() => undefined);
    try {
      // The caller's shared upstreams, and the spare's per-session ones, answer tools/list
      // without starting processes just for a page.
      const own = await table.ownForPage();
      const upstreams = options.fleet.arrange(lease?.set.upstreams ?? [], own);
      for (const upstream of upstreams) {
        if (!upstream.available || !upstream.capabilities.tools) continue;
        const listed = await upstream.request('tools/list', undefined, { timeoutMs: 5000 });
        const names = (listed.tools as Tool[] | undefined) ?? [];
        const prefix = upstreams.length > 1 ? `${upstream.name}__` : '';
        // Listing a tool is when its schemas are checked; the page says which ones cannot be.
        for (const tool of names) options.fleet.options.outputSchemaFor?.(tool, upstream.name);
        const defects = options.fleet.status?.schemaDefects(upstream.name) ?? [];
        tools = tools.concat(
          names.map((tool) => {
            const broken = defects.filter((defect) => defect.tool === tool.name).map(({ schema }) => schema);
            return {
              name: prefix + tool.name,
              description: tool.description,
              ...(broken.length > 0 ? { defect: `its ${broken.join(' and ')} cannot be compiled` } : {}),
            };
          }),
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
      upstreams: pageUpstreams(options.fleet),
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
      const board = options.fleet.status;
      const defects = board?.schemaDefectSummary();
      sendJson(res, 200, {
        status: board?.summary() ?? 'ok',
        ...(board
          ? { upstreams: Object.fromEntries(board.all().map(({ name, status }) => [name, status.state])) }
          : {}),
        // Listed tools whose schemas cannot be compiled, by name only (the info page lists tools too).
        ...(defects && Object.keys(defects).length > 0 ? { schema_defects: defects } : {}),
      });
      return;
    }
    if (options.downloads && path === options.downloads.path && path !== mcpPath) {
      await downloadBounded(req, res, options.downloads.handler, downloadsByAddress, {
        perAddress: options.downloadsPerAddress ?? DOWNLOADS_PER_ADDRESS,
        sendTimeoutMs: options.downloadSendTimeoutMs ?? DOWNLOAD_SEND_TIMEOUT_MS,
        onCut: (from) =>
          report(
            new EnvelopeError(
              'TIMEOUT',
              `download to ${from} cut: its client took nothing for ${options.downloadSendTimeoutMs ?? DOWNLOAD_SEND_TIMEOUT_MS} ms`,
            ),
          ),
      });
      return;
    }
    if (isServerCardPath(path, mcpPath)) {
      serveServerCard(req, res, { gateway: options.gateway, mcpPath, auth, authRequired });
      return;
    }
    if (path !== mcpPath) {
      // The root says where things are; anything else is unknown.
      if (path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
        sendJson(res, 200, {
          mcp: mcpPath,
          page: `GET ${mcpPath} with Accept: text/html (a browser) shows the tools and how to connect`,
          health: '/healthz',
          card: serverCardPaths(mcpPath)[0],
          ...(options.downloads ? { download: `${options.downloads.path}?id=<download id>` } : {}),
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

  const requestReadTimeoutMs = options.requestReadTimeoutMs ?? REQUEST_READ_TIMEOUT_MS;
  // Requests past their read timeout are found by a periodic check (Node's default: every 30 s).
  const checking = Math.max(100, Math.min(1000, requestReadTimeoutMs / 2));
  const server = createServer({ connectionsCheckingInterval: checking }, (req, res) => {
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
  // A request (headers and body) must have arrived within this: a body stalled one byte short
  // held its buffer for Node's default 300 s, and 300 such bodies held 1.2 GB.
  server.requestTimeout = requestReadTimeoutMs;
  server.headersTimeout = Math.min(server.headersTimeout, server.requestTimeout);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${hostForUrl}:${address.port}${mcpPath}`;
  // Before any upstream starts, so those told the gateway's address are told the real one.
  options.onListening?.(url);
  const ready = options.warmSpare !== false ? table.prewarm() : Promise.resolve();

  return {
    url,
    server,
    ready,
    sessionCount: () => table.size,
    async close() {
      closing = true;
      await table.closeSessions();
      await stateless.close().catch(() => {});
      await table.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
