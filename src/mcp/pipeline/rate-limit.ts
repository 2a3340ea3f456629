import type { Encoded, ResultDialectId } from '../../envelope/dialect.ts';
import { codecFor } from '../../envelope/dialects/index.ts';
import type { NormalizedResult, RateLimitInfo } from '../../envelope/model.ts';
import type { EnvelopeV01 } from '../../envelope/prov-v01.ts';
import type { RateDecision } from '../../ratelimit/gcra.ts';
import { rateLimitedError, rateLimitInfo } from '../../ratelimit/info.ts';
import { envelopeV01For } from '../dialects.ts';
import type { CallContext } from './context.ts';
import { type Decision, onEnvelope } from './decision.ts';
import type { CallRate } from './types.ts';

/**
 * Stage 0, when the pipeline has a rate limit: the call is checked before
 * anything else runs, and a denied call is answered with RATE_LIMITED
 * (retriable, its rate metadata with `reset_at` in the error) without invoking
 * the tool. The decision stays on the context, so that every answer carries
 * the call's rate metadata (see `placeRateLimit`).
 */

/** Where an answer carries rate metadata its envelope has no place for (a key of the result's `_meta`). */
export const RATE_LIMIT_META_KEY = 'mcp-envelope/rate_limit';

export async function checkRateLimit(ctx: CallContext): Promise<Decision | undefined> {
  const check = ctx.settings.options.rateLimit;
  if (!check) return undefined;
  const checked = check(ctx.call);
  const decision = checked instanceof Promise ? await checked : checked;
  const info = rateLimitInfo(decision);
  ctx.rate = { info, applies: decision !== null, denied: decision !== null && !decision.allowed };
  if (decision === null || decision.allowed) return undefined;
  ctx.call.onRateLimited?.(decision);
  return onEnvelope(envelopeV01For(deniedModel(ctx, decision, info)), 'denied', 'rejected');
}

/** RATE_LIMITED, worded as hosted servers word it, with the metadata where the envelope carries an error's. */
function deniedModel(ctx: CallContext, decision: RateDecision, info: RateLimitInfo): NormalizedResult {
  return {
    ok: false,
    data: null,
    error: rateLimitedError(decision),
    meta: { adapter: ctx.settings.adapter, request_id: ctx.requestId, rate_limit: info },
  };
}

/**
 * Whether rate metadata of ours goes into an envelope of `dialect`: hosted v2
 * always (its contract has the null placeholder too); the others only on an
 * error, and only when a rule applies (their successes have no place for it).
 */
function carries(dialect: ResultDialectId, ok: boolean, rate: CallRate): boolean {
  if (dialect === 'hosted-v2') return true;
  return !ok && rate.applies && dialect !== 'legacy';
}

/** A model with the call's rate metadata, when the dialect carries it and the model has none of its own. */
export function placeRateLimit(
  ctx: CallContext,
  model: NormalizedResult,
  dialect: ResultDialectId,
): { model: NormalizedResult; placed: boolean } {
  const rate = ctx.rate;
  if (!rate || model.meta?.rate_limit !== undefined || !carries(dialect, model.ok, rate)) {
    return { model, placed: false };
  }
  return { model: { ...model, meta: { ...model.meta, rate_limit: rate.info } }, placed: true };
}

/**
 * An envelope the pipeline built, converted to `dialect` with the call's rate
 * metadata (as `fromEnvelopeV01` converts it, plus that). A denial's envelope
 * already holds its own.
 */
export function convertBuilt(
  ctx: CallContext,
  envelope: EnvelopeV01,
  dialect: ResultDialectId,
  context: { tool: string; requestId: string; tier?: string },
): Encoded & { placed: boolean } {
  const decoded = codecFor('prov-v0.1').decode(envelope);
  decoded.tool ??= context.tool;
  if (context.tier !== undefined) decoded.meta = { ...decoded.meta, tier: context.tier };
  const denial = ctx.rate?.denied === true && decoded.meta?.rate_limit !== undefined;
  const { model, placed } = placeRateLimit(ctx, decoded, dialect);
  const encoded = codecFor(dialect).encode(model, { tool: context.tool, requestId: context.requestId });
  return { ...encoded, placed: placed || (denial && !lost(encoded.losses)) };
}

/** Whether an encoding had no place for the rate metadata after all. */
export function lost(losses: readonly { path: string }[]): boolean {
  return losses.some((loss) => loss.path === '/meta/rate_limit' || loss.path.startsWith('/meta/rate_limit/'));
}

/** The metadata for `_meta`, when a rule applies and the envelope does not already carry it. */
export function rateLimitMeta(ctx: CallContext, placed: boolean): RateLimitInfo | undefined {
  const rate = ctx.rate;
  // A passthrough client reads rate metadata from `_meta` alone, the pipeline's own answers included.
  const inMeta = !placed || ctx.settings.mode === 'passthrough';
  return rate?.applies && inMeta ? rate.info : undefined;
}
