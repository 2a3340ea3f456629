/**
 * mcp-envelope/envelope: `mcp.envelope.v0.1` and its compatibility policy, the
 * dialects (detection, normalization, conversion), response profiles and the
 * tier gate. Each codec's own constants and the policy's building blocks stay
 * internal: the functions here are the way in.
 */
export {
  applyCompatibilityPolicy,
  type ObservedFailure,
  type WrapOptions,
  type WrapOutcome,
  wrapFailure,
  wrapLegacy,
} from './compat-policy.ts';
export {
  type Conversion,
  type ConvertOptions,
  convert,
  type LosslessInput,
  type Normalized,
  normalize,
} from './convert.ts';
export { type DetectionReport, detectDialect } from './detect.ts';
export {
  type Detection,
  DIALECT_IDS,
  type DialectCodec,
  type DialectId,
  type EncodeContext,
  type Encoded,
  type Loss,
  type ResultDialectId,
} from './dialect.ts';
export { CODECS, codecFor, isDialectId } from './dialects/index.ts';
export { parseRequestEnvelope, type RequestEnvelope } from './dialects/jsonrpc-request.ts';
export type {
  IssueEntry,
  NormalizedError,
  NormalizedMeta,
  NormalizedResult,
  RateLimitInfo,
  UpgradeHint,
} from './model.ts';
export {
  applyProfile,
  applyProfileToData,
  isProfile,
  PROFILES,
  type Profile,
  type ProfileConfig,
  profileConfigFrom,
} from './profiles.ts';
export {
  assertEnvelopeV01,
  ENVELOPE_V01,
  type EnvelopeV01,
  envelopeV01Issues,
  isEnvelopeV01,
} from './prov-v01.ts';
export {
  DEFAULT_TIERS,
  FeatureGate,
  type GateDecision,
  gateFeature,
  type TierConfig,
} from './tiers.ts';
