import { isJsonObject } from '../canonical/json-value.ts';
import { describeErrorCode, EnvelopeError } from '../errors/index.ts';
import { schemaError } from '../schemas/index.ts';
import type { IssueEntry } from './model.ts';
import { classifyV01, ENVELOPE_V01, type EnvelopeV01, envelopeFromText } from './prov-v01.ts';

/**
 * The mcp.envelope.v0.1 compatibility policy (seed 000):
 * - legacy payloads (string, object, array, number, boolean, null) are wrapped
 *   unchanged as `result`, including objects with their own `schema_version`;
 * - an existing envelope, as a value or as JSON text, is returned unchanged;
 * - failures seen only as an exception, an exit code or stderr become
 *   `result: null` (or the partial output) plus at least one `errors[]` entry,
 *   and a tool's own structured error codes win over the adapter's.
 */

export const ADAPTER_EXECUTION_FAILED = 'ADAPTER.EXECUTION.FAILED';
/** Warning code for output that resembles an envelope without being one (kept as a legacy payload). */
export const ENVELOPE_NEAR_MISS = 'ADAPTER.ENVELOPE.NEAR_MISS';
/** Warning code for a tool that succeeded but wrote to stderr. */
export const ADAPTER_STDERR_OUTPUT = 'ADAPTER.STDERR.OUTPUT';

/** The longest stderr excerpt copied into an envelope: enough to diagnose, bounded. */
export const STDERR_EXCERPT_CHARS = 2000;

export interface WrapOptions {
  meta?: EnvelopeV01['meta'];
  warnings?: IssueEntry[];
  /** Add `provenance: null` explicitly (the policy's "no provenance" form). */
  explicitNullProvenance?: boolean;
}

export type WrapOutcome =
  | { action: 'wrapped'; envelope: EnvelopeV01 }
  | {
      action: 'passed-through';
      envelope: EnvelopeV01 /** The original text when it arrived as text. */;
      text?: string;
    };

/**
 * Wraps a legacy payload, or passes an existing envelope through unchanged.
 * Throws ENVELOPE_INVALID for a value that claims to be an mcp.envelope.v0.1 but
 * is not valid: wrapping it would double-wrap, passing it on would pass an
 * invalid envelope.
 */
export function applyCompatibilityPolicy(payload: unknown, options: WrapOptions = {}): WrapOutcome {
  const classification =
    typeof payload === 'string' ? (envelopeFromText(payload) ?? classifyV01(payload)) : classifyV01(payload);
  if (classification.kind === 'envelope') {
    return typeof payload === 'string'
      ? { action: 'passed-through', envelope: classification.envelope, text: payload }
      : { action: 'passed-through', envelope: classification.envelope };
  }
  if (classification.kind === 'invalid-envelope') {
    const error = schemaError(ENVELOPE_V01, classification.issues);
    throw new EnvelopeError(
      'ENVELOPE_INVALID',
      `Payload claims ${ENVELOPE_V01} but is not a valid envelope: ${error.message.replace(/^Not a valid [^:]+: /, '')}`,
      error.details,
    );
  }
  return { action: 'wrapped', envelope: buildEnvelope(payload, options) };
}

/** Wraps a payload (or passes an envelope through) and returns the envelope. */
export function wrapLegacy(payload: unknown, options: WrapOptions = {}): EnvelopeV01 {
  return applyCompatibilityPolicy(payload, options).envelope;
}

function buildEnvelope(result: unknown, options: WrapOptions, errors?: IssueEntry[]): EnvelopeV01 {
  const envelope: EnvelopeV01 = { schema_version: ENVELOPE_V01, result };
  if (errors && errors.length > 0) envelope.errors = errors;
  if (options.warnings && options.warnings.length > 0) envelope.warnings = options.warnings;
  if (options.explicitNullProvenance) envelope.provenance = null;
  const meta = { ...options.meta };
  const hint = schemaHintFor(result);
  if (hint && !meta.schema_hints?.result) meta.schema_hints = { ...meta.schema_hints, result: hint };
  if (Object.keys(meta).length > 0) envelope.meta = meta;
  return envelope;
}

/** A payload's own `schema_version`, recorded as a hint (the payload itself is never touched). */
function schemaHintFor(result: unknown): string | undefined {
  if (!isJsonObject(result)) return undefined;
  const version = result.schema_version;
  return typeof version === 'string' && version.length > 0 && version.length <= 200 ? version : undefined;
}

export interface ObservedFailure {
  /** An exception thrown by the tool or while calling it. */
  exception?: unknown;
  /** A process exit code (null when killed by a signal). */
  exitCode?: number | null;
  signal?: string | null;
  stderr?: string;
  /** Output produced before the failure, kept as `result`. */
  partialOutput?: unknown;
  /** Structured errors the tool reported itself; they win over the adapter's. */
  toolErrors?: IssueEntry[];
  /** Override of the adapter's message. */
  message?: string;
}

export function stderrExcerpt(stderr: string): string {
  const trimmed = stderr.trim();
  return trimmed.length <= STDERR_EXCERPT_CHARS ? trimmed : `…${trimmed.slice(-STDERR_EXCERPT_CHARS)}`;
}

/** The longest errors[].message the envelope schema allows. */
export const MAX_MESSAGE_CHARS = 2000;

function failureMessage(failure: ObservedFailure): string {
  // A longer message would make the envelope invalid; whoever gives one keeps the whole text elsewhere.
  if (failure.message) return failure.message.slice(0, MAX_MESSAGE_CHARS);
  if (failure.exception !== undefined) {
    const text = failure.exception instanceof Error ? failure.exception.message : String(failure.exception);
    // An error that already says so (a transport's own wording) is not prefixed twice.
    if (text.startsWith('Tool execution failed')) return text.slice(0, MAX_MESSAGE_CHARS);
    return `Tool execution failed: ${text || 'an exception was thrown'}`.slice(0, MAX_MESSAGE_CHARS);
  }
  if (typeof failure.exitCode === 'number')
    return `Tool execution failed with exit code ${failure.exitCode}.`;
  if (failure.signal) return `Tool execution was ended by signal ${failure.signal}.`;
  return 'Tool execution failed.';
}

/** The adapter's error entry for a failure it could only observe from outside. */
export function adapterFailureEntry(failure: ObservedFailure): IssueEntry {
  const details: Record<string, string | number | boolean | null> = {};
  if (failure.exitCode !== undefined) details.exit_code = failure.exitCode;
  if (failure.signal) details.signal = failure.signal;
  if (failure.stderr?.trim()) details.stderr_excerpt = stderrExcerpt(failure.stderr);
  if (failure.exception instanceof Error && failure.exception.name && failure.exception.name !== 'Error') {
    details.exception = failure.exception.name;
  }
  const entry: IssueEntry = { code: ADAPTER_EXECUTION_FAILED, message: failureMessage(failure) };
  if (Object.keys(details).length > 0) entry.details = details;
  return entry;
}

/**
 * The envelope for a failed run. If the partial output already is an envelope
 * that reports errors, it passes through unchanged (the tool's own report wins).
 */
export function wrapFailure(failure: ObservedFailure, options: WrapOptions = {}): EnvelopeV01 {
  const partial = failure.partialOutput;
  if (partial !== undefined && partial !== null && partial !== '') {
    const classification = typeof partial === 'string' ? envelopeFromText(partial) : classifyV01(partial);
    if (classification?.kind === 'envelope' && (classification.envelope.errors?.length ?? 0) > 0) {
      return classification.envelope;
    }
  }
  const errors =
    failure.toolErrors && failure.toolErrors.length > 0 ? failure.toolErrors : [adapterFailureEntry(failure)];
  const result = partial === undefined || partial === '' ? null : partial;
  return buildEnvelope(result, options, errors);
}

/**
 * Structured errors a tool reported in its own output, in the shapes the seeds
 * use: an `errors[]` of {code, message}, an `error` object with `code`/`error_code`
 * and `message`/`error`, or a cli.error.v0.1 message ({level: "ERROR", code, what}).
 */
export function toolReportedErrors(output: unknown): IssueEntry[] | undefined {
  if (!isJsonObject(output)) return undefined;
  const entry = (code: unknown, message: unknown, flag?: unknown): IssueEntry | undefined => {
    if (typeof code !== 'string' || code.length === 0 || code.length > 200) return undefined;
    const found: IssueEntry = {
      code,
      message: typeof message === 'string' && message.length > 0 ? message.slice(0, 2000) : code,
    };
    // errors[].retryable defaults to false for every reader: the tool's own flag, else the code's known default.
    const retryable = typeof flag === 'boolean' ? flag : describeErrorCode(code).retriable;
    if (retryable) found.retryable = true;
    return found;
  };
  if (Array.isArray(output.errors)) {
    const entries = output.errors
      .map((item) => (isJsonObject(item) ? entry(item.code, item.message, item.retryable) : undefined))
      .filter((item): item is IssueEntry => item !== undefined);
    if (entries.length > 0) return entries;
  }
  if (isJsonObject(output.error)) {
    const error = output.error;
    const found = entry(
      error.code ?? error.error_code,
      error.message ?? error.error,
      error.retriable ?? error.retryable,
    );
    if (found) return [found];
  }
  if (output.level === 'ERROR') {
    const what = Array.isArray(output.what) ? output.what.join(' ') : output.what;
    const found = entry(output.code, what);
    if (found) return [found];
  }
  return undefined;
}
