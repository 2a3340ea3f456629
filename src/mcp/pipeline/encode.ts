import type { CallToolResult } from '@modelcontextprotocol/server';
import { isJsonObject } from '../../canonical/json-value.ts';
import type { DialectId, Loss } from '../../envelope/dialect.ts';
import { codecFor } from '../../envelope/dialects/index.ts';
import { escapeToken } from '../../pointer/json-pointer.ts';
import { fromEnvelopeV01 } from '../dialects.ts';
import { composeToolResult, LOSSES_META_KEY, OWN_META_PREFIX } from '../tool-result.ts';
import type { CallContext } from './context.ts';
import type { PipelineRpcError } from './errors.ts';
import type { Placed } from './provenance.ts';
import { convertBuilt, lost, placeRateLimit, RATE_LIMIT_META_KEY, rateLimitMeta } from './rate-limit.ts';
import { type AnsweredAt, type CallSummary, NO_ANSWER, summarize } from './report.ts';

/** Model fields the pipeline itself adds; a dialect without a place for them loses nothing of the tool's. */
const ADAPTER_META_PATHS = new Set(['/tool', '/meta/adapter', '/meta/request_id', '/meta/tier']);

/** The answer as sent, with what the report needs of it. */
export interface Answer {
  result: CallToolResult;
  /** The envelope (or bare payload) sent. */
  value: unknown;
  /** The dialect of `value`: the pipeline's, or that of a foreign envelope passed through as it came. */
  dialect: DialectId;
  losses: number;
}

/** A payload as one text block, as a tool would have written it. */
function textBlock(value: unknown): unknown[] {
  return [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }];
}

/**
 * Whether an encoding dropped the payload (an error envelope with no room for data);
 * a payload carried in another form (the accessibility suite's `result.value`) is not dropped.
 */
function dropsData(losses: readonly Loss[]): boolean {
  return losses.some((loss) => loss.path === '/data' && !loss.reshaped);
}

/**
 * Stage 6: the decision in the pipeline's dialect, as a CallToolResult. What the
 * dialect cannot carry is listed in `_meta`, and whatever it could not carry of
 * the tool's payload still reaches the client, as content blocks after the envelope.
 */
export function encodeAnswer(ctx: CallContext, placed: Placed): Answer {
  const { decision } = placed;
  const { dialect } = ctx.settings;
  const tool = ctx.call.tool.name;
  // Placed fresh for this call: the losses join the provenance entry.
  const { meta } = placed;
  let value: unknown;
  let text = decision.text;
  let losses: readonly Loss[] = [];
  let original = decision.original;
  let sentDialect: DialectId = dialect;
  // Whether the envelope sent carries the call's rate metadata (else `_meta` does, when a rule applies).
  let ratePlaced = false;
  if (decision.convertFrom) {
    // Another dialect's envelope, converted so that what is sent is what is advertised.
    const rated = placeRateLimit(ctx, decision.convertFrom, dialect);
    const converted = codecFor(dialect).encode(rated.model, { tool, requestId: ctx.requestId });
    value = converted.value;
    text = undefined;
    losses = converted.losses;
    ratePlaced = rated.placed && !lost(losses);
    // Metadata of ours the dialect had no place for is no loss of the tool's.
    if (rated.placed && !ratePlaced) losses = losses.filter((loss) => !lost([loss]));
    if (dropsData(converted.losses)) original ??= textBlock(decision.convertFrom.data);
  } else if (decision.origin === 'foreign') {
    value = decision.foreign;
    sentDialect = (decision.source?.dialect ?? dialect) as DialectId;
  } else if (decision.origin === 'own' || !decision.envelope) {
    value = decision.envelope;
  } else {
    const { envelope } = decision;
    const tier = ctx.tier;
    const context = { tool, requestId: ctx.requestId, ...(tier === undefined ? {} : { tier }) };
    const converted =
      ctx.rate === undefined || dialect === 'prov-v0.1'
        ? { ...fromEnvelopeV01(envelope, dialect, context), placed: ctx.rate?.denied === true }
        : convertBuilt(ctx, envelope, dialect, context);
    value = converted.value;
    ratePlaced = converted.placed;
    // The adapter's own metadata (rate metadata included: a built envelope has only ours)
    // is no loss of the tool's; everything else is reported.
    losses = converted.losses.filter((loss) => !ADAPTER_META_PATHS.has(loss.path) && !lost([loss]));
    text = undefined;
    // A legacy error result is its message, as plain MCP servers write it: isError and the text carry the errors.
    if (dialect === 'legacy' && decision.isError) {
      text = (envelope.errors ?? []).map((issue) => `${issue.code}: ${issue.message}`).join('\n');
      value = text;
      losses = losses.filter((loss) => !/^\/(?:ok|error|errors)(?:\/|$)/.test(loss.path));
      // The tool's partial output travels after the messages, unless they already say it.
      const partial = envelope.result;
      const said = typeof partial === 'string' && text.includes(partial);
      if (partial !== null && partial !== undefined && !said) original ??= textBlock(partial);
    } else if (dropsData(converted.losses) && envelope.result !== null) {
      original ??= textBlock(envelope.result);
    }
  }
  const rateLimit = rateLimitMeta(ctx, ratePlaced);
  if (rateLimit !== undefined) meta[RATE_LIMIT_META_KEY] = rateLimit;
  // A member of the tool's own `_meta` under the pipeline's prefix gives way to the pipeline's: said so.
  const toolMeta = isJsonObject(decision.returned?._meta) ? decision.returned._meta : {};
  const replaced = [...new Set([...Object.keys(meta), LOSSES_META_KEY])].filter((key) =>
    Object.hasOwn(toolMeta, key),
  );
  losses = [
    ...losses,
    ...replaced.map((key) => ({
      path: `/_meta/${escapeToken(key)}`,
      reason: `the tool's own _meta member gives way to the pipeline's (${OWN_META_PREFIX} is reserved)`,
    })),
  ];
  if (losses.length > 0) meta[LOSSES_META_KEY] = losses;
  const sent = isJsonObject(value) && dialect !== 'legacy' ? value : undefined;
  const lead = sent === undefined && decision.isError && typeof value === 'string' ? value : undefined;
  const parts = {
    isError: decision.isError,
    meta,
    ...(decision.returned ? { tool: decision.returned } : {}),
    ...(original && original.length > 0 ? { fallback: original } : {}),
  };
  const result = sent
    ? composeToolResult({ ...parts, envelope: sent, ...(text === undefined ? {} : { envelopeText: text }) })
    : composeToolResult({
        ...parts,
        ...(lead === undefined ? {} : { lead }),
        ...(isJsonObject(value) ? { structured: value } : {}),
        // A bare payload the tool never wrote as a block (a failure's message, say) still travels.
        ...(decision.returned || lead !== undefined ? {} : { fallback: textBlock(value ?? null) }),
      });
  return { result, value, dialect: sentDialect, losses: losses.length };
}

/** Stage 7: the call's one report. */
export function reportAnswer(ctx: CallContext, placed: Placed, answer: Answer, at: AnsweredAt): CallSummary {
  const { decision } = placed;
  return summarize(
    {
      tool: ctx.call.tool.name,
      dialect: ctx.settings.mode,
      failure: decision.failure,
      action: decision.action,
      code: decision.errorCode,
      requestId: ctx.requestId,
      started: ctx.started,
      signal: ctx.call.signal,
      argumentsDigest: () => ctx.argumentsDigest(),
      result: answer.result,
      resultDialect: answer.dialect,
      resultVersion: codecFor(answer.dialect).versionOf(answer.value) ?? null,
      source: decision.source,
      provenance: placed.provenance,
      losses: answer.losses,
    },
    at,
  );
}

/** Stage 7 for a call answered with the JSON-RPC error for invalid input (`invalidInput: 'jsonrpc-error'`). */
export function reportRpcError(ctx: CallContext, error: PipelineRpcError, at: AnsweredAt): CallSummary {
  return summarize(
    {
      tool: ctx.call.tool.name,
      dialect: ctx.settings.mode,
      failure: 'invalid_input',
      action: 'rejected',
      code: error.code,
      requestId: ctx.requestId,
      started: ctx.started,
      signal: ctx.call.signal,
      argumentsDigest: () => ctx.argumentsDigest(),
      ...NO_ANSWER,
    },
    at,
  );
}
