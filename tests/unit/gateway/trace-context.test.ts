import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import {
  remoteParent,
  traceparentOf,
  withTraceContext,
} from '../../../src/gateway/telemetry/trace-context.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';
const OTHER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const OTHER_SPAN = '00f067aa0ba902b7';

const parentOf = (...args: Parameters<typeof remoteParent>) => trace.getSpanContext(remoteParent(...args));

describe('the trace context of a call', () => {
  it('takes the parent from _meta before the HTTP headers, with its tracestate, as a remote span', () => {
    const parent = parentOf(
      { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'vendor=one' },
      { traceparent: `00-${OTHER_TRACE}-${OTHER_SPAN}-01` },
    );
    expect(parent).toMatchObject({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    expect(parent?.traceState?.get('vendor')).toBe('one');
    expect(parentOf(undefined, { traceparent: `00-${OTHER_TRACE}-${OTHER_SPAN}-00` })).toMatchObject({
      traceId: OTHER_TRACE,
      spanId: OTHER_SPAN,
      traceFlags: 0,
    });
  });

  it('starts a new trace when none is sent or what is sent is not a traceparent', () => {
    expect(parentOf(undefined, undefined)).toBeUndefined();
    expect(parentOf({ traceparent: 'not-a-traceparent' }, undefined)).toBeUndefined();
    expect(parentOf({ traceparent: `00-${'0'.repeat(32)}-${SPAN}-01` }, undefined)).toBeUndefined();
    expect(parentOf({ traceparent: 42 }, undefined)).toBeUndefined();
  });

  it('sends the upstream its parent in _meta, keeping every other member and the caller tracestate', () => {
    const span = { traceId: TRACE, spanId: OTHER_SPAN, traceFlags: 1 };
    expect(traceparentOf(span)).toBe(`00-${TRACE}-${OTHER_SPAN}-01`);
    expect(
      withTraceContext(
        { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'vendor=one', progressToken: 7 },
        span,
      ),
    ).toEqual({ traceparent: `00-${TRACE}-${OTHER_SPAN}-01`, tracestate: 'vendor=one', progressToken: 7 });
    expect(withTraceContext(undefined, span)).toEqual({ traceparent: `00-${TRACE}-${OTHER_SPAN}-01` });
  });
});
