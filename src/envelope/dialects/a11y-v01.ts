import { randomBytes } from 'node:crypto';
import { SCHEMA_IDS } from '../../schemas/index.ts';
import type { DialectCodec, EncodeContext, Encoded } from '../dialect.ts';
import type { NormalizedError, NormalizedResult } from '../model.ts';
import {
  assertDetected,
  bundledSchema,
  decodeErrorCode,
  defaultRetriable,
  detectByBranch,
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
 * The accessibility suite's `mcp.envelope_v0_1` responses:
 * `{mcp: {envelope, request_id: "req_…", tool, ok, client?}, result}` and
 * `{mcp: {…, ok: false}, error: {code, message, fix?}}`.
 *
 * The suite's schema says `^req_[a-zA-Z0-9]+$`, while its own fixtures
 * (`req_fixture_evidence_001`) and its id generator (base64url: `-` and `_`)
 * produce ids outside that pattern. Detection accepts `^req_[A-Za-z0-9_-]+$`,
 * so the suite's real output is recognised; ids this codec generates keep to
 * the strict pattern, so they satisfy both.
 *
 * The suite's error object is open: an error's rate metadata travels there as
 * `rate_limit`, the member hosted servers use; a success has no place for it.
 */

export const A11Y_ENVELOPE = 'mcp.envelope_v0_1';
const REQUEST_ID = /^req_[A-Za-z0-9_-]+$/;
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

interface A11yHeader {
  envelope: typeof A11Y_ENVELOPE;
  request_id: string;
  tool: string;
  ok: boolean;
  client?: { name?: string; version?: string };
}

interface A11yEnvelope {
  mcp: A11yHeader;
  result?: Record<string, unknown>;
  error?: { code: string; message: string; fix?: string; [member: string]: unknown };
  [member: string]: unknown;
}

/** The members the suite's envelope defines; others at the top level are a server's own. */
const OWN_MEMBERS = new Set(['mcp', 'result', 'error']);

/**
 * The tool input of a call made in the suite's documented request form,
 * `{mcp: {envelope: "mcp.envelope_v0_1", request_id, tool, client?}, input}`,
 * which its server accepts beside bare arguments; undefined for any other
 * arguments. A tool's inputSchema describes `input`, not the request around it.
 */
export function a11yRequestInput(args: unknown): Record<string, unknown> | undefined {
  if (!isJsonObject(args) || !isJsonObject(args.mcp) || !isJsonObject(args.input)) return undefined;
  if (Object.keys(args).length !== 2 || args.mcp.envelope !== A11Y_ENVELOPE) return undefined;
  return args.input;
}

/** A request id matching the suite's strict schema pattern. */
export function a11yRequestId(): string {
  const bytes = randomBytes(20);
  let id = 'req_';
  for (const byte of bytes) id += ALPHANUMERIC[byte % ALPHANUMERIC.length];
  return id;
}

function claims(value: unknown): boolean {
  const candidate = fromText(value);
  return isJsonObject(candidate) && isJsonObject(candidate.mcp) && 'envelope' in candidate.mcp;
}

function detect(value: unknown) {
  const candidate = fromText(value);
  const ok = isJsonObject(candidate) && isJsonObject(candidate.mcp) ? candidate.mcp.ok : undefined;
  return detectByBranch('a11y-v0.1', SCHEMA_IDS.a11yEnvelope, candidate, claims(candidate), ok);
}

function decode(value: unknown): NormalizedResult {
  const candidate = fromText(value);
  assertDetected(detect(candidate));
  const envelope = candidate as unknown as A11yEnvelope;
  const header = envelope.mcp;
  const model: NormalizedResult = {
    ok: header.ok,
    tool: header.tool,
    data: header.ok ? envelope.result : null,
    version: header.envelope,
    decodedFrom: 'a11y-v0.1',
    meta: { request_id: header.request_id },
  };
  if (header.client !== undefined)
    (model.meta as NonNullable<NormalizedResult['meta']>).client = header.client;
  const extensions = extraMembers(envelope, OWN_MEMBERS);
  if (extensions) model.extensions = extensions;
  if (envelope.error !== undefined) {
    const { code: spelled, message, ...rest } = envelope.error;
    const { code, native } = decodeErrorCode(spelled, 'a11y-v0.1');
    const error: NormalizedError = { code, message, retriable: defaultRetriable(code) };
    if (native) error.native = native;
    // Rate metadata is the model's meta.rate_limit; encoding puts it back in the error.
    const { rate_limit: rateLimit, ...others } = rest;
    const own = isRateLimitInfo(rateLimit) ? others : rest;
    if (isRateLimitInfo(rateLimit)) model.meta = { ...model.meta, rate_limit: rateLimit };
    // `fix` and any member a server adds to its error travel as details.
    if (Object.keys(own).length > 0) error.details = own;
    model.error = error;
  }
  return model;
}

function encode(model: NormalizedResult, context: EncodeContext = {}): Encoded {
  const losses = new LossReport();
  const meta = model.meta ?? {};
  let requestId = meta.request_id;
  if (requestId !== undefined && !REQUEST_ID.test(requestId)) {
    losses.add(
      '/meta/request_id',
      `"${requestId.slice(0, 80)}" does not match ^req_[A-Za-z0-9_-]+$; a new id is used`,
    );
    requestId = undefined;
  }
  if (requestId === undefined && context.requestId !== undefined && REQUEST_ID.test(context.requestId))
    requestId = context.requestId;
  const header: A11yHeader = {
    envelope: A11Y_ENVELOPE,
    request_id: requestId ?? a11yRequestId(),
    tool: model.tool ?? context.tool ?? 'unknown',
    ok: model.ok,
  };
  if (meta.client !== undefined) header.client = meta.client;
  const envelope: A11yEnvelope = { mcp: header };
  if (model.ok) {
    const data = model.data;
    if (isJsonObject(data)) {
      envelope.result = data;
    } else {
      envelope.result = { value: data === undefined ? null : data };
      losses.add(
        '/data',
        "the suite's result must be an object; the payload is carried as result.value",
        true,
      );
    }
  } else {
    const error = model.error ?? {
      code: 'INTERNAL_ERROR',
      message: 'The tool reported a failure.',
      retriable: false,
    };
    const out: NonNullable<A11yEnvelope['error']> = {
      code: encodeErrorCode(error, 'a11y-v0.1'),
      message: error.message,
    };
    if (error.details !== undefined && Object.keys(error.details).length === 0)
      losses.add('/error/details', "an empty details object has no place in the suite's errors");
    for (const [key, value] of Object.entries(error.details ?? {})) {
      if (key === 'fix' && typeof value !== 'string')
        losses.add('/error/details/fix', "the suite's fix is a string");
      else if (key !== 'code' && key !== 'message') out[key] = value;
      else losses.add(`/error/details/${key}`, `"${key}" is a member of the suite's error itself`);
    }
    if (meta.rate_limit !== undefined) {
      if ('rate_limit' in out && out.rate_limit !== meta.rate_limit)
        losses.add('/meta/rate_limit', 'the error already has a "rate_limit"');
      else out.rate_limit = meta.rate_limit;
    }
    if (error.retriable !== defaultRetriable(error.code))
      losses.add('/error/retriable', "the suite's errors carry no retriable flag");
    envelope.error = out;
    if (model.data !== undefined && model.data !== null)
      losses.add('/data', "the suite's error envelopes carry no result");
  }
  reportErrorsBeyondFirst(model, losses);
  for (const [key, value] of Object.entries(model.extensions ?? {})) {
    if (OWN_MEMBERS.has(key)) losses.add(`/extensions/${key}`, `"${key}" is a member of the envelope itself`);
    else envelope[key] = value;
  }
  losses.ifPresent(model.warnings, '/warnings', "the suite's envelopes have no warnings");
  losses.ifPresent(model.provenance, '/provenance', "the suite's envelopes have no provenance member");
  for (const key of [
    'duration_ms',
    'adapter',
    'tier',
    'tool_version',
    'capabilities',
    'upgrade_hints',
    'schema_hints',
  ] as const) {
    losses.ifPresent(meta[key], `/meta/${key}`, `the suite's envelopes have no ${key}`);
  }
  if (model.ok)
    losses.ifPresent(meta.rate_limit, '/meta/rate_limit', "the suite's successes have no rate_limit");
  return { value: envelope, losses: losses.losses };
}

export const a11yV01Codec: DialectCodec = {
  id: 'a11y-v0.1',
  schemaId: SCHEMA_IDS.a11yEnvelope,
  schema: bundledSchema(SCHEMA_IDS.a11yEnvelope),
  claims,
  payloadOf: payloadMember('result'),
  versionOf: (value) => {
    const candidate = fromText(value);
    const header = isJsonObject(candidate) ? candidate.mcp : undefined;
    return isJsonObject(header) && typeof header.envelope === 'string' ? header.envelope : undefined;
  },
  detect,
  decode,
  encode,
};
