import { isJsonObject } from '../../canonical/json-value.ts';
import { type ObservedFailure, wrapFailure } from '../../envelope/compat-policy.ts';
import type { IssueEntry } from '../../envelope/model.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { ToolResultLike } from '../tool-result.ts';
import type { CallContext } from './context.ts';
import { type Decision, invalidInput, onEnvelope, rejection } from './decision.ts';
import { entry } from './entries.ts';
import { ToolProcessError, ToolTimeoutError } from './errors.ts';

/** Stage 2: run the tool, within the pipeline's timeout when it has one (the tool's signal is aborted then). */
export async function invokeTool(ctx: CallContext): Promise<ToolResultLike> {
  const { call } = ctx;
  const timeoutMs = ctx.settings.options.timeoutMs;
  if (timeoutMs === undefined) return call.invoke(call.arguments, call.signal);
  const controller = new AbortController();
  const signal = call.signal ? AbortSignal.any([call.signal, controller.signal]) : controller.signal;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new ToolTimeoutError(timeoutMs);
      // Settle first, so that a tool answering its abort cannot win the race.
      reject(error);
      controller.abort(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([call.invoke(call.arguments, signal), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

type IssueDetails = NonNullable<IssueEntry['details']>;

/** Details an error carries about a failed process or a failed upstream call. */
function observedFailure(error: unknown): ObservedFailure {
  const failure: ObservedFailure = { exception: error };
  if (isJsonObject(error) || error instanceof Error) {
    const fields = error as unknown as Record<string, unknown>;
    const exit = fields.exitCode ?? fields.exit_code;
    if (typeof exit === 'number' || exit === null) failure.exitCode = exit;
    if (typeof fields.signal === 'string') failure.signal = fields.signal;
    if (typeof fields.stderr === 'string') failure.stderr = fields.stderr;
  }
  return failure;
}

/**
 * A call that ended in an exception (the tool's rejection, malformed controls):
 * INVALID_INPUT when that is what it says; TIMEOUT (retriable) when the call
 * ran out of time, here or upstream, as a relayed call says it; else a failed
 * execution with whatever the error tells of the process (exit code, signal, stderr).
 */
export function fromRejection(ctx: CallContext, error: unknown): Decision {
  if (error instanceof EnvelopeError && error.code === 'INVALID_INPUT') {
    const pointer = typeof error.details?.pointer === 'string' ? error.details.pointer : '';
    return invalidInput(ctx, error.message, pointer);
  }
  if (error instanceof ToolTimeoutError || (error instanceof EnvelopeError && error.code === 'TIMEOUT')) {
    const details: IssueDetails = {};
    if (error instanceof ToolTimeoutError) details.timeout_ms = error.timeoutMs;
    else {
      for (const [name, value] of Object.entries(error.details ?? {})) {
        if (value === null || ['string', 'number', 'boolean'].includes(typeof value))
          details[name] = value as IssueDetails[string];
      }
    }
    return rejection(ctx, 'execution_failed', {
      ...entry('TIMEOUT', `Operation timed out: ${error.message}`, details),
      retryable: true,
    });
  }
  const observed = error instanceof ToolProcessError ? error.observed : observedFailure(error);
  return onEnvelope(wrapFailure(observed, ctx.wrapOptions()), 'execution_failed', 'wrapped');
}
