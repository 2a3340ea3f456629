import type { ObservedFailure } from '../../envelope/compat-policy.ts';
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

/**
 * A tool that ran as a process and failed, with all that was observed of it
 * (exit code, signal, stderr, the output it wrote before failing, its own
 * error codes, a message): a rejected invoke carrying one is wrapped from
 * exactly that, as `wrap --exec` reports a command.
 */
export class ToolProcessError extends Error {
  readonly observed: ObservedFailure;

  constructor(observed: ObservedFailure) {
    super(observed.message ?? 'the tool failed');
    this.name = 'ToolProcessError';
    this.observed = observed;
  }
}
