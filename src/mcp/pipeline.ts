import type { CallToolResult } from '@modelcontextprotocol/server';
import { isJsonObject } from '../canonical/json-value.ts';
import { CallContext, resolveSettings } from './pipeline/context.ts';
import { decideOutput } from './pipeline/decide.ts';
import type { Decision } from './pipeline/decision.ts';
import { encodeAnswer, reportAnswer, reportRpcError } from './pipeline/encode.ts';
import { PipelineRpcError } from './pipeline/errors.ts';
import { fromRejection, invokeTool } from './pipeline/invoke.ts';
import { attachProvenance } from './pipeline/provenance.ts';
import { checkRateLimit, RATE_LIMIT_META_KEY } from './pipeline/rate-limit.ts';
import { readOutput } from './pipeline/read-output.ts';
import {
  type AnsweredAt,
  answeredAt,
  type CallSummary,
  relayedSummary,
  type UnenforcedCall,
} from './pipeline/report.ts';
import {
  noteEnvelopeDownload,
  readReturnMode,
  relayedReturnMode,
  requestedReturnMode,
  returnModeStage,
} from './pipeline/return-mode.ts';
import type { Pipeline, PipelineOptions, ToolCall } from './pipeline/types.ts';
import { checkInput, deniedAccess, deniedByTier } from './pipeline/validate-input.ts';
import type { ToolResultLike } from './tool-result.ts';

/**
 * The one enforcement pipeline for a tools/call, as a sequence of stages (each in
 * `./pipeline/`), every one reading and adding to the call's context:
 *
 * 0. the caller's access, when its rules refuse the tool (hidden: thrown as an
 *    unknown tool; a higher tier would allow it: UPGRADE_REQUIRED), then the
 *    rate limit, when there is one: a denied call stops here;
 * 1. validate the input: tier gate, argument size and depth, canonical form, inputSchema;
 * 2. invoke the tool (with the timeout); then, with an artifact sink, apply the
 *    caller's return mode (files stored and replaced by download descriptors);
 * 3. read its output: payload found and dialect detected, once;
 * 4. decide the answer: pass through, convert, wrap, near miss, or INVALID_OUTPUT;
 * 5. attach provenance when the caller opted in;
 * 6. encode the answer in the pipeline's dialect;
 * 7. report the call, once.
 *
 * The server middleware and the gateway both run every call through it, so
 * they cannot drift apart.
 */

export { PipelineRpcError, ToolProcessError, ToolTimeoutError } from './pipeline/errors.ts';
export type {
  CallAction,
  CallFailure,
  CallOutcome,
  CallSummary,
  RecordPlacement,
} from './pipeline/report.ts';
export {
  type AnsweredAt,
  answeredAt,
  digestOf,
  relayedSummary,
  thrownSummary,
  type UnenforcedCall,
} from './pipeline/report.ts';
export type {
  CallAccess,
  Pipeline,
  PipelineOptions,
  PipelineTool,
  ToolArguments,
  ToolCall,
  ValidationMode,
} from './pipeline/types.ts';

/** The call as the relayed report names it. */
function unenforced(ctx: CallContext): UnenforcedCall {
  const { call } = ctx;
  return {
    tool: call.tool.name,
    arguments: call.arguments,
    started: ctx.started,
    signal: call.signal,
  };
}

/** Stages 1 to 4: the decision, or an interim result that goes back unchanged. */
async function decide(ctx: CallContext): Promise<Decision | { interim: ToolResultLike }> {
  const denied = deniedAccess(ctx);
  if (denied) return denied;
  if (ctx.controlsError) return fromRejection(ctx, ctx.controlsError);
  const limited = ctx.settings.options.rateLimit ? await checkRateLimit(ctx) : undefined;
  if (limited) return limited;
  const refused = (await checkInput(ctx)) ?? readReturnMode(ctx);
  if (refused) return refused;
  let raw: ToolResultLike;
  try {
    raw = await invokeTool(ctx);
  } catch (error) {
    if (ctx.call.isProtocolSignal?.(error)) throw error;
    return fromRejection(ctx, error);
  }
  if (ctx.call.isInterim?.(raw)) return { interim: raw };
  if (ctx.call.warnings) ctx.warnings.push(...ctx.call.warnings);
  const returned = await returnModeStage(ctx, raw);
  if ('decision' in returned) return returned.decision;
  const output = readOutput(returned.result);
  await noteEnvelopeDownload(ctx, output);
  return decideOutput(ctx, output);
}

/**
 * A passthrough call: the same gates as every call (rate limit, tier gate, the
 * caller's return mode) and the same report, and the tool's result relayed as
 * it came, with the rate metadata in `_meta` when a rule applies. Returns the
 * pipeline's own answer (a denial) as a decision, else the relayed result.
 */
async function relay(ctx: CallContext): Promise<Decision | { relayed: ToolResultLike }> {
  const denied = deniedAccess(ctx);
  if (denied) return denied;
  const limited = ctx.settings.options.rateLimit ? await checkRateLimit(ctx) : undefined;
  const refused = limited ?? deniedByTier(ctx);
  if (refused) return refused;
  const sink = ctx.settings.options.artifacts;
  const { call } = ctx;
  // A bad return_mode is INVALID_INPUT, thrown: passthrough has no envelope to say it in.
  if (sink) ctx.returnMode = requestedReturnMode(call.tool.inputSchema, call.arguments, call.returnMode);
  // A rejection (an upstream's JSON-RPC error) is relayed as it came.
  const raw = await invokeTool(ctx);
  if (call.isInterim?.(raw)) return { relayed: raw };
  const result = await relayedReturnMode(ctx, raw);
  if (!ctx.rate?.applies) return { relayed: result };
  const meta = isJsonObject(result._meta) ? result._meta : {};
  return { relayed: { ...result, _meta: { ...meta, [RATE_LIMIT_META_KEY]: ctx.rate.info } } };
}

export function createPipeline(options: PipelineOptions = {}): Pipeline {
  const settings = resolveSettings(options);

  /** Hands the call's summary to whoever listens, built at most once, as of now. */
  function report(ctx: CallContext, build: (at: AnsweredAt) => CallSummary): void {
    const at = answeredAt(ctx.call.signal);
    let built: CallSummary | undefined;
    const summary = () => {
      built ??= build(at);
      return built;
    };
    if (options.onCall) options.onCall(summary());
    ctx.call.report?.(summary);
  }

  /** Whether anyone listens: the summary is built only then, its digests cost. */
  const listened = (ctx: CallContext) => options.onCall !== undefined || ctx.call.report !== undefined;

  async function callTool(call: ToolCall): Promise<CallToolResult> {
    // Passthrough reads no controls from `_meta`: it belongs to the tool.
    const ctx = new CallContext(
      settings,
      settings.mode === 'passthrough' ? { ...call, meta: undefined } : call,
    );
    let decision: Decision;
    try {
      const decided = settings.mode === 'passthrough' ? await relay(ctx) : await decide(ctx);
      if ('relayed' in decided) {
        const result = decided.relayed as CallToolResult;
        if (listened(ctx) && !call.isInterim?.(result))
          report(ctx, (at) => relayedSummary(unenforced(ctx), result, at));
        return result;
      }
      if ('interim' in decided) return decided.interim as CallToolResult;
      decision = decided;
    } catch (error) {
      if (error instanceof PipelineRpcError && listened(ctx))
        report(ctx, (at) => reportRpcError(ctx, error, at));
      throw error;
    }
    // The record and the report digest the arguments: large ones are put in canonical form off the event loop.
    if (ctx.largeArguments) await ctx.prepareCanonicalArguments();
    const placed = attachProvenance(ctx, decision);
    const answer = encodeAnswer(ctx, placed);
    // The stored files' links follow everything else the answer says.
    if (ctx.trailingBlocks.length > 0)
      answer.result.content.push(...(ctx.trailingBlocks as CallToolResult['content']));
    if (listened(ctx)) report(ctx, (at) => reportAnswer(ctx, placed, answer, at));
    return answer.result;
  }

  return { dialect: settings.mode, outputSchema: settings.outputSchema, callTool };
}
