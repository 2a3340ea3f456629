export {
  describeErrorCode,
  ERROR_CODES,
  type ErrorCodeSpec,
  type ErrorKind,
  type ErrorSource,
  isKnownErrorCode,
  JSONRPC,
  lookupErrorCode,
} from './codes.ts';
export {
  EnvelopeError,
  type ErrorDetails,
  isEnvelopeError,
  type JsonRpcErrorObject,
  toJsonRpcError,
} from './envelope-error.ts';
