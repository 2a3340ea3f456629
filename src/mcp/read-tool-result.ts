import { setTimeout as sleepFor } from 'node:timers/promises';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { isJsonObject } from '../canonical/json-value.ts';
import { ADAPTER_EXECUTION_FAILED, toolReportedErrors } from '../envelope/compat-policy.ts';
import type { DialectId } from '../envelope/dialect.ts';
import type { NormalizedError, NormalizedResult } from '../envelope/model.ts';
import { describeErrorCode, EnvelopeError } from '../errors/index.ts';
import { detectEnvelope } from './dialects.ts';
import {
  contentText,
  PROVENANCE_META_KEY,
  type ToolResultLike,
  type ToolResultPayload,
  toolResultPayload,
} from './tool-result.ts';

/**
 * The client side: any tool result, in any dialect, as the normalized model.
 */

interface ReadInfo {
  /** The dialect the result was written in (`legacy` when it held no envelope). */
  dialect: DialectId;
  /** Where the payload was found. */
  source: ToolResultPayload['source'];
}

export type ToolResultRead =
  | (NormalizedResult & ReadInfo & { ok: true })
  | (NormalizedResult & ReadInfo & { ok: false; error: NormalizedError });

function errorOf(code: string, message: string, details?: Record<string, unknown>): NormalizedError {
  const error: NormalizedError = { code, message, retriable: describeErrorCode(code).retriable };
  if (details) error.details = details;
  return error;
}

function finish(model: NormalizedResult, info: ReadInfo, result: ToolResultLike): ToolResultRead {
  const read = { ...model, ...info } as NormalizedResult & ReadInfo;
  const metaRecord = result._meta?.[PROVENANCE_META_KEY];
  if (read.provenance === undefined && metaRecord !== undefined) read.provenance = metaRecord;
  if (result.isError === true && read.ok) {
    // The transport-level flag wins: a result marked as an error is never read as a success.
    read.ok = false;
    read.error = errorOf(
      ADAPTER_EXECUTION_FAILED,
      contentText(result.content) || 'The tool result is an error',
    );
  }
  if (!read.ok && read.error === undefined) {
    const first = read.errors?.[0];
    read.error = first
      ? errorOf(first.code, first.message)
      : errorOf(ADAPTER_EXECUTION_FAILED, 'The tool reported a failure');
  }
  return read as ToolResultRead;
}

/**
 * Reads a CallToolResult (structuredContent, or the JSON in its text content)
 * in any dialect into the normalized model. A payload that holds no envelope
 * is read as a legacy payload; an error result without an envelope becomes an
 * error with the tool's own code when it reported one. A value that claims an
 * envelope dialect but does not validate reads as a failure with
 * ENVELOPE_INVALID (its reasons in the details), never as data.
 */
export function readToolResult(result: ToolResultLike): ToolResultRead {
  if (!isJsonObject(result)) {
    throw new EnvelopeError('INVALID_INPUT', 'readToolResult expects a CallToolResult object');
  }
  const payload = toolResultPayload(result);
  const info = (dialect: DialectId): ReadInfo => ({ dialect, source: payload.source });
  const structured = payload.source === 'structured' || payload.source === 'json-text';
  const detection = structured ? detectEnvelope(payload.value) : undefined;
  if (detection?.match) return finish(detection.model, info(detection.dialect), result);
  if (detection) {
    const error = errorOf('ENVELOPE_INVALID', `The tool result ${detection.message}`, {
      dialects: detection.dialects,
      reasons: detection.reasons,
    });
    return finish({ ok: false, data: payload.value, error }, info(detection.dialects[0] ?? 'legacy'), result);
  }
  const model: NormalizedResult = { ok: result.isError !== true, data: payload.value };
  if (!model.ok) {
    const own = structured ? toolReportedErrors(payload.value) : undefined;
    const text = contentText(result.content);
    model.error = own?.[0]
      ? errorOf(own[0].code, own[0].message)
      : errorOf(ADAPTER_EXECUTION_FAILED, text || 'The tool reported a failure');
    if (own) model.errors = own;
  }
  return finish(model, info('legacy'), result);
}

export interface RetryOptions {
  /** Retries after the first attempt; default 3. */
  retries?: number;
  /** First backoff step; default 200 ms. */
  baseDelayMs?: number;
  /** No single wait is longer; default 30 s. A reset_at further away ends the retries. */
  maxDelayMs?: number;
  signal?: AbortSignal;
  /** Per-attempt request timeout passed to the client. */
  timeoutMs?: number;
  /** Clock and randomness, replaceable for reproducible schedules. */
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export type RetryRead = ToolResultRead & { attempts: number; result: CallToolResult };

/**
 * When a rate-limited error says the limit resets, in epoch milliseconds: the
 * model's rate metadata (which the codecs read from wherever a server put it,
 * `error.details.rate_limit` and `data.rate_limit` included), else a `reset_at`
 * in the error's details, flat or under `rate_limit`.
 */
function resetAt(read: ToolResultRead): number | undefined {
  const details = read.ok ? undefined : read.error.details;
  const nested = isJsonObject(details?.rate_limit) ? details.rate_limit.reset_at : undefined;
  const candidates = [read.meta?.rate_limit?.reset_at, details?.reset_at, nested];
  for (const value of candidates) {
    if (typeof value === 'string') {
      const time = Date.parse(value);
      if (Number.isFinite(time)) return time;
    }
  }
  return undefined;
}

/**
 * Calls a tool and retries it while it fails with a retriable error: waiting
 * until the rate limit's `reset_at` when the error names one, otherwise a
 * bounded exponential backoff with full jitter. Errors that are not retriable,
 * and failures of the call itself (transport errors, JSON-RPC errors), are
 * returned or thrown at once.
 */
export async function callToolWithRetry(
  client: Pick<Client, 'callTool'>,
  params: Parameters<Client['callTool']>[0],
  options: RetryOptions = {},
): Promise<RetryRead> {
  const retries = Math.max(0, Math.floor(options.retries ?? 3));
  const base = Math.max(0, options.baseDelayMs ?? 200);
  const maxDelay = Math.max(0, options.maxDelayMs ?? 30_000);
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? ((ms: number, signal?: AbortSignal) => sleepFor(ms, undefined, { signal }));
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    const requestOptions = {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
    };
    const result = (await client.callTool(params, requestOptions)) as CallToolResult;
    const read = readToolResult(result);
    const done = { ...read, attempts: attempt, result } as RetryRead;
    if (read.ok || !read.error.retriable || attempt > retries) return done;
    const reset = resetAt(read);
    let delay: number;
    if (reset !== undefined) {
      delay = Math.max(0, reset - now());
      if (delay > maxDelay) return done;
    } else {
      delay = Math.floor(random() * Math.min(maxDelay, base * 2 ** (attempt - 1)));
    }
    await sleep(delay, options.signal);
  }
}
