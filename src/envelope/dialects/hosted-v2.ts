import { SCHEMA_IDS } from '../../schemas/index.ts';
import type { DialectCodec, EncodeContext, Encoded } from '../dialect.ts';
import type { NormalizedError, NormalizedResult, RateLimitInfo, UpgradeHint } from '../model.ts';
import {
  assertDetected,
  bundledSchema,
  decodeErrorCode,
  detectByBranch,
  encodeErrorCode,
  extraMembers,
  fromText,
  isJsonObject,
  isRateLimitInfo,
  LossReport,
  payloadMember,
  reportErrorsBeyondFirst,
  stringMember,
} from './shared.ts';

/**
 * Hosted MCP v2 (seed 003), carried as JSON text in `result.content[0].text`.
 * A family, not one version: `schema_version` is a date that moves with the
 * servers (2026-02-19 in the guide, 2026-03-11 and 2026-05-06 on real ones),
 * so any date-shaped version is hosted v2 and is recorded in the model.
 * Members servers add at the top level or in `error` are kept.
 *
 * Rate metadata (`limit`, `remaining`, `reset_at`, and the `bucket` real
 * servers name) is read from wherever a server put it: `error.details.rate_limit`,
 * `data.rate_limit`, or a top-level `rate_limit`, first found first. It is
 * written where the real servers write it, as far as that leaves the payload
 * untouched: inside `error.details` on an error; on a success, inside `data` only
 * when it came from there (a tool's payload is never altered), else at the top level. Upgrade hints travel in `error.details.upgrade_hints`.
 */

/** The version the migration guide introduced; written when the model carries none. */
export const HOSTED_SCHEMA_VERSION = '2026-02-19';
const DATE_VERSION = /^\d{4}-\d{2}-\d{2}$/;
/**
 * The members the contract defines; anything else at the top level is a server's
 * extension. A top-level `rate_limit` is kept with the extensions too, so that it is
 * written back where it was.
 */
const OWN_MEMBERS = new Set(['ok', 'tool', 'schema_version', 'data', 'error']);

export interface HostedError {
  code: string;
  message: string;
  retriable: boolean;
  details?: Record<string, unknown>;
  [member: string]: unknown;
}

export interface HostedEnvelope {
  ok: boolean;
  tool: string;
  schema_version: string;
  data?: unknown;
  error?: HostedError;
  rate_limit?: RateLimitInfo;
  [member: string]: unknown;
}

/** The placeholder the guide describes: all null until limiting applies. */
export const NO_RATE_LIMIT: RateLimitInfo = Object.freeze({ limit: null, remaining: null, reset_at: null });

/** `ok` plus a date-shaped `schema_version` claims the dialect; a payload's own schema_version does not. */
function claims(value: unknown): boolean {
  const candidate = fromText(value);
  return (
    isJsonObject(candidate) &&
    typeof candidate.ok === 'boolean' &&
    typeof candidate.schema_version === 'string' &&
    DATE_VERSION.test(candidate.schema_version)
  );
}

function detect(value: unknown) {
  const candidate = fromText(value);
  const ok = isJsonObject(candidate) ? candidate.ok : undefined;
  return detectByBranch('hosted-v2', SCHEMA_IDS.hostedEnvelope, candidate, claims(candidate), ok);
}

function isHint(value: unknown): value is UpgradeHint {
  return (
    isJsonObject(value) &&
    Object.keys(value).length === 3 &&
    typeof value.feature === 'string' &&
    typeof value.tier === 'string' &&
    typeof value.reason === 'string'
  );
}

/** The rate metadata of an envelope, wherever the server put it. */
function hostedRateLimit(envelope: Record<string, unknown>): RateLimitInfo | undefined {
  const error = envelope.error;
  const details = isJsonObject(error) ? error.details : undefined;
  const data = envelope.data;
  for (const candidate of [
    isJsonObject(details) ? details.rate_limit : undefined,
    isJsonObject(data) ? data.rate_limit : undefined,
    envelope.rate_limit,
  ]) {
    if (isRateLimitInfo(candidate)) return candidate;
  }
  return undefined;
}

function decode(value: unknown): NormalizedResult {
  const candidate = fromText(value);
  assertDetected(detect(candidate));
  const envelope = candidate as unknown as HostedEnvelope;
  const model: NormalizedResult = {
    ok: envelope.ok,
    tool: envelope.tool,
    // An error envelope may carry data as well (partial output); it is kept.
    data: envelope.data === undefined ? null : envelope.data,
    version: envelope.schema_version,
    decodedFrom: 'hosted-v2',
  };
  const extensions = extraMembers(envelope, OWN_MEMBERS);
  if (extensions) model.extensions = extensions;
  const rateLimit = hostedRateLimit(envelope);
  if (rateLimit !== undefined) model.meta = { rate_limit: rateLimit };
  // A top-level rate_limit stays where it was when the envelope is written again.
  if (envelope.rate_limit !== undefined)
    model.extensions = { ...model.extensions, rate_limit: envelope.rate_limit };
  if (envelope.error !== undefined) {
    const { code: spelled, message, retriable, details, ...errorExtra } = envelope.error;
    const { code, native } = decodeErrorCode(spelled, 'hosted-v2');
    const error: NormalizedError = { code, message, retriable };
    if (native) error.native = native;
    if (details !== undefined) {
      const { upgrade_hints: hints, ...afterHints } = details;
      // Rate metadata in the details is the model's meta.rate_limit; encoding puts it back there.
      const { rate_limit: detailsRate, ...rest } = afterHints;
      const ownRate = detailsRate !== undefined && detailsRate === rateLimit;
      if (!ownRate && detailsRate !== undefined) rest.rate_limit = detailsRate;
      if (Array.isArray(hints) && hints.length > 0 && hints.every(isHint)) {
        model.meta = { ...model.meta, upgrade_hints: hints };
        // Details that held only the hints were made for them: the model has none of its own.
        if (Object.keys(rest).length > 0) error.details = rest;
      } else {
        error.details = hints === undefined ? rest : { ...rest, upgrade_hints: hints };
      }
    }
    // Members a server adds to its error object travel with the details.
    if (Object.keys(errorExtra).length > 0) error.details = { ...errorExtra, ...error.details };
    model.error = error;
  }
  return model;
}

/** Whether `holder` already carries exactly this rate metadata (decoded from it). */
function holds(holder: unknown, rateLimit: RateLimitInfo): boolean {
  return isJsonObject(holder) && holder.rate_limit === rateLimit;
}

function encode(model: NormalizedResult, context: EncodeContext = {}): Encoded {
  const losses = new LossReport();
  const meta = model.meta ?? {};
  const version =
    model.decodedFrom === 'hosted-v2' && model.version !== undefined && DATE_VERSION.test(model.version)
      ? model.version
      : (context.version ?? HOSTED_SCHEMA_VERSION);
  const envelope: HostedEnvelope = {
    ok: model.ok,
    tool: model.tool ?? context.tool ?? 'unknown',
    schema_version: version,
  };
  const hints = meta.upgrade_hints;
  const rateLimit = meta.rate_limit;
  let rateLimitPlaced = rateLimit === undefined || model.extensions?.rate_limit === rateLimit;
  if (model.ok) {
    const data = model.data === undefined ? null : model.data;
    // The payload is never altered: rate metadata stays in data only when it came from there.
    if (rateLimit !== undefined && holds(data, rateLimit)) rateLimitPlaced = true;
    envelope.data = data;
    if (hints !== undefined)
      losses.add('/meta/upgrade_hints', 'a hosted v2 success has no place for upgrade hints');
  } else {
    const error = model.error ?? {
      code: 'INTERNAL_ERROR',
      message: 'The tool reported a failure.',
      retriable: false,
    };
    const out: HostedError = {
      code: encodeErrorCode(error, 'hosted-v2'),
      message: error.message,
      retriable: error.retriable,
    };
    if (error.details !== undefined || hints !== undefined || rateLimit !== undefined)
      out.details = { ...error.details };
    if (hints !== undefined && out.details) out.details.upgrade_hints = hints;
    if (rateLimit !== undefined && out.details) {
      if (!('rate_limit' in out.details)) out.details.rate_limit = rateLimit;
      rateLimitPlaced = out.details.rate_limit === rateLimit;
    }
    if (hints !== undefined && error.details !== undefined && Object.keys(error.details).length === 0)
      losses.add(
        '/error/details',
        'an empty details object cannot be told apart from the upgrade hints it holds',
      );
    envelope.error = out;
    // Partial output of a failed call is kept beside the error.
    if (model.data !== undefined && model.data !== null) envelope.data = model.data;
  }
  for (const [key, value] of Object.entries(model.extensions ?? {})) {
    if (OWN_MEMBERS.has(key)) {
      losses.add(`/extensions/${key}`, `"${key}" is a member of the contract itself`);
    } else if (!(key in envelope)) {
      envelope[key] = value;
    }
  }
  if (!rateLimitPlaced && rateLimit !== undefined && !('rate_limit' in envelope))
    envelope.rate_limit = rateLimit;
  reportErrorsBeyondFirst(model, losses);
  losses.ifPresent(model.warnings, '/warnings', 'hosted v2 envelopes have no warnings');
  losses.ifPresent(model.provenance, '/provenance', 'hosted v2 envelopes have no provenance');
  for (const key of [
    'request_id',
    'duration_ms',
    'adapter',
    'tier',
    'tool_version',
    'capabilities',
    'schema_hints',
    'client',
  ] as const) {
    losses.ifPresent(meta[key], `/meta/${key}`, `hosted v2 envelopes have no ${key}`);
  }
  return { value: envelope, losses: losses.losses };
}

export const hostedV2Codec: DialectCodec = {
  id: 'hosted-v2',
  schemaId: SCHEMA_IDS.hostedEnvelope,
  schema: bundledSchema(SCHEMA_IDS.hostedEnvelope),
  claims,
  payloadOf: payloadMember('data'),
  versionOf: stringMember('schema_version'),
  detect,
  decode,
  encode,
};
