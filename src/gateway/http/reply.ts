import type { ServerResponse } from 'node:http';
import { describeErrorCode, type EnvelopeError } from '../../errors/index.ts';
import { errorResponse } from '../jsonrpc/messages.ts';

/**
 * Writes one whole JSON reply with its length. A response that already
 * started (an SSE stream) can only be ended.
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** An HTTP-level error: `{ "error": { "code", "message" } }` with the status from the error table. */
export function sendError(
  res: ServerResponse,
  error: EnvelopeError,
  headers: Record<string, string> = {},
): void {
  sendJson(res, describeErrorCode(error.code).httpStatus, { error: error.toJSON() }, headers);
}

/** A JSON-RPC error for a request the SDK never saw (a session that is gone, or could not open). */
export function sendRpcError(
  res: ServerResponse,
  status: number,
  error: EnvelopeError,
  jsonRpcCode?: number,
): void {
  sendJson(res, status, errorResponse(null, error, jsonRpcCode));
}
