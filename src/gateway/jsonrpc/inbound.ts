import type { RequestId } from '@modelcontextprotocol/server';
import { MAX_NESTING_DEPTH, pathBeyondDepth } from '../../canonical/index.ts';
import { decodeUtf8 } from '../../canonical/json-text.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';
import { requestIdOf } from './messages.ts';

/**
 * A message from a client, read the one way every transport reads it: strict
 * UTF-8, JSON, then the nesting limit. An HTTP body and a stdio line differ
 * only in what they are called and in the line's optional `\r`.
 */
export type Inbound =
  | { kind: 'message'; value: unknown }
  /** A line holding only whitespace, which stdio skips. */
  | { kind: 'blank' }
  /** Refused: answered with this error under `id` (a parse error with JSON-RPC's own -32700). */
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
  return { kind: 'message', value };
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
