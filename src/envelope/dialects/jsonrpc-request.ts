import { EnvelopeError } from '../../errors/index.ts';
import { defaultRegistry, SCHEMA_IDS } from '../../schemas/index.ts';
import type { DialectCodec } from '../dialect.ts';
import type { NormalizedResult } from '../model.ts';
import { bundledSchema, detectBySchema, fromText, isJsonObject } from './shared.ts';

/**
 * The validation spec's request envelope (seed 004):
 * `{id, jsonrpc: "2.0", method, params: {tool: "mcp.tool:<domain>", input: {…}}}`.
 * It is a request, not a tool result: it is detected and validated (any
 * deviation is INVALID_INPUT), never decoded to or encoded from a result.
 */

export interface RequestEnvelope {
  id: string | number;
  jsonrpc: '2.0';
  method: string;
  params: { tool: string; input: Record<string, unknown>; [key: string]: unknown };
}

/** `jsonrpc` and `method` together claim the dialect (a JSON-RPC response has no method). */
function claims(value: unknown): boolean {
  const candidate = fromText(value);
  return isJsonObject(candidate) && 'jsonrpc' in candidate && 'method' in candidate;
}

function detect(value: unknown) {
  const candidate = fromText(value);
  return detectBySchema('jsonrpc-request', SCHEMA_IDS.jsonrpcRequest, candidate, claims(candidate));
}

/** The request, or INVALID_INPUT naming the first deviation with its JSON Pointer. */
export function parseRequestEnvelope(value: unknown): RequestEnvelope {
  const candidate = fromText(value);
  const result = defaultRegistry().validate(SCHEMA_IDS.jsonrpcRequest, candidate);
  if (result.valid) return candidate as unknown as RequestEnvelope;
  const first = result.issues[0];
  throw new EnvelopeError(
    'INVALID_INPUT',
    `Invalid request envelope: ${first?.pointer || '/'} ${first?.message}`,
    {
      pointer: first?.pointer ?? '',
      issues: result.issues.map(({ pointer, message, keyword }) => ({ pointer, message, keyword })),
    },
  );
}

function notAResult(): never {
  throw new EnvelopeError(
    'NOT_A_RESULT',
    'jsonrpc-request is a request envelope: tool results cannot be decoded from or encoded to it',
  );
}

export const jsonrpcRequestCodec: DialectCodec = {
  id: 'jsonrpc-request',
  schemaId: SCHEMA_IDS.jsonrpcRequest,
  schema: bundledSchema(SCHEMA_IDS.jsonrpcRequest),
  claims,
  versionOf: () => undefined,
  payloadOf: (value) => {
    const candidate = fromText(value);
    return isJsonObject(candidate) && isJsonObject(candidate.params) ? candidate.params.input : undefined;
  },
  detect,
  decode: (value: unknown): NormalizedResult => {
    parseRequestEnvelope(value);
    return notAResult();
  },
  encode: () => notAResult(),
};
