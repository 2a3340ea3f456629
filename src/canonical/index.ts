export { canonicalBytes, canonicalize } from './canonicalize.ts';
export {
  assertDigestAlg,
  DIGEST_ALGORITHMS,
  DIGEST_HEX_LENGTH,
  type Digest,
  type DigestAlg,
  digestBytes,
  digestFile,
  digestFormatProblem,
  digestStream,
  digestValue,
  isDigestAlg,
  type StreamDigest,
} from './digest.ts';
export {
  decodeUtf8,
  type LosslessJson,
  type LosslessJsonValue,
  type ParseJsonOptions,
  parseJson,
  parseJsonBytes,
  parseJsonLossless,
} from './json-text.ts';
export {
  hasOwn,
  isJsonObject,
  isRawNumber,
  type JsonObject,
  type JsonPrimitive,
  type JsonValue,
  MAX_NESTING_DEPTH,
  pathBeyondDepth,
  plainJson,
  type RawNumber,
  rawNumberValue,
  setMember,
} from './json-value.ts';
