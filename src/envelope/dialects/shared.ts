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
import type { NormalizedError, NormalizedResult, RateLimitInfo } from '../model.ts';

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

/** A codec's `payloadOf` for dialects that carry the payload in one top-level member. */
export function payloadMember(member: string): (value: unknown) => unknown {
  return (value) => {
    const candidate = fromText(value);
    return isJsonObject(candidate) ? candidate[member] : undefined;
  };
}

/** A codec's `versionOf` for dialects that name their version in one top-level string member. */
export function stringMember(member: string): (value: unknown) => string | undefined {
  return (value) => {
    const candidate = fromText(value);
    const found = isJsonObject(candidate) ? candidate[member] : undefined;
    return typeof found === 'string' ? found : undefined;
  };
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

/**
 * Detection against a schema whose top level is a oneOf of `$defs/success` and
 * `$defs/failure` told apart by `ok`: when `ok` is a boolean, the reasons come
 * from the branch it selects, not from both.
 */
export function detectByBranch(
  dialect: DialectId,
  schemaId: string,
  value: unknown,
  claims: boolean,
  ok: unknown,
): Detection {
  const detection = detectBySchema(dialect, schemaId, value, claims);
  if (detection.match || typeof ok !== 'boolean') return detection;
  return detectBySchema(dialect, `${schemaId}#/$defs/${ok ? 'success' : 'failure'}`, value, claims);
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
  // The dialect's own spelling first; then any other dialect's, so that a known
  // code spelled the way another dialect spells it is still recognised.
  const own = canonicalCode(spelling, dialect);
  const code = own !== spelling ? own : canonicalCode(spelling);
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

/**
 * Rate metadata: the three members the hosted guide names (`limit`, `remaining`,
 * `reset_at`), each null or of its type; a `bucket` and other members are kept.
 */
export function isRateLimitInfo(value: unknown): value is RateLimitInfo {
  return (
    isJsonObject(value) &&
    'limit' in value &&
    'remaining' in value &&
    'reset_at' in value &&
    (value.limit === null || typeof value.limit === 'number') &&
    (value.remaining === null || typeof value.remaining === 'number') &&
    (value.reset_at === null || typeof value.reset_at === 'string')
  );
}

/** Collects losses while encoding. */
export class LossReport {
  readonly losses: Loss[] = [];
  add(path: string, reason: string, reshaped = false): void {
    this.losses.push(reshaped ? { path, reason, reshaped: true } : { path, reason });
  }
  /** Reports a field that is present (null included: an explicit null is information). */
  ifPresent(value: unknown, path: string, reason: string): void {
    if (value !== undefined) this.add(path, reason);
  }
}

/**
 * The members of `value` beyond a dialect's own (what a server added), or
 * undefined when there are none; allocates only when there are some.
 */
export function extraMembers(
  value: Record<string, unknown>,
  own: ReadonlySet<string>,
): Record<string, unknown> | undefined {
  let extra: Record<string, unknown> | undefined;
  for (const key in value) {
    if (!Object.hasOwn(value, key) || own.has(key)) continue;
    extra ??= {};
    extra[key] = value[key];
  }
  return extra;
}

/** Top-level members another dialect's server added, which a closed dialect cannot carry. */
export function reportExtensions(model: NormalizedResult, losses: LossReport, reason: string): void {
  for (const key of Object.keys(model.extensions ?? {})) losses.add(`/extensions/${key}`, reason);
}

/**
 * errors[] (prov-spec) has room for more than the one error most dialects
 * carry: any entry beyond what `error` says is a loss.
 */
export function reportErrorsBeyondFirst(model: NormalizedResult, losses: LossReport): void {
  const errors = model.errors;
  if (errors === undefined) return;
  if (model.ok || errors.length === 0) {
    losses.add('/errors', 'this dialect has no errors[]');
    return;
  }
  const [first, ...rest] = errors;
  if (first?.evidence !== undefined) losses.add('/errors/0/evidence', 'this dialect has no evidence anchors');
  // `retryable: false` is the schema's default: written back, the flag would be absent.
  if (first?.retryable === false)
    losses.add('/errors/0/retryable', 'an explicit default retryable flag is not carried');
  rest.forEach((_entry, index) => {
    losses.add(`/errors/${index + 1}`, 'this dialect carries one error');
  });
}

export { isJsonObject };
