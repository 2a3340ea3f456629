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

/**
 * An EnvelopeError becomes a JSON-RPC error carrying `data.canonical_code`,
 * with the code the wire of `protocolVersion` allows; anything else passes as is.
 */
export function toProtocolError(error: unknown, protocolVersion?: string): unknown {
  if (error instanceof EnvelopeError) {
    const rpc = toJsonRpcError(error.code, error.message, error.details, protocolVersion);
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
  protocolVersion?: string,
): JSONRPCMessage {
  const rpc = toJsonRpcError(error.code, error.message, error.details, protocolVersion);
  return rpcErrorMessage(id, { code: jsonRpcCode ?? rpc.code, message: rpc.message, data: rpc.data });
}

/** The canonical code a JSON-RPC error code stands for, when an error carries none of its own. */
const CANONICAL_BY_RPC_CODE: Readonly<Record<number, string>> = {
  [-32700]: 'JSON_MALFORMED',
  [-32600]: 'INVALID_INPUT',
  [-32601]: 'NOT_FOUND',
  [-32602]: 'INVALID_INPUT',
  [-32603]: 'INTERNAL_ERROR',
};

/**
 * An error response as it leaves the gateway: one the SDK wrote itself (a
 * request its schemas refused, an unknown method) gets the canonical code its
 * JSON-RPC code stands for, as every error the gateway writes carries one.
 * What an upstream put in `data` is kept; a `data` that is not an object, or
 * already names a code, is left as it is.
 */
export function withCanonicalCode(message: JSONRPCMessage): JSONRPCMessage {
  const error = (message as { error?: { code?: unknown; data?: unknown } }).error;
  if (!error || typeof error.code !== 'number') return message;
  const canonical = CANONICAL_BY_RPC_CODE[error.code];
  if (!canonical) return message;
  const { data } = error;
  if (data === undefined)
    return { ...message, error: { ...error, data: { canonical_code: canonical } } } as JSONRPCMessage;
  if (typeof data !== 'object' || data === null || Array.isArray(data) || 'canonical_code' in data)
    return message;
  return { ...message, error: { ...error, data: { ...data, canonical_code: canonical } } } as JSONRPCMessage;
}

/** The one shape of a JSON-RPC error response; `errorResponse` is the form with a canonical code. */
export function rpcErrorMessage(
  id: RequestId | null,
  error: { code: number; message: string; data?: unknown },
): JSONRPCMessage {
  return { jsonrpc: '2.0', id, error } as JSONRPCMessage;
}
