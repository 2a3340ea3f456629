/**
 * mcp-envelope/errors: the canonical error table and the one error class the
 * library throws.
 */
export {
  canonicalCode,
  DIALECT_SPELLINGS,
  describeErrorCode,
  dialectSpelling,
  ERROR_CODES,
  type ErrorCode,
  type ErrorCodeSpec,
  type ErrorKind,
  type ErrorSource,
  isErrorCode,
  isKnownErrorCode,
  type KnownErrorCodeSpec,
  lookupErrorCode,
  type SpellingDialect,
} from './codes.ts';
export {
  EnvelopeError,
  type ErrorDetails,
  isEnvelopeError,
  type JsonRpcErrorObject,
  toJsonRpcError,
} from './envelope-error.ts';
