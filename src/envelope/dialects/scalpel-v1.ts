import { randomUUID } from 'node:crypto';
import { SCHEMA_IDS } from '../../schemas/index.ts';
import type { DialectCodec, EncodeContext, Encoded } from '../dialect.ts';
import type { NormalizedError, NormalizedResult, RateLimitInfo, UpgradeHint } from '../model.ts';
import {
  assertDetected,
  bundledSchema,
  decodeErrorCode,
  defaultRetriable,
  detectBySchema,
  encodeErrorCode,
  extraMembers,
  fromText,
  isJsonObject,
  isRateLimitInfo,
  LossReport,
  payloadMember,
  reportErrorsBeyondFirst,
} from './shared.ts';

/**
 * Code Scalpel's MCP response envelope, V1.0 contract (seed 001), as a family:
 * the envelope its current source builds (`contract.py`) sends the metadata
 * members as null when its response profile leaves them out (the default
 * `minimal` profile leaves out all of them), and adds `warnings` (strings).
 * A null member decodes to an absent one; warnings become `SCALPEL.WARNING`
 * entries and are written back as strings. Members a server adds are kept.
 * An error's rate metadata travels in `error_details.rate_limit` (the details
 * are open; the contract has no member of its own for it), as hosted servers
 * carry theirs; a success has no place for it.
 */

/** The code a Code Scalpel warning (a bare string) has in the model. */
export const SCALPEL_WARNING = 'SCALPEL.WARNING';
const OWN_MEMBERS = new Set([
  'tier',
  'tool_version',
  'tool_id',
  'request_id',
  'capabilities',
  'duration_ms',
  'error',
  'upgrade_hints',
  'warnings',
  'data',
]);

export const SCALPEL_TIERS = ['community', 'pro', 'enterprise'] as const;
export type ScalpelTier = (typeof SCALPEL_TIERS)[number];

export interface ScalpelEnvelope {
  tier: ScalpelTier | null;
  tool_version: string | null;
  tool_id: string | null;
  request_id: string | null;
  capabilities: string[] | null;
  duration_ms?: number | null;
  error: { error: string; error_code: string; error_details: Record<string, unknown> | null } | null;
  upgrade_hints: UpgradeHint[] | null;
  warnings?: string[];
  data: unknown;
  [member: string]: unknown;
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/**
 * Error details members that would carry code contents. Error responses must
 * never include code contents, so these are withheld (and reported) on encode.
 */
export const CODE_CONTENT_KEYS: ReadonlySet<string> = new Set([
  'code',
  'source',
  'source_code',
  'snippet',
  'code_snippet',
  'content',
  'contents',
  'file_contents',
]);

const MARKERS = ['tool_id', 'tier', 'tool_version', 'upgrade_hints', 'capabilities'];

/** The contract version a value names among its capabilities (`envelope-v1`), if any. */
function versionOf(value: unknown): string | undefined {
  const candidate = fromText(value);
  const capabilities = isJsonObject(candidate) ? candidate.capabilities : undefined;
  if (!Array.isArray(capabilities)) return undefined;
  return capabilities.find(
    (item): item is string => typeof item === 'string' && /^envelope-v\d+$/.test(item),
  );
}

/** A value with `tool_id` and at least one more of the envelope's own members claims the dialect. */
function claims(value: unknown): boolean {
  const candidate = fromText(value);
  if (!isJsonObject(candidate) || !('tool_id' in candidate)) return false;
  return MARKERS.filter((key) => key in candidate).length >= 2;
}

function detect(value: unknown) {
  const candidate = fromText(value);
  return detectBySchema('scalpel-v1', SCHEMA_IDS.scalpelEnvelope, candidate, claims(candidate));
}

function decode(value: unknown): NormalizedResult {
  const candidate = fromText(value);
  assertDetected(detect(candidate));
  const envelope = candidate as unknown as ScalpelEnvelope;
  const model: NormalizedResult = {
    ok: envelope.error === null,
    data: envelope.data,
    decodedFrom: 'scalpel-v1',
  };
  const version = versionOf(envelope);
  if (version !== undefined) model.version = version;
  if (envelope.tool_id !== null) model.tool = envelope.tool_id;
  const meta: NonNullable<NormalizedResult['meta']> = {};
  // Null is what a response profile writes for "left out": it decodes to absent.
  if (envelope.tier !== null) meta.tier = envelope.tier;
  if (envelope.tool_version !== null) meta.tool_version = envelope.tool_version;
  if (envelope.request_id !== null) meta.request_id = envelope.request_id;
  // Empty arrays are what the encoder writes for "none", so they decode to absent.
  if (envelope.capabilities !== null && envelope.capabilities.length > 0)
    meta.capabilities = envelope.capabilities;
  if (typeof envelope.duration_ms === 'number') meta.duration_ms = envelope.duration_ms;
  if (envelope.upgrade_hints !== null && envelope.upgrade_hints.length > 0)
    meta.upgrade_hints = envelope.upgrade_hints;
  if (Object.keys(meta).length > 0) model.meta = meta;
  if (envelope.warnings !== undefined)
    model.warnings = envelope.warnings.map((message) => ({ code: SCALPEL_WARNING, message }));
  const extensions = extraMembers(envelope, OWN_MEMBERS);
  if (extensions) model.extensions = extensions;
  if (envelope.error !== null) {
    const { code, native } = decodeErrorCode(envelope.error.error_code, 'scalpel-v1');
    const error: NormalizedError = { code, message: envelope.error.error, retriable: defaultRetriable(code) };
    if (native) error.native = native;
    const details = envelope.error.error_details;
    if (details !== null) {
      const { rate_limit: rateLimit, ...rest } = details;
      // Rate metadata in the details is the model's meta.rate_limit; encoding puts it back there.
      if (isRateLimitInfo(rateLimit)) {
        model.meta = { ...model.meta, rate_limit: rateLimit };
        if (Object.keys(rest).length > 0) error.details = rest;
      } else {
        error.details = details;
      }
    }
    model.error = error;
  }
  return model;
}

function generatedRequestId(): string {
  return randomUUID().replaceAll('-', '');
}

function encodeError(
  error: NormalizedError,
  losses: LossReport,
  rateLimit: RateLimitInfo | undefined,
): NonNullable<ScalpelEnvelope['error']> {
  let details: Record<string, unknown> | null = null;
  if (error.details !== undefined || rateLimit !== undefined) {
    details = {};
    for (const [key, value] of Object.entries(error.details ?? {})) {
      if (CODE_CONTENT_KEYS.has(key)) {
        losses.add(`/error/details/${key}`, 'withheld: error responses never include code contents');
      } else {
        details[key] = value;
      }
    }
    if (rateLimit !== undefined) {
      if ('rate_limit' in details && details.rate_limit !== rateLimit)
        losses.add('/meta/rate_limit', 'error_details already has a "rate_limit"');
      else details.rate_limit = rateLimit;
    }
  }
  if (error.retriable !== defaultRetriable(error.code))
    losses.add('/error/retriable', 'Code Scalpel errors carry no retriable flag');
  return { error: error.message, error_code: encodeErrorCode(error, 'scalpel-v1'), error_details: details };
}

function encode(model: NormalizedResult, context: EncodeContext = {}): Encoded {
  const losses = new LossReport();
  const meta = model.meta ?? {};
  let tier: ScalpelTier = 'community';
  if (meta.tier !== undefined) {
    if ((SCALPEL_TIERS as readonly string[]).includes(meta.tier)) tier = meta.tier as ScalpelTier;
    else
      losses.add('/meta/tier', `"${meta.tier}" is not one of ${SCALPEL_TIERS.join(', ')}; community is used`);
  }
  let toolVersion = '0.0.0';
  if (meta.tool_version !== undefined) {
    if (SEMVER.test(meta.tool_version)) toolVersion = meta.tool_version;
    else losses.add('/meta/tool_version', `"${meta.tool_version}" is not a semantic version; 0.0.0 is used`);
  }
  const envelope: ScalpelEnvelope = {
    tier,
    tool_version: toolVersion,
    tool_id: model.tool ?? context.tool ?? 'unknown',
    request_id: meta.request_id || context.requestId || generatedRequestId(),
    capabilities: meta.capabilities ?? [],
    error: null,
    upgrade_hints: meta.upgrade_hints ?? [],
    data: model.data === undefined ? null : model.data,
  };
  if (meta.request_id === '') losses.add('/meta/request_id', 'an empty request id is replaced');
  if (meta.duration_ms !== undefined) {
    if (meta.duration_ms >= 0) envelope.duration_ms = meta.duration_ms;
    else losses.add('/meta/duration_ms', 'a negative duration is not allowed');
  }
  // Required for pro and enterprise; 0 stands for "not measured".
  if (envelope.duration_ms === undefined && tier !== 'community') envelope.duration_ms = 0;
  if (!model.ok) {
    envelope.error = encodeError(
      model.error ?? { code: 'INTERNAL_ERROR', message: 'The tool reported a failure.', retriable: false },
      losses,
      meta.rate_limit,
    );
  }
  reportErrorsBeyondFirst(model, losses);
  const warnings = model.warnings?.map((entry, index) => {
    if (entry.code !== SCALPEL_WARNING || entry.details !== undefined || entry.evidence !== undefined)
      losses.add(`/warnings/${index}`, 'Code Scalpel warnings are bare messages');
    return entry.code === SCALPEL_WARNING ? entry.message : `${entry.code}: ${entry.message}`;
  });
  losses.ifPresent(model.provenance, '/provenance', 'Code Scalpel envelopes have no provenance');
  losses.ifPresent(meta.adapter, '/meta/adapter', 'Code Scalpel envelopes have no adapter field');
  losses.ifPresent(meta.schema_hints, '/meta/schema_hints', 'Code Scalpel envelopes have no schema hints');
  if (model.ok)
    losses.ifPresent(meta.rate_limit, '/meta/rate_limit', 'a Code Scalpel success has no rate metadata');
  losses.ifPresent(meta.client, '/meta/client', 'Code Scalpel envelopes have no client field');
  // Keep the member order of the contract's examples.
  const ordered = {
    tier: envelope.tier,
    tool_version: envelope.tool_version,
    tool_id: envelope.tool_id,
    request_id: envelope.request_id,
    capabilities: envelope.capabilities,
    ...(envelope.duration_ms === undefined ? {} : { duration_ms: envelope.duration_ms }),
    error: envelope.error,
    upgrade_hints: envelope.upgrade_hints,
    ...(warnings === undefined ? {} : { warnings }),
    data: envelope.data,
  } as ScalpelEnvelope;
  for (const [key, value] of Object.entries(model.extensions ?? {})) {
    if (OWN_MEMBERS.has(key)) losses.add(`/extensions/${key}`, `"${key}" is a member of the envelope itself`);
    else ordered[key] = value;
  }
  return { value: ordered, losses: losses.losses };
}

export const scalpelV1Codec: DialectCodec = {
  id: 'scalpel-v1',
  schemaId: SCHEMA_IDS.scalpelEnvelope,
  schema: bundledSchema(SCHEMA_IDS.scalpelEnvelope),
  claims,
  payloadOf: payloadMember('data'),
  versionOf,
  detect,
  decode,
  encode,
};
