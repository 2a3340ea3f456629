import {
  EnvelopeError,
  type ErrorCode,
  type JsonRpcErrorObject,
  toJsonRpcError,
} from '../../errors/index.ts';

/** The rejection of a tool call that ran out of time. */
export class ToolTimeoutError extends Error {
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`the tool did not answer within ${timeoutMs} ms`);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/** A call the pipeline answers with a JSON-RPC error instead of a result. */
export class PipelineRpcError extends EnvelopeError {
  readonly rpcError: JsonRpcErrorObject;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown>) {
    super(code, message, details);
    this.name = 'PipelineRpcError';
    this.rpcError = toJsonRpcError(code, message, details);
  }
}
