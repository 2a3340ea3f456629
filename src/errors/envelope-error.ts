import { describeErrorCode, type ErrorCode, jsonRpcCodeOn } from './codes.ts';

export type ErrorDetails = Record<string, unknown>;

/**
 * The one error type the library throws. `code` is stable and is always a
 * canonical code of the table (`ErrorCode`, so a misspelt code does not compile);
 * `details` carries structured context such as the JSON Pointer of the offending value.
 */
export class EnvelopeError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;

  constructor(code: ErrorCode, message?: string, details?: ErrorDetails, options?: { cause?: unknown }) {
    super(message ?? describeErrorCode(code).message, options);
    this.name = 'EnvelopeError';
    this.code = code;
    this.details = details;
  }

  get httpStatus(): number {
    return describeErrorCode(this.code).httpStatus;
  }

  get retriable(): boolean {
    return describeErrorCode(this.code).retriable;
  }

  toJSON(): { code: string; message: string; details?: ErrorDetails } {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export function isEnvelopeError(value: unknown): value is EnvelopeError {
  return value instanceof EnvelopeError;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data: { canonical_code: string } & ErrorDetails;
}

/**
 * The JSON-RPC error object for a canonical code, carrying `data.canonical_code`
 * for downstream telemetry (the validation spec's `to_jsonrpc_error`). With a
 * `protocolVersion` of 2026-07-28 or later, the code is the one that wire
 * allows (`jsonRpcCodeOn`).
 */
export function toJsonRpcError(
  code: string,
  message?: string,
  details?: ErrorDetails,
  protocolVersion?: string,
): JsonRpcErrorObject {
  const spec = describeErrorCode(code);
  return {
    code: jsonRpcCodeOn(spec.jsonRpcCode, protocolVersion),
    message: message ?? spec.message,
    data: { ...details, canonical_code: spec.code },
  };
}
