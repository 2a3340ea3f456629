import { isJsonObject } from '../canonical/json-value.ts';
import type { DialectId, Loss, ResultDialectId } from '../envelope/dialect.ts';
import { codecFor, ENVELOPE_CODECS } from '../envelope/dialects/index.ts';
import type { NormalizedResult } from '../envelope/model.ts';
import type { EnvelopeV01 } from '../envelope/prov-v01.ts';
import { EnvelopeError } from '../errors/index.ts';
import { selfContainedSchema } from './output-schema.ts';

/**
 * The MCP layer's view of the dialect codecs. The pipeline builds every result
 * as an mcp.envelope.v0.1 (the compatibility policy is defined on it) and
 * converts it to the chosen dialect through the codecs; it recognises envelopes
 * of every dialect so that none is wrapped twice.
 */

const schemaCache = new Map<ResultDialectId, Record<string, unknown> | undefined>();

/** Checks up front that a dialect's codec is available in this build. */
export function assertDialectAvailable(dialect: ResultDialectId): void {
  const codec = codecFor(dialect);
  try {
    codec.encode({ ok: true, data: null });
  } catch (error) {
    if (error instanceof EnvelopeError && error.code === 'NOT_IMPLEMENTED') {
      throw new EnvelopeError('USAGE_ERROR', `Dialect "${dialect}" has no codec in this build`, { dialect });
    }
    throw error;
  }
}

/**
 * The dialect's envelope schema, self-contained, for a tool's `outputSchema`.
 * Undefined for `legacy`: a legacy payload has no envelope shape to promise.
 */
export function outputSchemaFor(dialect: ResultDialectId): Record<string, unknown> | undefined {
  if (schemaCache.has(dialect)) return schemaCache.get(dialect);
  assertDialectAvailable(dialect);
  const schema = dialect === 'legacy' ? undefined : selfContainedSchema(codecFor(dialect).schema);
  schemaCache.set(dialect, schema);
  return schema;
}

export interface Converted {
  value: unknown;
  losses: Loss[];
}

/** Converts an envelope the pipeline built to the target dialect, through the normalized model. */
export function fromEnvelopeV01(
  envelope: EnvelopeV01,
  dialect: ResultDialectId,
  context: { tool: string; requestId: string },
): Converted {
  if (dialect === 'prov-v0.1') return { value: envelope, losses: [] };
  const model = codecFor('prov-v0.1').decode(envelope);
  model.tool ??= context.tool;
  return codecFor(dialect).encode(model, { tool: context.tool, requestId: context.requestId });
}

export type EnvelopeDetection =
  | { match: true; dialect: DialectId; value: Record<string, unknown>; model: NormalizedResult }
  | { match: false; dialect: DialectId; message: string; reasons: string[] };

/**
 * The envelope dialect a value claims, if any, decoded when it validates.
 * `exclude` skips dialects the caller handles itself. The request envelope is
 * never a result.
 */
export function detectEnvelope(
  value: unknown,
  exclude: readonly DialectId[] = [],
): EnvelopeDetection | undefined {
  if (!isJsonObject(value)) return undefined;
  for (const codec of ENVELOPE_CODECS) {
    if (codec.id === 'jsonrpc-request' || exclude.includes(codec.id) || !codec.claims(value)) continue;
    const detection = codec.detect(value);
    if (detection.match) return { match: true, dialect: codec.id, value, model: codec.decode(value) };
    return {
      match: false,
      dialect: codec.id,
      message: `claims the ${codec.id} envelope but is not valid: ${detection.reasons.join('; ')}`,
      reasons: detection.reasons,
    };
  }
  return undefined;
}

/** Envelopes of dialects other than mcp.envelope.v0.1, which the compatibility policy recognises itself. */
export function detectForeign(value: unknown): EnvelopeDetection | undefined {
  return detectEnvelope(value, ['prov-v0.1']);
}
