import type { KeyObject } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EnvelopeError } from '../../errors/index.ts';
import type { Ledger } from '../../ledger/index.ts';
import { createLedgerWeb, isLedgerPath, STYLESHEET_PATH, sendStylesheet } from '../../ledger/web/index.ts';
import { CONFIG_DEFAULTS } from '../defaults.ts';
import type { UpstreamFleet } from '../relay/upstream-fleet.ts';
import { type SessionCloseReason, SessionTable } from '../transports/2025-11-25/sessions.ts';
import { StatelessHttp } from '../transports/2026-07-28/stateless-http.ts';
import { Authenticator, authenticate, BearerAuth, type TokenGrant } from './auth.ts';
import { readMessage } from './body.ts';
import { dispatchByEra, type EraHandlers, refuseMethod } from './dispatch.ts';
import {
  DOWNLOAD_SEND_TIMEOUT_MS,
  DOWNLOADS_PER_ADDRESS,
  type DownloadBounds,
  type DownloadHandler,
  downloadBounded,
  type RunningDownloads,
} from './downloads.ts';
import { DEFAULT_HTTP_PATH } from './endpoint.ts';
import { sendHealth } from './health.ts';
import { type InfoPageSource, sendInfoPage, wantsInfoPage } from './info-page.ts';
import { METRICS_PATH, sendMetrics } from './metrics.ts';
import { isProtectedResourcePath, serveProtectedResource } from './oauth/metadata-route.ts';
import { type OAuthOptions, OAuthResourceServer } from './oauth/resource-server.ts';
import { allowedBy, checkOrigin, type OriginPolicy } from './origin.ts';
import { retryAfterOnDenial } from './rate-limit.ts';
import { sendError, sendJson } from './reply.ts';
import { openScope, type RequestScope } from './scope.ts';
import { isServerCardPath, serverCardPaths, serveServerCard } from './server-card.ts';

export type { SessionCloseReason } from '../transports/2025-11-25/sessions.ts';

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
   * OAuth access tokens (the gateway as an OAuth 2.1 resource server), beside
   * or instead of `tokens`: a presented token that is not one of `tokens` is
   * checked as an access token.
   */
  oauth?: OAuthOptions;
  /**
   * Refuse requests without a valid bearer token (default: whenever tokens or
   * OAuth are given). Fails closed: required with no token configured, every request is refused.
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
  downloads?: { path: string; handler: DownloadHandler };
  /**
   * The Prometheus text of the gateway's metrics, served at `GET /metrics`
   * behind the bearer-token guard; absent, there is no such route.
   */
  metrics?: () => Promise<string>;
  /** Told the endpoint's URL once the server listens, before any upstream is started. */
  onListening?: (url: string) => void;
  /**
   * The gateway's ledger: its viewer is served under /ledger, behind the same
   * bearer tokens (or a session from its login form), and the page lists its latest calls.
   */
  ledger?: Ledger;
  /** The key records and checkpoints are signed with (the public half of `signing`), for the viewer's checks. */
  ledgerPublicKey?: KeyObject;
}

export interface HttpGateway {
  url: string;
  server: HttpServer;
  /** Settles once the upstreams started ahead have started or failed (at once without a warm spare). */
  ready: Promise<void>;
  sessionCount(): number;
  close(): Promise<void>;
}

/** How long a request's headers and body may take to arrive. */
export const REQUEST_READ_TIMEOUT_MS = 30_000;

/** The root says where things are. */
function sendIndex(scope: RequestScope, mcpPath: string, downloadPath: string | undefined): void {
  sendJson(scope.res, 200, {
    mcp: mcpPath,
    page: `GET ${mcpPath} with Accept: text/html (a browser) shows the tools and how to connect`,
    health: '/healthz',
    card: serverCardPaths(mcpPath)[0],
    ...(downloadPath !== undefined ? { download: `${downloadPath}?id=<download id>` } : {}),
  });
}

/**
 * Serves the relay over Streamable HTTP on node:http. 2025-era clients get a
 * stateful session (its own relay and transport, so server-to-client requests
 * work and streams resume with Last-Event-ID); 2026-07-28 requests are served
 * statelessly. Both use their principal's upstream connections, shared through
 * the pool (upstream-pool.ts), except for upstreams configured `per-session`, which each
 * 2025-era session starts for itself.
 *
 * What follows is a route table: `/healthz`, downloads, the protected
 * resource metadata (with OAuth), the server card, the MCP path, the ledger
 * viewer under `/ledger` (src/ledger/web/; its own token or session guard),
 * the root. Every request goes through the Host/Origin guard first; on the MCP
 * path, the bearer-token guard, then the page for a browser, else the body
 * and rate-limit guards and the era's handler (dispatch.ts). Each guard is a
 * function of the request's scope (scope.ts) and either lets it pass, answers
 * it, or throws the EnvelopeError that the route answers.
 */
export async function startHttpGateway(options: HttpGatewayOptions): Promise<HttpGateway> {
  const maxBody = options.maxBodyBytes ?? CONFIG_DEFAULTS.listen.http.bodyLimitBytes;
  const auth = new Authenticator(new BearerAuth(options.tokens ?? []), options.oauth !== undefined);
  const authRequired = options.authRequired ?? auth.enabled;
  const allowed = allowedBy(options);
  const mcpPath = options.path ?? DEFAULT_HTTP_PATH;
  const downloadPath = options.downloads?.path;
  const report = options.onError ?? (() => {});
  let closing = false;
  const sessions = new SessionTable({ ...options, report });
  const stateless = new StatelessHttp({
    fleet: options.fleet,
    pool: sessions.pool,
    maxBodyBytes: maxBody,
    onError: report,
  });
  const eras: EraHandlers = { sessions, stateless };
  const page: InfoPageSource = {
    fleet: options.fleet,
    pool: sessions.pool,
    ownForPage: () => sessions.ownForPage(),
    title: options.title ?? 'mcp-envelope gateway',
    mode: options.mode ?? 'passthrough',
    endpoint: () =>
      `http://${options.host ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}${mcpPath}`,
    authRequired,
    ...(options.ledger ? { ledger: options.ledger } : {}),
  };
  /**
   * Whether a token opens the ledger's pages, which show every caller's calls: a static token, or
   * an access token (bearer, unbound: pages send no DPoP proof) carrying `auth.oauth.ledgerScope`
   * besides the scopes every request needs. Anything that fails, the authorization server down
   * included, opens nothing.
   */
  async function opensLedger(token: string): Promise<boolean> {
    if (auth.static.accepts(token)) return true;
    const oauth = auth.oauth;
    const scope = options.oauth?.ledgerScope;
    if (!oauth || scope === undefined) return false;
    try {
      const { identity } = await oauth.authenticate({
        scheme: 'bearer',
        token,
        method: 'GET',
        url: `${oauth.origin}/ledger`,
      });
      return identity.scopes.includes(scope);
    } catch {
      return false;
    }
  }
  // The viewer takes the gateway's static tokens, and access tokens with `auth.oauth.ledgerScope`.
  const ledgerWeb = options.ledger
    ? createLedgerWeb({
        ledger: options.ledger,
        ...(options.ledgerPublicKey ? { publicKey: options.ledgerPublicKey } : {}),
        ...(authRequired || auth.enabled
          ? { auth: { required: authRequired, check: (token: string) => opensLedger(token) } }
          : {}),
        onError: report,
      })
    : undefined;
  const downloads: RunningDownloads = new Map();
  const sendTimeoutMs = options.downloadSendTimeoutMs ?? DOWNLOAD_SEND_TIMEOUT_MS;
  const downloadBounds: DownloadBounds = {
    perAddress: options.downloadsPerAddress ?? DOWNLOADS_PER_ADDRESS,
    sendTimeoutMs,
    onCut: (from) =>
      report(
        new EnvelopeError(
          'TIMEOUT',
          `download to ${from} cut: its client took nothing for ${sendTimeoutMs} ms`,
        ),
      ),
  };

  /** The MCP path: the token guard, then the page, or the body and rate-limit guards and the era's handler. */
  async function serveMcp(scope: RequestScope): Promise<void> {
    await authenticate(scope, auth, authRequired);
    if (wantsInfoPage(scope)) return sendInfoPage(scope, page);
    if (refuseMethod(scope, mcpPath)) return;
    if (scope.req.method === 'POST') {
      if (!(await readMessage(scope, maxBody))) return;
      // A denied tools/call answered alone gets a Retry-After header (JSON responses).
      retryAfterOnDenial(scope);
    }
    await dispatchByEra(scope, eras);
  }

  async function route(scope: RequestScope): Promise<void> {
    checkOrigin(scope, allowed);
    const { path, req, res } = scope;
    if (path === '/healthz') return sendHealth(scope, options.fleet.status);
    if (options.downloads && path === downloadPath && path !== mcpPath)
      return downloadBounded(scope, options.downloads.handler, downloads, downloadBounds);
    if (auth.oauth && isProtectedResourcePath(path, mcpPath))
      return serveProtectedResource(req, res, auth.oauth);
    if (isServerCardPath(path, mcpPath))
      return serveServerCard(req, res, { gateway: options.fleet.options, mcpPath, auth, authRequired });
    if (path === mcpPath) return serveMcp(scope);
    if (path === METRICS_PATH && options.metrics) {
      await authenticate(scope, auth, authRequired);
      return sendMetrics(scope, options.metrics);
    }
    if (isLedgerPath(path) && path !== mcpPath) {
      if (ledgerWeb) return ledgerWeb.handle(req, res);
      // The info page's stylesheet, with or without a ledger.
      if (path === STYLESHEET_PATH) return sendStylesheet(res);
    }
    if (path === '/' && (req.method === 'GET' || req.method === 'HEAD'))
      return sendIndex(scope, mcpPath, downloadPath);
    sendError(res, new EnvelopeError('NOT_FOUND', `No route for ${path}; MCP is served at ${mcpPath}`));
  }

  const requestReadTimeoutMs = options.requestReadTimeoutMs ?? REQUEST_READ_TIMEOUT_MS;
  // Requests past their read timeout are found by a periodic check (Node's default: every 30 s).
  const checking = Math.max(100, Math.min(1000, requestReadTimeoutMs / 2));
  const server = createServer({ connectionsCheckingInterval: checking }, (req, res) => {
    if (closing) {
      sendError(res, new EnvelopeError('DEPENDENCY_UNAVAILABLE', 'The gateway is shutting down'));
      return;
    }
    route(openScope(req, res)).catch((error: unknown) => {
      if (error instanceof EnvelopeError) {
        sendError(res, error, auth.challengeHeaders(error));
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
  // The resource tokens must be issued for: configured, else the URL listened on.
  if (options.oauth) auth.attachOAuth(new OAuthResourceServer(options.oauth, options.oauth.resource ?? url));
  // Before any upstream starts, so those told the gateway's address are told the real one.
  options.onListening?.(url);
  const ready = options.warmSpare !== false ? sessions.prewarm() : Promise.resolve();

  return {
    url,
    server,
    ready,
    sessionCount: () => sessions.size,
    async close() {
      closing = true;
      await sessions.closeSessions();
      await stateless.close().catch(() => {});
      await sessions.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
