export {
  ADAPTER_EXECUTION_FAILED,
  ADAPTER_STDERR_OUTPUT,
  adapterFailureEntry,
  applyCompatibilityPolicy,
  type ObservedFailure,
  STDERR_EXCERPT_CHARS,
  stderrExcerpt,
  toolReportedErrors,
  type WrapOptions,
  type WrapOutcome,
  wrapFailure,
  wrapLegacy,
} from './compat-policy.ts';
// The dialect layer: codecs, detection, conversion, tiers and profiles. These
// names are stable; the SDK integration imports them.
export { type Conversion, type ConvertOptions, convert, type Normalized, normalize } from './convert.ts';
export {
  claimedBy,
  type DetectionReport,
  detectDialect,
  envelopesIn,
  requireDialect,
} from './detect.ts';
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
export { A11Y_ENVELOPE, a11yRequestId } from './dialects/a11y-v01.ts';
export { HOSTED_SCHEMA_VERSION, NO_RATE_LIMIT } from './dialects/hosted-v2.ts';
export { CODECS, codecFor, ENVELOPE_CODECS, isDialectId } from './dialects/index.ts';
export { parseRequestEnvelope, type RequestEnvelope } from './dialects/jsonrpc-request.ts';
export { UPGRADE_HINT_WARNING } from './dialects/prov-v01.ts';
export { CODE_CONTENT_KEYS, SCALPEL_TIERS } from './dialects/scalpel-v1.ts';
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
  claimsEnvelopeV01,
  classifyV01,
  ENVELOPE_V01,
  type EnvelopeV01,
  envelopeFromText,
  envelopeV01Issues,
  isEnvelopeV01,
  type V01Classification,
} from './prov-v01.ts';
export {
  DEFAULT_TIERS,
  FeatureGate,
  type GateDecision,
  gateFeature,
  type TierConfig,
  upgradeRequiredError,
  withUpgradeHints,
} from './tiers.ts';
