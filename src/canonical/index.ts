/**
 * mcp-envelope/canonical: RFC 8785 canonical JSON, digests over it, and strict
 * (I-JSON) JSON input, including the lossless parse that keeps numbers as
 * written. `pathBeyondDepth` is the check behind JSON_TOO_DEEP, for values that
 * did not come through `parseJson` (a relayed message, say).
 */
export { canonicalBytes } from './canonical-bytes.ts';
export { canonicalize } from './canonicalize.ts';
export {
  DIGEST_ALGORITHMS,
  type Digest,
  type DigestAlg,
  digestBytes,
  digestFile,
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
  isRawNumber,
  type JsonObject,
  type JsonPrimitive,
  type JsonValue,
  MAX_NESTING_DEPTH,
  pathBeyondDepth,
  plainJson,
  type RawNumber,
  rawNumberValue,
} from './json-value.ts';
