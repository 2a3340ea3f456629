import { isJsonObject } from '../canonical/json-value.ts';
import { detectDialect } from '../envelope/detect.ts';
import type { DialectId, Loss, ResultDialectId } from '../envelope/dialect.ts';
import { codecFor } from '../envelope/dialects/index.ts';
import type { NormalizedResult } from '../envelope/model.ts';
import type { EnvelopeV01 } from '../envelope/prov-v01.ts';
import { EnvelopeError } from '../errors/index.ts';
import { advertisedEnvelopeSchema } from './output-schema.ts';

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
 * The dialect's envelope, as a tool's `outputSchema` (its top level, see
 * `advertisedEnvelopeSchema`). Undefined for `legacy`: a legacy payload has no
 * envelope shape to promise.
 */
export function outputSchemaFor(dialect: ResultDialectId): Record<string, unknown> | undefined {
  if (schemaCache.has(dialect)) return schemaCache.get(dialect);
  assertDialectAvailable(dialect);
  const schema = dialect === 'legacy' ? undefined : advertisedEnvelopeSchema(codecFor(dialect).schema);
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
  context: { tool: string; requestId: string; tier?: string },
): Converted {
  if (dialect === 'prov-v0.1') return { value: envelope, losses: [] };
  const model = codecFor('prov-v0.1').decode(envelope);
  model.tool ??= context.tool;
  // mcp.envelope.v0.1 has no tier; the dialects that do get the caller's.
  if (context.tier !== undefined) model.meta = { ...model.meta, tier: context.tier };
  return codecFor(dialect).encode(model, { tool: context.tool, requestId: context.requestId });
}

/** An mcp.envelope.v0.1 for a model the pipeline builds itself (a denial with upgrade hints). */
export function envelopeV01For(model: NormalizedResult): EnvelopeV01 {
  return codecFor('prov-v0.1').encode(model).value as EnvelopeV01;
}

export type EnvelopeDetection =
  | { match: true; dialect: DialectId; value: Record<string, unknown>; model: NormalizedResult }
  | { match: false; dialects: DialectId[]; message: string; reasons: string[] };

/**
 * The envelope a value holds, decoded, when it validates as one result
 * dialect; a near miss (markers of a dialect without its shape, ambiguous or
 * double-wrapped) when it claims one and does not; undefined for a payload
 * that claims none. The request envelope is no result, so it reads as none.
 */
export function detectEnvelope(value: unknown): EnvelopeDetection | undefined {
  if (!isJsonObject(value)) return undefined;
  const report = detectDialect(value);
  if (report.dialect === 'legacy' || report.dialect === 'jsonrpc-request') return undefined;
  if (report.dialect !== null) {
    return { match: true, dialect: report.dialect, value, model: codecFor(report.dialect).decode(value) };
  }
  if (report.near.length === 1 && report.near[0] === 'jsonrpc-request') return undefined;
  return {
    match: false,
    dialects: report.near,
    message: `claims the ${report.near.join(' / ')} envelope but is not valid: ${report.reasons.slice(0, 4).join('; ')}`,
    reasons: report.reasons,
  };
}
