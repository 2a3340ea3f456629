import { parseJSONRPCMessage, type RequestId } from '@modelcontextprotocol/server';
import { MAX_NESTING_DEPTH, pathBeyondDepth } from '../../canonical/index.ts';
import { decodeUtf8, hasMoreMembersThan } from '../../canonical/json-text.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';
import { idAtEdges } from './line-reader.ts';
import { requestIdOf } from './messages.ts';

/**
 * The most object members one client message may hold. Building and checking
 * 320,000 members holds the event loop for about a second; MCP messages hold
 * a few hundred. The text is counted before it is parsed.
 */
export const MAX_INBOUND_MEMBERS = 100_000;

/** How much of each edge of a refused message is searched for its id. */
const ID_EDGE_BYTES = 1024;

/**
 * A message from a client, read the one way every transport reads it: strict
 * UTF-8, the member bound, JSON, the nesting limit, then the JSON-RPC shape.
 * An HTTP body and a stdio line differ only in what they are called and in
 * the line's optional `\r`.
 */
export type Inbound =
  | { kind: 'message'; value: unknown }
  /** A line holding only whitespace, which stdio skips. */
  | { kind: 'blank' }
  /** Refused: answered with this error under `id` (with JSON-RPC's own -32700 or -32600 where one fits). */
  | { kind: 'refused'; id: RequestId | null; error: EnvelopeError; jsonRpcCode?: number };

export function readInbound(bytes: Uint8Array, unit: 'body' | 'line'): Inbound {
  let text: string;
  try {
    // Strict: a malformed byte is refused, not turned into U+FFFD behind the client's back.
    text = decodeUtf8(bytes);
  } catch {
    const error = new EnvelopeError('INPUT_INVALID_UTF8', `Parse error: the ${unit} is not valid UTF-8`);
    return { kind: 'refused', id: null, error, jsonRpcCode: -32700 };
  }
  if (unit === 'line') {
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return { kind: 'blank' };
  }
  if (hasMoreMembersThan(text, MAX_INBOUND_MEMBERS)) {
    const error = new EnvelopeError(
      'INPUT_TOO_LARGE',
      `Request too large: the ${unit} holds more than ${MAX_INBOUND_MEMBERS} object members`,
      { max_members: MAX_INBOUND_MEMBERS },
    );
    const edges = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const id = idAtEdges(edges.subarray(0, ID_EDGE_BYTES), edges.subarray(-ID_EDGE_BYTES));
    return { kind: 'refused', id: id ?? null, error };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const error = new EnvelopeError('JSON_MALFORMED', `Parse error: the ${unit} is not valid JSON`);
    return { kind: 'refused', id: null, error, jsonRpcCode: -32700 };
  }
  const tooDeep = nestingRefusal(value);
  if (tooDeep) {
    return { kind: 'refused', id: requestIdOf(value) ?? null, error: tooDeep };
  }
  const misshapen = shapeRefusal(value, unit);
  if (misshapen) return misshapen;
  return { kind: 'message', value };
}

/**
 * JSON that is not a JSON-RPC 2.0 message, nor a non-empty batch of them: JSON-RPC's
 * -32600 with the canonical INVALID_INPUT, under the message's id when it has one.
 */
function shapeRefusal(value: unknown, unit: 'body' | 'line'): Inbound | undefined {
  const messages = Array.isArray(value) ? value : [value];
  let problem: string | undefined = messages.length === 0 ? 'an empty batch' : undefined;
  if (!problem) {
    try {
      for (const message of messages) parseJSONRPCMessage(message);
    } catch {
      problem = 'not a JSON-RPC 2.0 message';
    }
  }
  if (!problem) return undefined;
  const error = new EnvelopeError('INVALID_INPUT', `Invalid Request: the ${unit} is ${problem}`);
  const id = Array.isArray(value) ? null : (requestIdOf(value) ?? null);
  return { kind: 'refused', id, error, jsonRpcCode: -32600 };
}

/**
 * Why a message from a client is refused for its nesting, or undefined. Every
 * transport and era draws the same line, the canonical form's: past it a
 * message could be neither digested nor serialized again on its way upstream
 * (JSON.stringify overflows the stack a few thousand levels down), and where
 * that happened would depend on the stack, not on a rule a client can read.
 */
export function nestingRefusal(message: unknown): EnvelopeError | undefined {
  const path = pathBeyondDepth(message);
  if (!path) return undefined;
  const pointer = encodePointer(path);
  return new EnvelopeError('JSON_TOO_DEEP', `The message is nested deeper than ${MAX_NESTING_DEPTH} levels`, {
    pointer,
    max_depth: MAX_NESTING_DEPTH,
  });
}
