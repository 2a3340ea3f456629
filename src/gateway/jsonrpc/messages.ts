import type { JSONRPCMessage, RequestId, Result } from '@modelcontextprotocol/client';
import { ProtocolError } from '@modelcontextprotocol/server';
import { EnvelopeError, toJsonRpcError } from '../../errors/index.ts';

/**
 * The JSON-RPC pieces every part of the gateway builds alike: the
 * pass-through result schema, request ids, and error replies.
 */

/**
 * A result schema that accepts whatever the other side sent, for requests the
 * gateway forwards in either direction: it relays results, it does not reshape
 * or strip them.
 */
export const ANY_RESULT = {
  '~standard': {
    version: 1 as const,
    vendor: 'mcp-envelope',
    validate: (value: unknown) => ({ value: value as Result }),
  },
};

/** An EnvelopeError becomes a JSON-RPC error carrying `data.canonical_code`; anything else passes as is. */
export function toProtocolError(error: unknown): unknown {
  if (error instanceof EnvelopeError) {
    const rpc = toJsonRpcError(error.code, error.message, error.details);
    return new ProtocolError(rpc.code, rpc.message, rpc.data);
  }
  return error;
}

/** The id of a JSON-RPC request, when the message has a usable one. */
export function requestIdOf(message: unknown): RequestId | undefined {
  const id = (message as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/**
 * A JSON-RPC error response for a request the gateway answers itself: the
 * error table's code and `data.canonical_code`, unless the protocol's own code
 * (a parse error's -32700, the SDK transport's -32000 family) is the one
 * clients know that refusal by.
 */
export function errorResponse(
  id: RequestId | null,
  error: EnvelopeError,
  jsonRpcCode?: number,
): JSONRPCMessage {
  const rpc = toJsonRpcError(error.code, error.message, error.details);
  return rpcErrorMessage(id, { code: jsonRpcCode ?? rpc.code, message: rpc.message, data: rpc.data });
}

/** The one shape of a JSON-RPC error response; `errorResponse` is the form with a canonical code. */
export function rpcErrorMessage(
  id: RequestId | null,
  error: { code: number; message: string; data?: unknown },
): JSONRPCMessage {
  return { jsonrpc: '2.0', id, error } as JSONRPCMessage;
}
