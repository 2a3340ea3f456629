import { parseJson } from '../../canonical/json-text.ts';
import { isJsonObject } from '../../canonical/json-value.ts';
import {
  canonicalCode,
  describeErrorCode,
  dialectSpelling,
  EnvelopeError,
  type SpellingDialect,
} from '../../errors/index.ts';
import { BUNDLED_SCHEMAS, defaultRegistry } from '../../schemas/index.ts';
import type { Detection, DialectId, Loss } from '../dialect.ts';
import type { NormalizedError } from '../model.ts';

/** Helpers every codec shares: schema lookup and detection, error spellings, losses. */

/** Most reasons a detection lists; a deeply broken value would otherwise list hundreds. */
const MAX_REASONS = 8;

export function bundledSchema(schemaId: string): Record<string, unknown> {
  const found = BUNDLED_SCHEMAS.find(({ schema }) => schema.$id === schemaId);
  if (!found) throw new EnvelopeError('SCHEMA_NOT_FOUND', `No bundled schema ${schemaId}`);
  return found.schema;
}

/**
 * The object a JSON text holds, for dialects that travel as text (hosted v2 in
 * `content[0].text`). Anything else is returned as is; text that is not JSON
 * stays text.
 */
export function fromText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const trimmed = value.trimStart();
  if (!trimmed.startsWith('{')) return value;
  try {
    return parseJson(value);
  } catch (error) {
    if (error instanceof EnvelopeError) return value;
    throw error;
  }
}

/** Schema validation through the shared registry (compiled once), as a Detection. */
export function detectBySchema(
  dialect: DialectId,
  schemaId: string,
  value: unknown,
  claims: boolean,
): Detection {
  const result = defaultRegistry().validate(schemaId, value);
  if (result.valid) return { dialect, match: true };
  const reasons = result.issues
    .slice(0, MAX_REASONS)
    .map((issue) => `${issue.pointer || '/'} ${issue.message}`);
  if (result.issues.length > MAX_REASONS) reasons.push(`… and ${result.issues.length - MAX_REASONS} more`);
  return { dialect, match: false, near: claims, reasons: [...new Set(reasons)] };
}

/** Throws ENVELOPE_INVALID naming the reasons unless the detection matched. */
export function assertDetected(detection: Detection): void {
  if (detection.match) return;
  throw new EnvelopeError(
    'ENVELOPE_INVALID',
    `Not a valid ${detection.dialect} envelope: ${detection.reasons.join('; ')}`,
    { dialect: detection.dialect, reasons: detection.reasons },
  );
}

/** A dialect's error code in the model: canonical, with the original spelling kept when needed. */
export function decodeErrorCode(
  spelling: string,
  dialect: SpellingDialect,
): Pick<NormalizedError, 'code' | 'native'> {
  const code = canonicalCode(spelling, dialect);
  return dialectSpelling(code, dialect) === spelling
    ? { code }
    : { code, native: { dialect, code: spelling } };
}

/** The model's error code as `dialect` spells it; a tool's own codes pass unchanged. */
export function encodeErrorCode(
  error: Pick<NormalizedError, 'code' | 'native'>,
  dialect: SpellingDialect,
): string {
  if (error.native?.dialect === dialect) return error.native.code;
  return dialectSpelling(error.code, dialect);
}

export function defaultRetriable(code: string): boolean {
  return describeErrorCode(code).retriable;
}

/** Collects losses while encoding. */
export class LossReport {
  readonly losses: Loss[] = [];
  add(path: string, reason: string): void {
    this.losses.push({ path, reason });
  }
  /** Reports a field that is present (null included: an explicit null is information). */
  ifPresent(value: unknown, path: string, reason: string): void {
    if (value !== undefined) this.add(path, reason);
  }
}

export { isJsonObject };
