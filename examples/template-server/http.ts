/**
 * The HTTP face: the MCP endpoint at /api/mcp (Streamable HTTP through the
 * SDK's handler, both protocol eras, one McpServer per request), a page for
 * browsers at GET /api/mcp, and /api/download served by the library's
 * download handler. Loopback by default, with the SDK's Host header guard
 * against DNS rebinding.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostHeaderValidation, toNodeHandler } from '@modelcontextprotocol/node';
import { type AuthInfo, createMcpHandler } from '@modelcontextprotocol/server';
import type { Catalog } from './catalog.ts';
import type { FilledDocuments } from './documents.ts';
import { infoPage } from './info-page.ts';
import { createTemplateServer, type TemplateServerOptions } from './tools.ts';

export const MCP_PATH = '/api/mcp';
export const DOWNLOAD_PATH = '/api/download';
/** Largest request body: above the value limits, so an oversized value is refused by the tool with its limit. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export interface HttpOptions
  extends Omit<TemplateServerOptions, 'principal' | 'authenticated' | 'downloadUrl'> {
  catalog: Catalog;
  documents: FilledDocuments;
  host: string;
  port: number;
  /** Base of download links; default this server's own /api/download. */
  downloadUrl?: string;
  /** When set, every call must carry `Authorization: Bearer <token>`. */
  token?: string;
}

export interface RunningHttp {
  server: Server;
  url: string;
  close(): Promise<void>;
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return false;
  const given = Buffer.from(match[1] as string);
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Who calls, as the handler's pass-through authInfo: the token's holder, or an anonymous address. */
function callerOf(req: IncomingMessage, token: string | undefined): AuthInfo {
  const authenticated = token !== undefined && bearerMatches(req.headers.authorization, token);
  return {
    token: '',
    clientId: authenticated ? 'token' : `anonymous:${req.socket.remoteAddress ?? 'unknown'}`,
    scopes: [],
    extra: { authenticated: token === undefined || authenticated },
  };
}

export async function startHttp(options: HttpOptions): Promise<RunningHttp> {
  const { catalog, documents, token } = options;
  let downloadUrl = options.downloadUrl ?? '';
  const handler = createMcpHandler(
    (ctx) =>
      createTemplateServer({
        catalog,
        documents,
        // Empty while its own route is not known, and behind a gateway's store (the gateway links).
        ...(downloadUrl === '' ? {} : { downloadUrl }),
        ...(options.limiter === undefined ? {} : { limiter: options.limiter }),
        principal: ctx.authInfo?.clientId ?? 'anonymous',
        authenticated: ctx.authInfo?.extra?.authenticated === true,
      }),
    {
      maxRequestBodySize: MAX_BODY_BYTES,
      onerror: (error) => process.stderr.write(`mcp: ${error.message}\n`),
    },
  );
  const serveMcp = toNodeHandler(handler, { maxRequestBodySize: MAX_BODY_BYTES });
  // Its own store's links; a gateway's store is served by the gateway.
  const serveDownload = documents.downloadHandler((error) =>
    process.stderr.write(`download: ${error instanceof Error ? error.message : String(error)}\n`),
  );
  const hostGuard = LOOPBACK.has(options.host)
    ? hostHeaderValidation(['127.0.0.1', 'localhost', '[::1]'])
    : undefined;

  const server = createServer((req, res) => {
    if (hostGuard && !hostGuard(req, res)) return;
    const path = new URL(req.url ?? '/', 'http://placeholder').pathname;
    if (path === DOWNLOAD_PATH && serveDownload) {
      void serveDownload(req, res);
      return;
    }
    if (path !== MCP_PATH) {
      sendJson(res, 404, {
        error: { code: 'NOT_FOUND', message: `Nothing at ${path}: the MCP endpoint is ${MCP_PATH}` },
      });
      return;
    }
    if (req.method === 'GET') {
      const accept = req.headers.accept ?? '';
      if (accept.includes('text/html')) {
        const page = infoPage(`${url}${MCP_PATH}`, catalog, token !== undefined);
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        res.end(page);
        return;
      }
      // No standalone event stream: every answer comes back on its POST.
      sendJson(
        res,
        405,
        { error: { code: 'METHOD_NOT_ALLOWED', message: 'Only POST requests are accepted for MCP clients' } },
        { allow: 'POST' },
      );
      return;
    }
    (req as IncomingMessage & { auth?: AuthInfo }).auth = callerOf(req, token);
    void serveMcp(req, res);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  if (downloadUrl === '' && serveDownload) downloadUrl = `${url}${DOWNLOAD_PATH}`;
  return {
    server,
    url,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await handler.close();
    },
  };
}
