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
export type {
  IssueEntry,
  NormalizedError,
  NormalizedMeta,
  NormalizedResult,
  RateLimitInfo,
  UpgradeHint,
} from './model.ts';
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
