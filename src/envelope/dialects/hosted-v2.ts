import { SCHEMA_IDS } from '../../schemas/index.ts';
import type { DialectCodec, EncodeContext, Encoded } from '../dialect.ts';
import type { NormalizedError, NormalizedResult, RateLimitInfo, UpgradeHint } from '../model.ts';
import {
  assertDetected,
  bundledSchema,
  decodeErrorCode,
  detectByBranch,
  encodeErrorCode,
  fromText,
  isJsonObject,
  LossReport,
  payloadMember,
  reportErrorsBeyondFirst,
} from './shared.ts';

/**
 * Hosted MCP v2 (seed 003), schema_version 2026-02-19, carried as JSON text in
 * `result.content[0].text`. The guide says success envelopes carry placeholder
 * rate metadata (`limit`, `remaining`, `reset_at`, null until limiting applies)
 * without naming their place: here they are the optional top-level member
 * `rate_limit`, on success and error envelopes alike (a RATE_LIMITED error needs
 * `reset_at` most). Upgrade hints travel in `error.details.upgrade_hints`.
 */

export const HOSTED_SCHEMA_VERSION = '2026-02-19';

export interface HostedEnvelope {
  ok: boolean;
  tool: string;
  schema_version: typeof HOSTED_SCHEMA_VERSION;
  data?: unknown;
  error?: { code: string; message: string; retriable: boolean; details?: Record<string, unknown> };
  rate_limit?: RateLimitInfo;
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
    /^\d{4}-\d{2}-\d{2}$/.test(candidate.schema_version)
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

function decode(value: unknown): NormalizedResult {
  const candidate = fromText(value);
  assertDetected(detect(candidate));
  const envelope = candidate as unknown as HostedEnvelope;
  const model: NormalizedResult = {
    ok: envelope.ok,
    tool: envelope.tool,
    data: envelope.ok ? envelope.data : null,
    decodedFrom: 'hosted-v2',
  };
  if (envelope.rate_limit !== undefined) model.meta = { rate_limit: envelope.rate_limit };
  if (envelope.error !== undefined) {
    const { code, native } = decodeErrorCode(envelope.error.code, 'hosted-v2');
    const error: NormalizedError = {
      code,
      message: envelope.error.message,
      retriable: envelope.error.retriable,
    };
    if (native) error.native = native;
    if (envelope.error.details !== undefined) {
      const { upgrade_hints: hints, ...rest } = envelope.error.details;
      if (Array.isArray(hints) && hints.length > 0 && hints.every(isHint)) {
        model.meta = { ...model.meta, upgrade_hints: hints };
        // Details that held only the hints were made for them: the model has none of its own.
        if (Object.keys(rest).length > 0) error.details = rest;
      } else {
        error.details = envelope.error.details;
      }
    }
    model.error = error;
  }
  return model;
}

function encode(model: NormalizedResult, context: EncodeContext = {}): Encoded {
  const losses = new LossReport();
  const meta = model.meta ?? {};
  const envelope: HostedEnvelope = {
    ok: model.ok,
    tool: model.tool ?? context.tool ?? 'unknown',
    schema_version: HOSTED_SCHEMA_VERSION,
  };
  const hints = meta.upgrade_hints;
  if (model.ok) {
    envelope.data = model.data === undefined ? null : model.data;
    if (hints !== undefined)
      losses.add('/meta/upgrade_hints', 'a hosted v2 success has no place for upgrade hints');
  } else {
    const error = model.error ?? {
      code: 'INTERNAL_ERROR',
      message: 'The tool reported a failure.',
      retriable: false,
    };
    const out: NonNullable<HostedEnvelope['error']> = {
      code: encodeErrorCode(error, 'hosted-v2'),
      message: error.message,
      retriable: error.retriable,
    };
    if (error.details !== undefined || hints !== undefined) out.details = { ...error.details };
    if (hints !== undefined && out.details) out.details.upgrade_hints = hints;
    if (hints !== undefined && error.details !== undefined && Object.keys(error.details).length === 0)
      losses.add(
        '/error/details',
        'an empty details object cannot be told apart from the upgrade hints it holds',
      );
    envelope.error = out;
    if (model.data !== undefined && model.data !== null)
      losses.add('/data', 'a hosted v2 error envelope carries no data');
  }
  if (meta.rate_limit !== undefined) envelope.rate_limit = meta.rate_limit;
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
  detect,
  decode,
  encode,
};
