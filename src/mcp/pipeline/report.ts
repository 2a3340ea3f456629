import { performance } from 'node:perf_hooks';
import { digestValue } from '../../canonical/digest.ts';
import type { DialectId, ResultDialectId } from '../../envelope/dialect.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { ProvRecord } from '../../provenance/index.ts';
import { readToolResult } from '../read-tool-result.ts';
import type { ToolResultLike } from '../tool-result.ts';

/**
 * The one report of a call. The pipeline writes it for every call it answers;
 * the gateway writes it the same way for calls it relays untouched or that end
 * in a protocol error, so its call log and ledger read one shape whatever the
 * mode, and nothing re-reads a result to find out what the pipeline decided.
 */

/** How a call ended for its caller: `cancelled` when the caller withdrew it before its answer. */
export type CallOutcome = 'ok' | 'error' | 'cancelled';

/** Why a call failed, as far as the pipeline could tell. */
export type CallFailure =
  | 'tool_error'
  | 'execution_failed'
  | 'invalid_input'
  | 'invalid_output'
  | 'denied'
  | 'internal_error'
  /** Answered with a JSON-RPC error that no stage of the pipeline decided. */
  | 'protocol_error';

/**
 * What was done with the tool's output: wrapped in an envelope, passed through,
 * converted from another dialect, rejected (the call's error instead), or
 * relayed as it came (no pipeline).
 */
export type CallAction = 'wrapped' | 'passed-through' | 'converted' | 'rejected' | 'relayed';

export type RecordPlacement = 'envelope' | 'meta';

export interface CallSummary {
  tool: string;
  /** The dialect enforced, or `passthrough` for a call relayed as it came. */
  dialect: ResultDialectId | 'passthrough';
  outcome: CallOutcome;
  /** Why the call failed; null unless the outcome is `error`. */
  failure: CallFailure | null;
  action: CallAction;
  /** The canonical code of the first error; null unless the outcome is `error`. */
  code: string | null;
  /** The request id the answer carries (the pipeline's, derived from the run id); null when unknown. */
  requestId: string | null;
  durationMs: number;
  /** `sha256:<hex>` of the RFC 8785 arguments; null when the call had none or they have no canonical form. */
  argumentsDigest: string | null;
  /** `sha256:<hex>` of the RFC 8785 CallToolResult sent back; null when none was or it has no canonical form. */
  resultDigest: string | null;
  /** The dialect of the result sent back (`legacy` for a bare payload); null when there was none. */
  resultDialect: string | null;
  /** The dialect version that result carries (Hosted v2's date, the envelope name), or null. */
  resultVersion: string | null;
  /** The dialect and version of what the tool returned; null when it never answered. */
  sourceDialect: string | null;
  sourceVersion: string | null;
  /** Whether the tool ran and answered (its output reaches the client whatever the outcome). */
  toolRan: boolean;
  /** The provenance record built for the call and where it travels; null when none was asked for. */
  provenance: { record: ProvRecord; placement: RecordPlacement } | null;
  /** Fields of the tool's result the chosen dialect could not carry. */
  losses: number;
}

/** `sha256:<hex>` of a value's canonical form, or null when it has none: a report never fails a call. */
export function digestOf(value: unknown): string | null {
  if (value === undefined) return null;
  try {
    return `sha256:${digestValue(value).value}`;
  } catch (error) {
    if (error instanceof EnvelopeError) return null;
    throw error;
  }
}

/** What a report is built from; the outcome, the code rule and the duration are derived here only. */
export interface SummaryFacts {
  tool: string;
  dialect: CallSummary['dialect'];
  /** Null for a call that succeeded. */
  failure: CallFailure | null;
  action: CallAction;
  code: string | null;
  requestId: string | null;
  /** `performance.now()` when the call began. */
  started: number;
  /** The caller's signal: a call it withdrew is `cancelled`, whatever the other side made of the abort. */
  signal: AbortSignal | undefined;
  /** Computes the arguments' digest (`CallSummary.argumentsDigest`), when a reader first asks. */
  argumentsDigest: () => string | null;
  /** The CallToolResult sent back, when one was. */
  result: ToolResultLike | undefined;
  resultDialect: string | null;
  resultVersion: string | null;
  source: { dialect: string; version: string | null } | undefined;
  provenance: CallSummary['provenance'];
  losses: number;
}

/**
 * When the call was answered, and whether its caller had withdrawn it by then:
 * what a report says of a call does not change if the report is built later.
 */
export interface AnsweredAt {
  now: number;
  aborted: boolean;
}

export function answeredAt(signal: AbortSignal | undefined): AnsweredAt {
  return { now: performance.now(), aborted: signal?.aborted === true };
}

export function summarize(facts: SummaryFacts, at: AnsweredAt = answeredAt(facts.signal)): CallSummary {
  const cancelled = at.aborted;
  const failure = cancelled ? null : facts.failure;
  // The digests canonicalize the arguments and the whole answer (envelope and record included): taken
  // when first read (the call log reads them), not for a report only the ledger reads.
  let argumentsDigest: { value: string | null } | undefined;
  let resultDigest: { value: string | null } | undefined;
  return {
    tool: facts.tool,
    dialect: facts.dialect,
    outcome: cancelled ? 'cancelled' : failure === null ? 'ok' : 'error',
    failure,
    action: facts.action,
    code: failure === null ? null : (facts.code ?? 'INTERNAL_ERROR'),
    requestId: facts.requestId,
    durationMs: Math.round((at.now - facts.started) * 1000) / 1000,
    get argumentsDigest() {
      argumentsDigest ??= { value: facts.argumentsDigest() };
      return argumentsDigest.value;
    },
    get resultDigest() {
      resultDigest ??= { value: digestOf(facts.result) };
      return resultDigest.value;
    },
    resultDialect: facts.resultDialect,
    resultVersion: facts.resultVersion,
    sourceDialect: facts.source?.dialect ?? null,
    sourceVersion: facts.source?.version ?? null,
    toolRan: facts.source !== undefined,
    provenance: facts.provenance,
    losses: facts.losses,
  };
}

/** The facts of a call answered with no CallToolResult (a JSON-RPC error instead). */
export const NO_ANSWER = {
  result: undefined,
  resultDialect: null,
  resultVersion: null,
  source: undefined,
  provenance: null,
  losses: 0,
} as const satisfies Partial<SummaryFacts>;

/** A call outside any pipeline: what it was and when it began. */
export interface UnenforcedCall {
  tool: string;
  arguments: unknown;
  started: number;
  signal: AbortSignal | undefined;
}

/**
 * The report of a result relayed untouched (passthrough): nothing was decided,
 * so the result is read as a client reads it, a relayed envelope as the success
 * or error it is.
 */
export function relayedSummary(
  call: UnenforcedCall,
  result: ToolResultLike,
  at: AnsweredAt = answeredAt(call.signal),
): CallSummary {
  const read = readToolResult(result);
  const source = { dialect: read.dialect as DialectId, version: read.version ?? null };
  return summarize(
    {
      tool: call.tool,
      dialect: 'passthrough',
      failure: read.ok ? null : 'tool_error',
      action: 'relayed',
      code: read.ok ? null : read.error.code,
      requestId: read.meta?.request_id ?? null,
      started: call.started,
      signal: call.signal,
      argumentsDigest: () => digestOf(call.arguments),
      result,
      resultDialect: source.dialect,
      resultVersion: source.version,
      source,
      provenance: null,
      losses: 0,
    },
    at,
  );
}

/** The report of a call answered with a protocol error no pipeline stage decided (an unknown tool, an upstream's JSON-RPC error). */
export function thrownSummary(
  call: UnenforcedCall & { dialect: CallSummary['dialect'] },
  error: unknown,
  at: AnsweredAt = answeredAt(call.signal),
): CallSummary {
  return summarize(
    {
      tool: call.tool,
      dialect: call.dialect,
      failure: 'protocol_error',
      action: call.dialect === 'passthrough' ? 'relayed' : 'rejected',
      code: error instanceof EnvelopeError ? error.code : 'INTERNAL_ERROR',
      requestId: null,
      started: call.started,
      signal: call.signal,
      argumentsDigest: () => digestOf(call.arguments),
      ...NO_ANSWER,
    },
    at,
  );
}
