import { isJsonObject } from '../../canonical/json-value.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { SCHEMA_IDS } from '../../schemas/index.ts';
import { applyCompatibilityPolicy, type WrapOptions } from '../compat-policy.ts';
import type { Detection, DialectCodec, EncodeContext, Encoded } from '../dialect.ts';
import type { IssueEntry, NormalizedError, NormalizedResult, RateLimitInfo, UpgradeHint } from '../model.ts';
import { claimsEnvelopeV01, type EnvelopeV01, envelopeV01Issues } from '../prov-v01.ts';
import {
  bundledSchema,
  decodeErrorCode,
  encodeErrorCode,
  fromText,
  LossReport,
  payloadMember,
  reportExtensions,
  stringMember,
} from './shared.ts';

/**
 * prov-spec `mcp.envelope.v0.1`. Detection and wrapping are the ones of
 * prov-v01.ts and compat-policy.ts; this module only maps to and from the model.
 */

/** The warnings[] code that carries an upgrade hint (prov-spec has no field for them). */
export const UPGRADE_HINT_WARNING = 'TIER.UPGRADE_HINT';

const MAX_MESSAGE = 2000;
const MAX_REQUEST_ID = 200;

export function hintToWarning(hint: UpgradeHint): IssueEntry {
  return {
    code: UPGRADE_HINT_WARNING,
    message: hint.reason || `${hint.feature} needs the ${hint.tier} tier`,
    details: { feature: hint.feature, tier: hint.tier },
  };
}

function warningToHint(entry: IssueEntry): UpgradeHint | undefined {
  if (entry.code !== UPGRADE_HINT_WARNING || entry.evidence !== undefined) return undefined;
  const details = entry.details;
  if (!details || typeof details.feature !== 'string' || typeof details.tier !== 'string') return undefined;
  if (Object.keys(details).length !== 2) return undefined;
  return { feature: details.feature, tier: details.tier, reason: entry.message };
}

/** Members of errors[].details that carry rate metadata (the schema allows only flat values there). */
const RATE_LIMIT_DETAILS = ['limit', 'remaining', 'reset_at', 'bucket'] as const;

/**
 * The error of the model as the first errors[] entry. `retryable` is written
 * whenever it is true: the schema declares `default: false`, so every reader of
 * the envelope takes a missing flag for "not retriable", whatever the code.
 * Rate metadata, which errors[].details can only hold flat, is written there as
 * `limit`, `remaining`, `reset_at` and `bucket`.
 */
export function errorToEntry(
  error: NormalizedError,
  losses?: LossReport,
  rateLimit?: RateLimitInfo,
): IssueEntry {
  const code = encodeErrorCode(error, 'prov-v0.1');
  let message = error.message === '' ? code : error.message;
  if (error.message === '')
    losses?.add('/error/message', 'an empty message is not allowed; the code stands in');
  if (message.length > MAX_MESSAGE) {
    message = message.slice(0, MAX_MESSAGE);
    losses?.add('/error/message', `truncated to ${MAX_MESSAGE} characters`);
  }
  const entry: IssueEntry = { code, message };
  const flat = (value: unknown): value is string | number | boolean | null =>
    value === null || ['string', 'number', 'boolean'].includes(typeof value);
  if (error.details !== undefined || rateLimit !== undefined) {
    const details: Record<string, string | number | boolean | null> = {};
    for (const [key, value] of Object.entries(error.details ?? {})) {
      // Rate metadata nested in the details is carried flat below.
      if (key === 'rate_limit' && rateLimit !== undefined && value === rateLimit) continue;
      if (flat(value)) details[key] = value;
      else
        losses?.add(
          `/error/details/${key}`,
          'errors[].details holds only strings, numbers, booleans and null',
        );
    }
    if (rateLimit !== undefined) {
      for (const key of RATE_LIMIT_DETAILS) {
        const value = rateLimit[key];
        if (value === undefined) continue;
        if (key in details || !flat(value))
          losses?.add(`/meta/rate_limit/${key}`, `errors[].details already has a "${key}"`);
        else details[key] = value;
      }
    }
    if (Object.keys(details).length > 0 || error.details !== undefined) entry.details = details;
  }
  if (error.retriable) entry.retryable = true;
  return entry;
}

export function entryToError(entry: IssueEntry): NormalizedError {
  const { code, native } = decodeErrorCode(entry.code, 'prov-v0.1');
  const error: NormalizedError = {
    code,
    message: entry.message,
    // The schema's default: a missing flag means not retriable, whatever the code.
    retriable: entry.retryable ?? false,
  };
  if (native) error.native = native;
  if (entry.details !== undefined) error.details = { ...entry.details };
  return error;
}

/**
 * Claims the dialect: `mcp.envelope.v0.1` itself, or another version of the same
 * envelope (`mcp.envelope.v0.2`), which is a near miss: wrapping it would nest
 * one envelope in another.
 */
function claims(value: unknown): boolean {
  const candidate = fromText(value);
  if (claimsEnvelopeV01(candidate)) return true;
  return (
    isJsonObject(candidate) &&
    typeof candidate.schema_version === 'string' &&
    /^mcp\.envelope\.v\d/.test(candidate.schema_version) &&
    'result' in candidate
  );
}

function detect(value: unknown): Detection {
  const candidate = fromText(value);
  if (!claims(candidate)) {
    return {
      dialect: 'prov-v0.1',
      match: false,
      near: false,
      reasons: ['/schema_version must equal "mcp.envelope.v0.1"'],
    };
  }
  const issues = envelopeV01Issues(candidate);
  if (issues.length === 0) return { dialect: 'prov-v0.1', match: true };
  return {
    dialect: 'prov-v0.1',
    match: false,
    near: true,
    reasons: issues.slice(0, 8).map((issue) => `${issue.pointer || '/'} ${issue.message}`),
  };
}

/** Rate metadata an error's flat details carry (`limit`, `remaining` and `reset_at` all present). */
function rateLimitOfDetails(details: NonNullable<IssueEntry['details']>): RateLimitInfo | undefined {
  const { limit, remaining, reset_at: resetAt, bucket } = details;
  if (!('limit' in details && 'remaining' in details && 'reset_at' in details)) return undefined;
  if (limit !== null && typeof limit !== 'number') return undefined;
  if (remaining !== null && typeof remaining !== 'number') return undefined;
  if (resetAt !== null && typeof resetAt !== 'string') return undefined;
  const rateLimit: RateLimitInfo = { limit, remaining, reset_at: resetAt };
  if (typeof bucket === 'string' || bucket === null) rateLimit.bucket = bucket;
  return rateLimit;
}

function decode(value: unknown): NormalizedResult {
  const candidate = fromText(value);
  const detection = detect(candidate);
  if (!detection.match) {
    throw new EnvelopeError(
      'ENVELOPE_INVALID',
      `Not a valid prov-v0.1 envelope: ${detection.reasons.join('; ')}`,
      {
        dialect: 'prov-v0.1',
        reasons: detection.reasons,
      },
    );
  }
  const envelope = candidate as unknown as EnvelopeV01;
  const errors = envelope.errors;
  const first = errors?.[0];
  const model: NormalizedResult = {
    ok: first === undefined,
    data: envelope.result,
    version: envelope.schema_version,
    decodedFrom: 'prov-v0.1',
  };
  const rateLimit = first?.details === undefined ? undefined : rateLimitOfDetails(first.details);
  if (first !== undefined) {
    model.error = entryToError(first);
    // Flat rate metadata becomes the model's; encoding writes it back flat.
    if (rateLimit !== undefined && model.error.details !== undefined) {
      for (const key of RATE_LIMIT_DETAILS) delete model.error.details[key];
      // Details that held only the rate metadata were made for it: the error has none of its own.
      if (Object.keys(model.error.details).length === 0) delete model.error.details;
    }
  }
  if (errors !== undefined) model.errors = errors;
  const hints: UpgradeHint[] = [];
  if (envelope.warnings !== undefined) {
    model.warnings = [];
    for (const entry of envelope.warnings) {
      const hint = warningToHint(entry);
      if (hint) hints.push(hint);
      else model.warnings.push(entry);
    }
  }
  if ('provenance' in envelope) {
    model.provenance = envelope.provenance;
    const tool = isJsonObject(envelope.provenance) ? envelope.provenance.tool : undefined;
    if (isJsonObject(tool) && typeof tool.name === 'string') model.tool = tool.name;
  }
  if (envelope.meta !== undefined || hints.length > 0 || rateLimit !== undefined) {
    model.meta = { ...envelope.meta };
    if (hints.length > 0) model.meta.upgrade_hints = hints;
    if (rateLimit !== undefined) model.meta.rate_limit = rateLimit;
  }
  return model;
}

function encode(model: NormalizedResult, _context: EncodeContext = {}): Encoded {
  const losses = new LossReport();
  const source = model.meta ?? {};
  const meta: NonNullable<EnvelopeV01['meta']> = {};
  if (source.adapter !== undefined) meta.adapter = source.adapter.slice(0, 100);
  if (source.adapter !== undefined && source.adapter.length > 100)
    losses.add('/meta/adapter', 'truncated to 100 characters');
  if (source.request_id !== undefined) {
    if (source.request_id.length <= MAX_REQUEST_ID) meta.request_id = source.request_id;
    else losses.add('/meta/request_id', `longer than ${MAX_REQUEST_ID} characters`);
  }
  if (source.duration_ms !== undefined) {
    meta.duration_ms = Math.max(0, Math.round(source.duration_ms));
    if (meta.duration_ms !== source.duration_ms)
      losses.add('/meta/duration_ms', 'rounded to a non-negative integer');
  }
  if (source.schema_hints !== undefined) meta.schema_hints = source.schema_hints;
  losses.ifPresent(source.tier, '/meta/tier', 'mcp.envelope.v0.1 has no tier');
  losses.ifPresent(source.tool_version, '/meta/tool_version', 'mcp.envelope.v0.1 has no tool version');
  losses.ifPresent(source.capabilities, '/meta/capabilities', 'mcp.envelope.v0.1 has no capabilities');
  if (model.ok || model.errors !== undefined)
    losses.ifPresent(
      source.rate_limit,
      '/meta/rate_limit',
      'mcp.envelope.v0.1 carries rate metadata only in an error entry',
    );
  reportExtensions(model, losses, 'mcp.envelope.v0.1 is closed at the top level');
  losses.ifPresent(source.client, '/meta/client', 'mcp.envelope.v0.1 has no client field');
  const provenanceTool = isJsonObject(model.provenance) ? model.provenance.tool : undefined;
  const namedInProvenance = isJsonObject(provenanceTool) && provenanceTool.name === model.tool;
  if (model.tool !== undefined && !namedInProvenance)
    losses.add('/tool', 'mcp.envelope.v0.1 names the tool only inside a provenance record');

  const warnings: IssueEntry[] = [
    ...(model.warnings ?? []),
    ...(source.upgrade_hints ?? []).map(hintToWarning),
  ];
  const options: WrapOptions = { meta };
  if (model.warnings !== undefined || warnings.length > 0) options.warnings = warnings;
  if (model.provenance === null) options.explicitNullProvenance = true;

  const data = model.data === undefined ? null : model.data;
  const policy = applyCompatibilityPolicy(data, options);
  if (policy.action === 'passed-through') {
    throw new EnvelopeError(
      'ENVELOPE_INVALID',
      'The payload already is an mcp.envelope.v0.1; wrapping it again would double-wrap it',
      { pointer: '/data' },
    );
  }
  const wrapped = policy.envelope;
  let errors = model.errors;
  if (errors === undefined && !model.ok) {
    errors = [
      model.error
        ? errorToEntry(model.error, losses, source.rate_limit)
        : { code: 'INTERNAL_ERROR', message: 'The tool reported a failure without an error.' },
    ];
  }
  // Rebuilt in the documented member order: schema_version, result, errors, warnings, provenance, meta.
  const envelope: EnvelopeV01 = { schema_version: wrapped.schema_version, result: wrapped.result };
  if (errors !== undefined) envelope.errors = errors;
  if (model.warnings !== undefined || warnings.length > 0) envelope.warnings = warnings;
  if (model.provenance !== undefined) envelope.provenance = model.provenance;
  const wrapsLegacy = model.decodedFrom === undefined || model.decodedFrom === 'legacy';
  const finalMeta = wrapsLegacy ? wrapped.meta : Object.keys(meta).length > 0 ? meta : undefined;
  if (finalMeta !== undefined) envelope.meta = finalMeta;
  return { value: envelope, losses: losses.losses };
}

export const provV01Codec: DialectCodec = {
  id: 'prov-v0.1',
  schemaId: SCHEMA_IDS.envelope,
  schema: bundledSchema(SCHEMA_IDS.envelope),
  claims,
  payloadOf: payloadMember('result'),
  versionOf: stringMember('schema_version'),
  detect,
  decode,
  encode,
};
