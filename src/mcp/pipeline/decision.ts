import { wrapFailure } from '../../envelope/compat-policy.ts';
import type { ResultDialectId } from '../../envelope/dialect.ts';
import type { IssueEntry, NormalizedResult } from '../../envelope/model.ts';
import type { EnvelopeV01 } from '../../envelope/prov-v01.ts';
import type { ToolResultLike } from '../tool-result.ts';
import type { CallContext } from './context.ts';
import { INVALID_PARAMS, invalidInputEntry } from './entries.ts';
import { PipelineRpcError } from './errors.ts';
import type { CallAction, CallFailure, RecordPlacement } from './report.ts';

/**
 * What the pipeline decided to answer. Every stage before the answer is encoded
 * ends in one of these; provenance and encoding read it, and so does the report.
 */
export interface Decision {
  /**
   * Who wrote the envelope answered with, which says what may still be added to it:
   * `built` an mcp.envelope.v0.1 built here (it takes warnings, and the record in
   * prov-v0.1); `own` the tool's own mcp.envelope.v0.1, passed through unchanged;
   * `foreign` another dialect's envelope, passed through or converted.
   */
  origin: 'built' | 'own' | 'foreign';
  /** The mcp.envelope.v0.1 of a `built` or `own` decision. */
  envelope?: EnvelopeV01;
  /** A `foreign` envelope passed through as it came. */
  foreign?: Record<string, unknown>;
  /** A `foreign` envelope's model, to be converted to the pipeline's dialect. */
  convertFrom?: NormalizedResult;
  /** Exact text to carry when a passed-through envelope arrived as text. */
  text?: string;
  /**
   * What the tool returned, as content blocks to send beside the envelope when the
   * envelope itself cannot hold it (an invalid mcp.envelope.v0.1 claim, say).
   */
  original?: unknown[];
  /** The dialect and version of what the tool returned; absent when it never answered. */
  source?: { dialect: string; version: string | null };
  /** What the tool returned (after the caller's return mode): every block of it reaches the client. */
  returned?: ToolResultLike;
  isError: boolean;
  failure: CallFailure | null;
  action: Exclude<CallAction, 'relayed'>;
  errorCode: string | null;
  /** The payload the record's output artifact stands for. */
  result: unknown;
}

/** A decision on an mcp.envelope.v0.1: built here, or the tool's own passed through. */
export function onEnvelope(
  envelope: EnvelopeV01,
  failure: CallFailure | null,
  action: Decision['action'],
  origin: 'built' | 'own' = 'built',
): Decision {
  const isError = (envelope.errors?.length ?? 0) > 0;
  return {
    origin,
    envelope,
    isError,
    failure: isError && failure === null ? 'tool_error' : failure,
    action,
    errorCode: envelope.errors?.[0]?.code ?? null,
    result: envelope.result,
  };
}

/** The call is answered with this error instead of the tool's output. */
export function rejection(ctx: CallContext, failure: CallFailure, error: IssueEntry): Decision {
  return onEnvelope(wrapFailure({ toolErrors: [error] }, ctx.wrapOptions()), failure, 'rejected');
}

/** Arguments refused: an INVALID_INPUT envelope, or the JSON-RPC error when the pipeline is set to throw it. */
export function invalidInput(ctx: CallContext, text: string, pointer: string): Decision {
  if (ctx.settings.invalidInputAs === 'jsonrpc-error') {
    throw new PipelineRpcError('INVALID_INPUT', INVALID_PARAMS, { pointer, reason: text });
  }
  return rejection(ctx, 'invalid_input', invalidInputEntry(text, pointer, 'error'));
}

/**
 * Where the call's record goes: into an envelope built here in prov-v0.1, the one
 * envelope that can still take it; everywhere else into the result's `_meta`
 * (envelopes that pass through are never modified, other dialects have no place for it).
 */
export function recordPlacement(decision: Decision, dialect: ResultDialectId): RecordPlacement {
  return decision.origin === 'built' && dialect === 'prov-v0.1' ? 'envelope' : 'meta';
}

/** Whether an mcp.envelope.v0.1 surrounds what is sent (the contracts of the adapter methods are defined on one). */
export function sentInV01(decision: Decision, dialect: ResultDialectId): boolean {
  return decision.origin === 'own' || (decision.origin === 'built' && dialect === 'prov-v0.1');
}
