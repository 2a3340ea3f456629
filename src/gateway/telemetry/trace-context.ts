import { type Context, ROOT_CONTEXT, type SpanContext, trace } from '@opentelemetry/api';
import { parseTraceParent, TraceState } from '@opentelemetry/core';

/**
 * W3C trace context in and out of a `tools/call`. A caller's parent is read
 * from `params._meta.traceparent`/`tracestate` (the 2026-07-28 convention,
 * accepted on 2025-11-25 too), else from the HTTP `traceparent`/`tracestate`
 * headers. What the gateway sends upstream is the caller's `_meta` with
 * `traceparent` naming the gateway's upstream-call span: the caller's own
 * traceparent there is replaced (same trace, the gateway's span as parent, as
 * the W3C rules for an intermediary that takes part in the trace say), its
 * `tracestate` and every other member are kept.
 */

export interface TraceCarrier {
  traceparent?: unknown;
  tracestate?: unknown;
}

/** The caller's span as a remote parent, or undefined when it sent none (or an invalid one). */
export function remoteParent(meta: TraceCarrier | undefined, headers: TraceCarrier | undefined): Context {
  const carrier = typeof meta?.traceparent === 'string' ? meta : headers;
  if (typeof carrier?.traceparent !== 'string') return ROOT_CONTEXT;
  const parsed = parseTraceParent(carrier.traceparent);
  if (!parsed) return ROOT_CONTEXT;
  const state = typeof carrier.tracestate === 'string' ? carrier.tracestate : undefined;
  const parent: SpanContext = {
    ...parsed,
    isRemote: true,
    ...(state ? { traceState: new TraceState(state) } : {}),
  };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

/** The `traceparent` value naming a span. */
export function traceparentOf(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The `_meta` sent upstream: the caller's, its traceparent naming `span`, its tracestate kept or the span's own. */
export function withTraceContext(
  meta: Record<string, unknown> | undefined,
  span: SpanContext,
): Record<string, unknown> {
  const state = span.traceState?.serialize();
  return {
    ...meta,
    traceparent: traceparentOf(span),
    ...(meta?.tracestate === undefined && state ? { tracestate: state } : {}),
  };
}
