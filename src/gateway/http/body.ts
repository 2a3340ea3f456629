import type { IncomingMessage } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { EnvelopeError } from '../../errors/index.ts';
import { readInbound } from '../jsonrpc/inbound.ts';
import { errorResponse } from '../jsonrpc/messages.ts';
import { sendJson } from './reply.ts';
import type { RequestScope } from './scope.ts';

/**
 * The body guard: a POST's body read within the gateway's limit and parsed
 * the one way every transport reads a message (jsonrpc/inbound.ts), before
 * anything is dispatched, so a handler never sees bytes it would have to bound.
 */

/** Bodies from this size on are parsed in an event-loop turn of their own. */
const LARGE_BODY_BYTES = 256 * 1024;

/**
 * A request's body, at most `limit` bytes: checked against `Content-Length`
 * first, then while reading. Past it, INPUT_TOO_LARGE (413), and the rest is
 * drained unread so that the connection stays usable for the answer.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
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
 * Reads and parses the scope's body into `scope.body`. A body that is not a
 * message (not UTF-8, not JSON, too many members, too deep, not JSON-RPC) is
 * answered here, and false returned: the request is over. Too large a body
 * throws INPUT_TOO_LARGE for the route's error answer.
 */
export async function readMessage(scope: RequestScope, limit: number): Promise<boolean> {
  const bytes = await readBody(scope.req, limit);
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
        scope.res,
        inbound.error.httpStatus,
        errorResponse(inbound.id, inbound.error, inbound.jsonRpcCode),
      );
    }
    return false;
  }
  scope.body = inbound.value;
  return true;
}
