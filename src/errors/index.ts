export {
  canonicalCode,
  DIALECT_SPELLINGS,
  describeErrorCode,
  dialectSpelling,
  ERROR_CODES,
  type ErrorCodeSpec,
  type ErrorKind,
  type ErrorSource,
  isKnownErrorCode,
  JSONRPC,
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
