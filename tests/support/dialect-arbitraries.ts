import fc from 'fast-check';
import { claimedBy } from '../../src/envelope/detect.ts';
import type { ResultDialectId } from '../../src/envelope/dialect.ts';
import { ERROR_CODES } from '../../src/errors/index.ts';

/** Generators of valid envelopes of every result dialect, over generated payloads. */

const noEnvelope = (value: unknown): boolean =>
  claimedBy(value).length === 0 && !hasKey(value, 'schema_version');

function hasKey(value: unknown, key: string): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && key in value;
}

export const payload = fc.jsonValue({ maxDepth: 3 }).filter(noEnvelope);
export const objectPayload = fc
  .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }))
  .filter(noEnvelope);

/** Canonical codes, Code Scalpel spellings, and codes that are a tool's own. */
export const errorCode = fc.oneof(
  fc.constantFrom(...ERROR_CODES.map((spec) => spec.code)),
  fc.constantFrom('not_found', 'invalid_argument', 'internal_error', 'upgrade_required', 'timeout'),
  fc.constantFrom('MY.TOOL.BROKE', 'weird_code', 'E42'),
);
const text = fc.string({ minLength: 1, maxLength: 40 });
const primitive = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null));
const primitiveRecord = fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), primitive, { maxKeys: 3 });
const hint = fc.record({ feature: text, tier: fc.constantFrom('pro', 'enterprise'), reason: text });

const issueEntry = fc.record(
  { code: errorCode, message: text, details: primitiveRecord, retryable: fc.boolean() },
  { requiredKeys: ['code', 'message'] },
);

export const provEnvelope = fc.record(
  {
    schema_version: fc.constant('mcp.envelope.v0.1'),
    result: payload,
    errors: fc.array(issueEntry, { maxLength: 2 }),
    warnings: fc.array(
      issueEntry.map(({ retryable: _r, ...rest }) => rest),
      { maxLength: 2 },
    ),
    provenance: fc.constant(null),
    meta: fc.record(
      {
        adapter: fc.string({ maxLength: 20 }),
        request_id: fc.string({ maxLength: 30 }),
        duration_ms: fc.nat(100_000),
        schema_hints: fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 20 }), {
          maxKeys: 2,
        }),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['schema_version', 'result'] },
);

const semver = fc
  .tuple(fc.nat(20), fc.nat(20), fc.nat(20))
  .map(([major, minor, patch]) => `${major}.${minor}.${patch}`);

export const scalpelEnvelope = fc
  .record({
    tier: fc.constantFrom('community', 'pro', 'enterprise'),
    tool_version: semver,
    tool_id: text,
    request_id: fc.stringMatching(/^[0-9a-f]{8,32}$/),
    capabilities: fc.array(fc.constantFrom('envelope-v1', 'streaming'), { maxLength: 2 }),
    duration_ms: fc.option(fc.oneof(fc.nat(10_000), fc.double({ min: 0, max: 10_000, noNaN: true })), {
      nil: undefined,
    }),
    error: fc.option(
      fc.record({
        error: fc.string({ maxLength: 40 }),
        error_code: errorCode,
        error_details: fc.option(
          fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), primitive, { maxKeys: 2 }),
          {
            nil: null,
          },
        ),
      }),
      { nil: null },
    ),
    upgrade_hints: fc.array(hint, { maxLength: 2 }),
    data: payload,
  })
  .map((envelope) => {
    const { duration_ms, ...rest } = envelope;
    const duration = duration_ms ?? (envelope.tier === 'community' ? undefined : 5);
    return duration === undefined ? rest : { ...rest, duration_ms: duration };
  });

const rateLimit = fc.record(
  {
    limit: fc.option(fc.nat(1000), { nil: null }),
    remaining: fc.option(fc.nat(1000), { nil: null }),
    reset_at: fc.option(fc.constant('2026-02-19T12:00:00Z'), { nil: null }),
    bucket: fc.constantFrom('tool', 'api_key', 'ip'),
  },
  { requiredKeys: ['limit', 'remaining', 'reset_at'] },
);

/** The dated versions real hosted servers send, and one later. */
const hostedVersion = fc.constantFrom('2026-02-19', '2026-03-11', '2026-05-06', '2027-01-15');

/** Members real servers add beside the contract's own. */
const hostedExtensions = fc.record(
  { request_id: fc.stringMatching(/^[0-9a-f]{8}$/), server_version: semver },
  { requiredKeys: [] },
);

export const hostedEnvelope = fc.oneof(
  fc
    .record(
      {
        ok: fc.constant(true),
        tool: text,
        schema_version: hostedVersion,
        data: fc.oneof(
          payload,
          fc.tuple(payload, rateLimit).map(([value, limit]) => ({ value, rate_limit: limit })),
        ),
        rate_limit: rateLimit,
      },
      { requiredKeys: ['ok', 'tool', 'schema_version', 'data'] },
    )
    .chain((envelope) => hostedExtensions.map((extra) => ({ ...envelope, ...extra }))),
  fc
    .record(
      {
        ok: fc.constant(false),
        tool: text,
        schema_version: hostedVersion,
        error: fc.record(
          {
            code: errorCode,
            message: fc.string({ maxLength: 40 }),
            retriable: fc.boolean(),
            details: fc.oneof(
              fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), primitive, { maxKeys: 2 }),
              fc.record({ upgrade_hints: fc.array(hint, { minLength: 1, maxLength: 2 }) }),
              fc.record({ rate_limit: rateLimit }),
            ),
          },
          { requiredKeys: ['code', 'message', 'retriable'] },
        ),
        rate_limit: rateLimit,
      },
      { requiredKeys: ['ok', 'tool', 'schema_version', 'error'] },
    )
    .chain((envelope) => hostedExtensions.map((extra) => ({ ...envelope, ...extra }))),
);

const header = (ok: boolean) =>
  fc.record(
    {
      envelope: fc.constant('mcp.envelope_v0_1'),
      request_id: fc.stringMatching(/^req_[A-Za-z0-9_-]{1,20}$/),
      tool: text,
      ok: fc.constant(ok),
      client: fc.record({ name: text, version: semver }, { requiredKeys: [] }),
    },
    { requiredKeys: ['envelope', 'request_id', 'tool', 'ok'] },
  );

export const a11yEnvelope = fc.oneof(
  fc.record({ mcp: header(true), result: objectPayload }),
  fc.record({
    mcp: header(false),
    error: fc.record(
      { code: errorCode, message: fc.string({ maxLength: 40 }), fix: text },
      { requiredKeys: ['code', 'message'] },
    ),
  }),
);

export const legacyPayload = payload;

export const ENVELOPE_ARBITRARIES: Record<ResultDialectId, fc.Arbitrary<unknown>> = {
  'prov-v0.1': provEnvelope,
  'scalpel-v1': scalpelEnvelope,
  'hosted-v2': hostedEnvelope,
  'a11y-v0.1': a11yEnvelope,
  legacy: legacyPayload,
};
