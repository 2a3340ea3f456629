import {
  ADAPTER_EXECUTION_FAILED,
  ENVELOPE_NEAR_MISS,
  MAX_MESSAGE_CHARS,
  type ObservedFailure,
  toolReportedErrors,
  wrapFailure,
  wrapLegacy,
} from '../../envelope/compat-policy.ts';
import { codecFor } from '../../envelope/dialects/index.ts';
import type { IssueEntry, NormalizedResult } from '../../envelope/model.ts';
import { applyProfileToData } from '../../envelope/profiles.ts';
import { classifyV01, type EnvelopeV01 } from '../../envelope/prov-v01.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { EnvelopeDetection } from '../dialects.ts';
import { contentText } from '../tool-result.ts';
import type { CallContext } from './context.ts';
import { type Decision, onEnvelope, rejection } from './decision.ts';
import { entry, invalidOutputEntry, issueSummary } from './entries.ts';
import { originalBlocks, type ToolOutput } from './read-output.ts';

/**
 * Stage 4: what to answer with, never losing what the tool returned. An envelope
 * of the pipeline's dialect passes through unchanged; one of another dialect is
 * converted through the normalized model; anything else is a legacy payload,
 * wrapped intact (a near miss of a dialect too, with a warning saying why it is
 * no envelope). Output that breaks the tool's outputSchema, and a claim that
 * cannot be wrapped without nesting envelopes, are INVALID_OUTPUT, the output
 * kept as the partial result or beside the envelope.
 */
export function decideOutput(ctx: CallContext, output: ToolOutput): Decision {
  const decision = decide(ctx, output);
  // Every branch answers for what the tool returned; each decision is a fresh object.
  decision.source = output.source;
  decision.returned = output.raw;
  return decision;
}

function decide(ctx: CallContext, output: ToolOutput): Decision {
  const problem = outputProblem(ctx, output);
  if (problem && ctx.settings.outputMode === 'enforce') {
    return rejectOutput(ctx, output, invalidOutputEntry(problem.text, problem.pointer, true));
  }
  if (problem) ctx.warnings.push(invalidOutputEntry(problem.text, problem.pointer, false));

  const { detection } = output;
  if (detection?.match) return envelopeFromTool(ctx, output, detection);
  if (detection && output.nests) {
    // No valid envelope, and one that cannot be wrapped (a broken mcp.envelope.v0.1, an
    // envelope in an envelope, one valid in two dialects): an error, its bytes beside it.
    const v01 = classifyV01(output.payload.value);
    const { pointer, text } =
      v01.kind === 'invalid-envelope' ? issueSummary(v01.issues) : { pointer: '', text: detection.message };
    const what = v01.kind === 'invalid-envelope' ? 'not a valid mcp.envelope.v0.1: ' : '';
    return rejectOutput(ctx, output, invalidOutputEntry(`${what}${text}`, pointer, true));
  }
  if (detection) {
    // A near miss of another dialect is no envelope: the tool's own payload, wrapped intact.
    ctx.warnings.push(
      entry(
        ENVELOPE_NEAR_MISS,
        `The tool output resembles ${detection.message}; it is kept intact as a legacy payload`,
        { dialect: detection.dialects.join(', ') },
      ),
    );
  }
  return output.isError ? errorResult(ctx, output) : wrapped(ctx, output);
}

/** Where the structured output breaks the tool's own outputSchema (checked on the tool's payload, before any wrapping). */
function outputProblem(ctx: CallContext, output: ToolOutput): { text: string; pointer: string } | undefined {
  const { tool } = ctx.call;
  if (ctx.settings.outputMode === 'off' || !tool.outputSchema || output.isError) return undefined;
  if (!output.structured) {
    return { text: `${tool.name} declares an outputSchema but returned no structured content`, pointer: '' };
  }
  const validator = ctx.validatorFor(tool.outputSchema);
  // The tool has run: a schema that cannot be compiled is the server's defect, reported
  // where the tool is listed, and never turns a call that ran into a failure.
  if (validator instanceof EnvelopeError) return undefined;
  const checked = validator(output.payload.value);
  return checked.valid ? undefined : issueSummary(checked.issues);
}

/**
 * The call's error instead of the output. The tool ran, so its output stays with the
 * error: as `result` (the policy's partial output) where that nests no envelope, else
 * as content blocks beside the envelope.
 */
function rejectOutput(ctx: CallContext, output: ToolOutput, error: IssueEntry): Decision {
  if (output.nests) {
    return {
      ...rejection(ctx, 'invalid_output', error),
      original: originalBlocks(output.raw),
      result: output.payload.value,
    };
  }
  const failure: ObservedFailure = {
    toolErrors: [error],
    ...(output.payload.value === null ? {} : { partialOutput: output.exact }),
  };
  return onEnvelope(wrapFailure(failure, ctx.wrapOptions()), 'invalid_output', 'rejected');
}

/**
 * The model of an envelope whose result the tool marked `isError` although the
 * envelope says ok: converted, it says failed too (as readToolResult reads it),
 * with the payload kept.
 */
function markedFailed(model: NormalizedResult, failed: boolean): NormalizedResult {
  if (!failed || !model.ok) return model;
  return {
    ...model,
    ok: false,
    error: {
      code: ADAPTER_EXECUTION_FAILED,
      message: 'The tool marked its result as an error',
      retriable: false,
    },
  };
}

/** A valid envelope the tool wrote: passed through in its own dialect (or by the `legacy` pipeline), else converted. */
function envelopeFromTool(
  ctx: CallContext,
  output: ToolOutput,
  detection: Extract<EnvelopeDetection, { match: true }>,
): Decision {
  const { dialect } = ctx.settings;
  const { payload, exact } = output;
  const failed = output.isError || !detection.model.ok;
  const model = markedFailed({ ...detection.model }, failed);
  const text = payload.source === 'json-text' || payload.source === 'structured' ? payload.text : undefined;
  const common = {
    isError: failed,
    failure: failed ? ('tool_error' as const) : null,
    // As a client reads the answer: the first error, else the failure the isError flag stands for.
    errorCode: failed ? (model.error?.code ?? model.errors?.[0]?.code ?? ADAPTER_EXECUTION_FAILED) : null,
    ...(text === undefined ? {} : { text }),
  };
  if (detection.dialect === 'prov-v0.1' && dialect === 'prov-v0.1') {
    return { ...onEnvelope(exact as EnvelopeV01, null, 'passed-through', 'own'), ...common };
  }
  const codec = codecFor(detection.dialect);
  // The decoded payload is the plain value's; the exact one is the same member of `exact`.
  if (exact !== payload.value && model.data === codec.payloadOf(payload.value))
    model.data = codec.payloadOf(exact);
  if (detection.dialect === dialect || dialect === 'legacy') {
    const foreign = exact as Record<string, unknown>;
    return { origin: 'foreign', foreign, action: 'passed-through', ...common, result: model.data };
  }
  return { origin: 'foreign', convertFrom: model, action: 'converted', ...common, result: model.data };
}

/**
 * An error result without an envelope. A plain-text error is the tool's message (an SDK
 * server's thrown exception arrives so), not output: it travels as the error's message,
 * and `result` stays null as the policy says for failures seen only as a message. A
 * message longer than an error entry holds is kept whole as the result, and a tool's own
 * structured codes win.
 */
function errorResult(ctx: CallContext, output: ToolOutput): Decision {
  const { payload } = output;
  const text = contentText(output.raw.content);
  const textual = payload.source === 'text' || payload.source === 'empty';
  const whole = !textual || text.length > MAX_MESSAGE_CHARS;
  const failure: ObservedFailure = {
    message: text || `Tool ${ctx.call.tool.name} reported an error`,
    ...(whole ? { partialOutput: output.exact } : {}),
  };
  const own = textual ? undefined : toolReportedErrors(payload.value);
  if (own) failure.toolErrors = own;
  return onEnvelope(wrapFailure(failure, ctx.wrapOptions()), 'tool_error', 'wrapped');
}

/** A legacy payload, wrapped intact (trimmed to the response profile). */
function wrapped(ctx: CallContext, output: ToolOutput): Decision {
  const { profile, profileConfig } = ctx.settings;
  const data =
    profile === 'debug'
      ? output.exact
      : applyProfileToData(output.payload.value, profile, profileConfig, ctx.call.tool.name);
  return onEnvelope(wrapLegacy(data, ctx.wrapOptions()), null, 'wrapped');
}
