import { EnvelopeError } from '../../errors/index.ts';
import { SCHEMA_IDS } from '../../schemas/index.ts';
import type { Detection, DialectCodec, EncodeContext, Encoded } from '../dialect.ts';
import type { NormalizedResult } from '../model.ts';
import { bundledSchema, fromText, LossReport, reportExtensions } from './shared.ts';

/**
 * Anything that is no envelope: a plain string, object, array, number, boolean
 * or null, kept unchanged. A value that claims an envelope dialect (valid or a
 * near miss) is never legacy, so it is never wrapped a second time.
 */

export type ClaimCheck = { dialect: string; claims: (value: unknown) => boolean };

/** The marker checks of the envelope dialects, registered by the dialect index. */
const envelopeClaims: ClaimCheck[] = [];

export function registerEnvelopeClaims(checks: readonly ClaimCheck[]): void {
  envelopeClaims.splice(0, envelopeClaims.length, ...checks);
}

function claimedBy(value: unknown): string[] {
  const candidate = fromText(value);
  return envelopeClaims.filter((check) => check.claims(candidate)).map((check) => check.dialect);
}

function detect(value: unknown): Detection {
  if (value === undefined) {
    return { dialect: 'legacy', match: false, near: false, reasons: ['/ is not a JSON value'] };
  }
  const claimed = claimedBy(value);
  if (claimed.length === 0) return { dialect: 'legacy', match: true };
  return {
    dialect: 'legacy',
    match: false,
    near: false,
    reasons: claimed.map((dialect) => `/ claims the ${dialect} envelope, so it is not a legacy payload`),
  };
}

function decode(value: unknown): NormalizedResult {
  const detection = detect(value);
  if (!detection.match) {
    throw new EnvelopeError('ENVELOPE_INVALID', `Not a legacy payload: ${detection.reasons.join('; ')}`, {
      dialect: 'legacy',
      reasons: detection.reasons,
    });
  }
  return { ok: true, data: value, decodedFrom: 'legacy' };
}

/** The hint that wrapping a payload with its own schema_version adds; not information of its own. */
function derivedHint(model: NormalizedResult): string | undefined {
  const data = model.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const version = (data as Record<string, unknown>).schema_version;
  return typeof version === 'string' ? version : undefined;
}

function encode(model: NormalizedResult, _context: EncodeContext = {}): Encoded {
  const losses = new LossReport();
  if (!model.ok) losses.add('/ok', 'a legacy payload cannot say that the call failed');
  losses.ifPresent(model.error, '/error', 'a legacy payload has no error field');
  losses.ifPresent(model.errors, '/errors', 'a legacy payload has no errors[]');
  losses.ifPresent(model.warnings, '/warnings', 'a legacy payload has no warnings[]');
  losses.ifPresent(model.provenance, '/provenance', 'a legacy payload has no provenance');
  losses.ifPresent(model.tool, '/tool', 'a legacy payload does not name its tool');
  reportExtensions(model, losses, 'a legacy payload has no envelope members');
  for (const [key, value] of Object.entries(model.meta ?? {})) {
    if (value === undefined) continue;
    if (key === 'schema_hints') {
      const hints = value as Record<string, string>;
      const keys = Object.keys(hints);
      if (keys.length === 1 && keys[0] === 'result' && hints.result === derivedHint(model)) continue;
    }
    losses.add(`/meta/${key}`, 'a legacy payload has no metadata');
  }
  return { value: model.data === undefined ? null : model.data, losses: losses.losses };
}

export const legacyCodec: DialectCodec = {
  id: 'legacy',
  schemaId: SCHEMA_IDS.legacyPayload,
  schema: bundledSchema(SCHEMA_IDS.legacyPayload),
  claims: (value) => value !== undefined && claimedBy(value).length === 0,
  payloadOf: (value) => value,
  versionOf: () => undefined,
  detect,
  decode,
  encode,
};
