import type { IncomingMessage } from 'node:http';
import { toWebRequest } from '@modelcontextprotocol/node';
import { isInitializeRequest, isLegacyRequest } from '@modelcontextprotocol/server';
import { STATELESS_WIRE_REVISION } from '../../errors/codes.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { SessionTable } from '../transports/2025-11-25/sessions.ts';
import type { StatelessHttp } from '../transports/2026-07-28/stateless-http.ts';
import { sendError, sendRpcError } from './reply.ts';
import { accepts, authInfoOf, ownerOf, type RequestScope } from './scope.ts';

/**
 * Where a request on the MCP path goes once past the guards: which methods
 * the path serves, and the handler of the request's era. A 2025-era client
 * has a session (the sessions table: opened by `initialize`, found by
 * `Mcp-Session-Id`); a 2026-07-28 request is served statelessly.
 */

/** The handlers of the two eras, one each per HTTP gateway. */
export interface EraHandlers {
  sessions: SessionTable;
  stateless: StatelessHttp;
}

/**
 * Answers 405 to what the MCP path does not serve: a GET that asks for no SSE
 * stream (a browser's was given the page), and methods other than GET, POST
 * and DELETE. Returns whether it did.
 */
export function refuseMethod(scope: RequestScope, mcpPath: string): boolean {
  const method = scope.req.method ?? 'GET';
  if (method === 'GET' && !accepts(scope, 'text/event-stream')) {
    sendError(
      scope.res,
      new EnvelopeError(
        'METHOD_NOT_ALLOWED',
        `GET ${mcpPath} serves SSE streams (Accept: text/event-stream) and, to a browser (Accept: text/html), a page listing the tools and how to connect`,
      ),
      {
        allow: 'GET, POST, DELETE',
      },
    );
    return true;
  }
  if (method !== 'GET' && method !== 'POST' && method !== 'DELETE') {
    sendError(scope.res, new EnvelopeError('METHOD_NOT_ALLOWED', `${method} is not supported on /mcp`), {
      allow: 'GET, POST, DELETE',
    });
    return true;
  }
  return false;
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

/**
 * Serves the request in its era: on its session when it names one (another
 * principal's being as unknown as one that never existed), opening one on
 * `initialize`, statelessly when the SDK classifies it as 2026-07-28; any
 * other request needs a session (400).
 */
export async function dispatchByEra(scope: RequestScope, eras: EraHandlers): Promise<void> {
  const { req, res, body } = scope;
  const authInfo = authInfoOf(scope);
  const sessionId = req.headers['mcp-session-id'];
  if (typeof sessionId === 'string') {
    const entry = eras.sessions.get(sessionId);
    if (!entry || entry.owner !== ownerOf(scope)) {
      sendRpcError(res, 404, new EnvelopeError('NOT_FOUND', 'Session not found'), -32001);
      return;
    }
    entry.lastSeen = Date.now();
    // Within an anonymous session, the session is the principal.
    if (authInfo.extra) authInfo.extra.principal = entry.principal;
    await entry.serve(req, res, body, authInfo);
    return;
  }
  if (req.method === 'POST') {
    const messages = Array.isArray(body) ? body : [body];
    if (messages.some((message) => message?.method === 'initialize' && isInitializeRequest(message))) {
      await eras.sessions.open(req, res, body, ownerOf(scope), scope.principal?.tokenId, authInfo);
      return;
    }
    if (claimsModernEra(req) || !(await isLegacyRequest(await toWebRequest(req, body), body))) {
      await eras.stateless.handle(req, res, body, authInfo);
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
