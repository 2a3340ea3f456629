import { parseJson } from '../canonical/json-text.ts';
import { isJsonObject } from '../canonical/json-value.ts';
import { EnvelopeError } from '../errors/index.ts';
import { defaultRegistry, SCHEMA_IDS, type SchemaIssue, schemaError } from '../schemas/index.ts';
import type { IssueEntry } from './model.ts';

/** prov-spec `mcp.envelope.v0.1` (seed 000 and MCP_COMPATIBILITY.md). */
export const ENVELOPE_V01 = 'mcp.envelope.v0.1';

export interface EnvelopeV01 {
  schema_version: typeof ENVELOPE_V01;
  result: unknown;
  provenance?: unknown;
  errors?: IssueEntry[];
  warnings?: IssueEntry[];
  meta?: {
    adapter?: string;
    request_id?: string;
    duration_ms?: number;
    schema_hints?: Record<string, string>;
  };
}

/**
 * What a value is with respect to the v0.1 envelope:
 * - `envelope`: a valid envelope (to be passed through unchanged);
 * - `invalid-envelope`: claims `schema_version: mcp.envelope.v0.1` but is not valid
 *   (unknown top-level field, double-wrapped, bad errors[]…): neither passed through
 *   nor wrapped, since wrapping it would nest one envelope in another;
 * - `legacy`: anything else, to be wrapped.
 */
export type V01Classification =
  | { kind: 'envelope'; envelope: EnvelopeV01 }
  | { kind: 'invalid-envelope'; issues: SchemaIssue[] }
  | { kind: 'legacy' };

/** True when `value` claims to be a v0.1 envelope, valid or not. */
export function claimsEnvelopeV01(value: unknown): boolean {
  return isJsonObject(value) && value.schema_version === ENVELOPE_V01;
}

/** Issues that make an envelope invalid beyond its JSON Schema: a nested envelope in `result`. */
function doubleWrapIssues(envelope: Record<string, unknown>): SchemaIssue[] {
  if (!claimsEnvelopeV01(envelope.result)) return [];
  return [
    {
      pointer: '/result',
      message: 'is itself an mcp.envelope.v0.1 (double-wrapped envelope)',
      keyword: 'no-double-wrap',
      schemaPath: '',
      params: {},
    },
  ];
}

/** Schema issues plus the no-double-wrap rule; empty when `value` is a valid envelope. */
export function envelopeV01Issues(value: unknown): SchemaIssue[] {
  const result = defaultRegistry().validate(SCHEMA_IDS.envelope, value);
  const issues = result.valid ? [] : [...result.issues];
  if (isJsonObject(value)) issues.push(...doubleWrapIssues(value));
  return issues;
}

export function classifyV01(value: unknown): V01Classification {
  if (!claimsEnvelopeV01(value)) return { kind: 'legacy' };
  const issues = envelopeV01Issues(value);
  return issues.length === 0
    ? { kind: 'envelope', envelope: value as unknown as EnvelopeV01 }
    : { kind: 'invalid-envelope', issues };
}

export function isEnvelopeV01(value: unknown): value is EnvelopeV01 {
  return classifyV01(value).kind === 'envelope';
}

/** Throws SCHEMA_INVALID (with pointers) unless `value` is a valid v0.1 envelope. */
export function assertEnvelopeV01(value: unknown): asserts value is EnvelopeV01 {
  const issues = envelopeV01Issues(value);
  if (issues.length > 0) throw schemaError(ENVELOPE_V01, issues);
}

/**
 * The envelope a JSON text holds, if it holds one. Envelopes arriving as text
 * (an MCP text content block, a CLI's stdout) pass through like objects do.
 * Returns undefined for text that is not JSON or not an envelope claim.
 */
export function envelopeFromText(text: string): V01Classification | undefined {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{') || !trimmed.includes(ENVELOPE_V01)) return undefined;
  let value: unknown;
  try {
    value = parseJson(text);
  } catch (error) {
    if (error instanceof EnvelopeError) return undefined;
    throw error;
  }
  const classification = classifyV01(value);
  return classification.kind === 'legacy' ? undefined : classification;
}
