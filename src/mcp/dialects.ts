import type { DialectId, Loss, ResultDialectId } from '../envelope/dialect.ts';
import type { NormalizedResult } from '../envelope/model.ts';
import { ENVELOPE_V01, type EnvelopeV01 } from '../envelope/prov-v01.ts';
import { EnvelopeError } from '../errors/index.ts';
import { BUNDLED_SCHEMAS } from '../schemas/index.ts';
import { selfContainedSchema } from './output-schema.ts';

/**
 * The MCP layer's view of the dialect codecs: the pipeline builds every result
 * as an mcp.envelope.v0.1 (the compatibility policy is defined on it) and
 * converts it to the chosen dialect through the codecs.
 */

const schemaCache = new Map<ResultDialectId, Record<string, unknown>>();

function unavailable(dialect: string): EnvelopeError {
  return new EnvelopeError('USAGE_ERROR', `Dialect "${dialect}" has no codec in this build`, { dialect });
}

/** The dialect's envelope schema, self-contained, for a tool's `outputSchema`. */
export function outputSchemaFor(dialect: ResultDialectId): Record<string, unknown> {
  const cached = schemaCache.get(dialect);
  if (cached) return cached;
  if (dialect !== 'prov-v0.1') throw unavailable(dialect);
  const bundled = BUNDLED_SCHEMAS.find(({ schema }) => schema.$id === ENVELOPE_V01);
  if (!bundled) throw unavailable(dialect);
  const schema = selfContainedSchema(bundled.schema);
  schemaCache.set(dialect, schema);
  return schema;
}

export interface Converted {
  value: Record<string, unknown>;
  losses: Loss[];
}

/** Converts an envelope the pipeline built to the target dialect. */
export function fromEnvelopeV01(
  envelope: EnvelopeV01,
  dialect: ResultDialectId,
  _context: { tool: string; requestId?: string },
): Converted {
  if (dialect === 'prov-v0.1') return { value: envelope as unknown as Record<string, unknown>, losses: [] };
  throw unavailable(dialect);
}

/** Checks up front that a dialect can be produced. */
export function assertDialectAvailable(dialect: ResultDialectId): void {
  if (dialect !== 'prov-v0.1') throw unavailable(dialect);
}

export type ForeignDetection =
  | { match: true; dialect: DialectId; value: Record<string, unknown>; model: NormalizedResult }
  | { match: false; dialect: DialectId; message: string };

/**
 * An envelope of a dialect other than mcp.envelope.v0.1 (which the compatibility
 * policy recognises itself); `match: false` when a value claims a dialect's
 * markers but does not validate.
 */
export function detectForeign(_value: unknown): ForeignDetection | undefined {
  return undefined;
}
