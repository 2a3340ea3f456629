import type { IncomingMessage, ServerResponse } from 'node:http';
import { EnvelopeError } from '../../../errors/index.ts';
import { sendError, sendJson } from '../reply.ts';
import type { OAuthResourceServer } from './resource-server.ts';

/** Where RFC 9728 metadata is served: the path-suffixed form for the MCP path, and the root form clients fall back to. */
export const PROTECTED_RESOURCE_PREFIX = '/.well-known/oauth-protected-resource';

export function isProtectedResourcePath(path: string, mcpPath: string): boolean {
  return path === PROTECTED_RESOURCE_PREFIX || path === `${PROTECTED_RESOURCE_PREFIX}${mcpPath}`;
}

/** Browser-based clients read it cross-origin; it holds nothing private. */
const CORS: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD',
  'access-control-allow-headers': 'MCP-Protocol-Version',
};

/** Answers GET and HEAD (and a preflight) with the protected resource metadata; no token is asked. */
export function serveProtectedResource(
  req: IncomingMessage,
  res: ServerResponse,
  oauth: OAuthResourceServer,
): void {
  const method = req.method ?? 'GET';
  if (method === 'OPTIONS') {
    res.writeHead(204, { ...CORS, 'access-control-max-age': '600' });
    res.end();
    return;
  }
  if (method !== 'GET' && method !== 'HEAD') {
    sendError(res, new EnvelopeError('METHOD_NOT_ALLOWED', `${method} is not supported here`), {
      allow: 'GET, HEAD, OPTIONS',
    });
    return;
  }
  if (method === 'HEAD') {
    res.writeHead(200, { 'content-type': 'application/json', ...CORS });
    res.end();
    return;
  }
  sendJson(res, 200, oauth.metadata(), { ...CORS, 'cache-control': 'public, max-age=300' });
}
