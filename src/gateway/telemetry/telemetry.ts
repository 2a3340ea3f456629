import type { CallToolResult } from '@modelcontextprotocol/server';
import {
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type HrTime,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { hrTime, hrTimeDuration, hrTimeToMilliseconds } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, MetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { EnvelopeError } from '../../errors/index.ts';
import type { CallSummary } from '../../mcp/pipeline.ts';
import { readToolResult } from '../../mcp/read-tool-result.ts';
import { traceHeadersOf } from '../http/scope.ts';
import type { TelemetryConfig } from '../operations/config.ts';
import type { UpstreamStatusBoard } from '../operations/upstream-status.ts';
import type {
  CallToolParams,
  InvokeUpstream,
  RequestTracing,
  TracedRequest,
  TracedRequestFacts,
} from '../relay/relay.ts';
import { toPrometheusText } from './prometheus.ts';
import {
  ATTR_CODE,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROMPT_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_RESOURCE_URI,
  ATTR_MCP_SESSION_ID,
  ATTR_NETWORK_TRANSPORT,
  ATTR_OUTCOME,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_UPSTREAM,
  METRIC_MCP_SERVER_OPERATION_DURATION,
  OPERATION_DURATION_BUCKETS,
} from './semconv.ts';
import { remoteParent, type TraceCarrier, withTraceContext } from './trace-context.ts';

/**
 * The gateway's OpenTelemetry: one tracer provider (spans of every
 * `tools/call`, exported over OTLP/HTTP) and one meter provider (calls,
 * refusals, durations, upstream states and restarts, ledger appends; read by
 * `GET /metrics` and, when asked, exported over OTLP/HTTP). Nothing here is
 * created unless the configuration turns it on (`createTelemetry` returns
 * undefined), so a gateway without telemetry pays one check per call.
 *
 * No global provider or context manager is registered: the gateway passes
 * each span's context explicitly, so it cannot disturb an embedding
 * application's own OpenTelemetry setup.
 */

/** What a call's span is started from. */
export interface CallStart {
  upstream: string;
  /** The tool as the client called it (namespaced when the gateway fronts several upstreams). */
  tool: string;
  /** The caller's `params._meta`. */
  meta: TraceCarrier | undefined;
  /** The HTTP request's trace-context headers, when it came over HTTP. */
  headers: TraceCarrier | undefined;
  transport: 'stdio' | 'http';
  protocolVersion: string | undefined;
  /** The 2025-11-25 session id, when the call came on one. */
  sessionId: string | undefined;
  requestId: string | number | undefined;
  /** Whether the answer waits for a ledger append (the recording span). */
  recording: boolean;
}

/** The first protocol revision whose wire has no sessions. */
const STATELESS_REVISION = '2026-07-28';

/** Calls the gateway refused before the tool ran, by why the pipeline says it failed. */
const REFUSALS = new Set(['denied', 'invalid_input']);
/** The same, by the code of an answer read without the report: rate limit, tier gate, invalid input. */
const REFUSAL_CODES = new Set(['RATE_LIMITED', 'UPGRADE_REQUIRED', 'INVALID_INPUT']);

/** How a call's answer went: the report when one was made, the answer or the error otherwise. */
export interface CallEnding {
  summary: (() => CallSummary) | undefined;
  result?: CallToolResult;
  error?: unknown;
  signal: AbortSignal;
}

interface How {
  outcome: 'ok' | 'error' | 'cancelled';
  code: string | null;
  refused: boolean;
}

function how({ summary, result, error, signal }: CallEnding): How {
  const report = summary?.();
  if (report) {
    const refused = !report.toolRan && report.failure !== null && REFUSALS.has(report.failure);
    return { outcome: report.outcome, code: report.code, refused };
  }
  if (signal.aborted) return { outcome: 'cancelled', code: null, refused: false };
  if (error !== undefined) return { outcome: 'error', code: codeOf(error) ?? null, refused: false };
  // Only a failed answer is read: the envelope (or the tool's own error) says its code.
  if (result?.isError !== true) return { outcome: 'ok', code: null, refused: false };
  let code = 'ADAPTER.EXECUTION.FAILED';
  try {
    const read = readToolResult(result);
    if (!read.ok) code = read.error.code;
  } catch {
    // An answer that cannot be read keeps the generic failure.
  }
  return { outcome: 'error', code, refused: REFUSAL_CODES.has(code) };
}

/** A pull reader: `/metrics` collects from it on demand. */
class PullReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

interface Instruments {
  calls: Counter;
  refused: Counter;
  duration: Histogram;
  ledgerAppend: Histogram;
}

export class GatewayTelemetry {
  readonly #tracerProvider: TracerProvider | undefined;
  readonly #tracer: Tracer | undefined;
  readonly #meterProvider: MeterProvider | undefined;
  readonly #pull: PullReader | undefined;
  readonly #instruments: Instruments | undefined;
  readonly #meter: ReturnType<MeterProvider['getMeter']> | undefined;
  #requests: RequestTracing | undefined;

  constructor(config: TelemetryConfig, version: string) {
    const resource = resourceFromAttributes({
      'service.name': config.serviceName,
      'service.version': version,
    });
    const endpoint = config.otlp.endpoint;
    if (config.traces.enabled && endpoint !== undefined) {
      const exporter = new OTLPTraceExporter({ url: `${endpoint}/v1/traces`, headers: config.otlp.headers });
      const ratio = config.traces.sampleRatio;
      this.#tracerProvider = new TracerProvider({
        resource,
        // A caller's sampled flag decides for its trace; the ratio only for the traces the gateway starts.
        sampler: new ParentBasedSampler({
          root: ratio >= 1 ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(ratio),
        }),
        spanProcessors: [
          new BatchSpanProcessor({
            exporter,
            // Room for bursts (4 to 5 spans a call): the default 2,048 drops spans past ~400 calls
            // between two exports. Batches stay at the default 512, so no one call that fills one
            // waits for a larger body to be serialized.
            maxQueueSize: 16_384,
          }),
        ],
      });
      this.#tracer = this.#tracerProvider.getTracer('mcp-envelope-gateway', version);
    }
    const readers: MetricReader[] = [];
    if (config.metrics.prometheus) {
      this.#pull = new PullReader();
      readers.push(this.#pull);
    }
    if (config.metrics.otlp && endpoint !== undefined) {
      readers.push(
        new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter({ url: `${endpoint}/v1/metrics`, headers: config.otlp.headers }),
          exportIntervalMillis: config.metrics.exportIntervalMs,
          exportTimeoutMillis: Math.min(30_000, config.metrics.exportIntervalMs),
        }),
      );
    }
    if (readers.length > 0) {
      this.#meterProvider = new MeterProvider({ resource, readers });
      const meter = this.#meterProvider.getMeter('mcp-envelope-gateway', version);
      this.#meter = meter;
      this.#instruments = {
        calls: meter.createCounter('mcp_envelope.gateway.calls', {
          description: 'tools/call requests answered, by upstream, tool, outcome and canonical code',
          unit: '{call}',
        }),
        refused: meter.createCounter('mcp_envelope.gateway.calls.refused', {
          description:
            'tools/call requests refused before the tool ran (rate limit, tier gate, invalid input), by code',
          unit: '{call}',
        }),
        duration: meter.createHistogram(METRIC_MCP_SERVER_OPERATION_DURATION, {
          description: 'How long the gateway took to answer an MCP request',
          unit: 's',
          advice: { explicitBucketBoundaries: OPERATION_DURATION_BUCKETS },
        }),
        ledgerAppend: meter.createHistogram('mcp_envelope.gateway.ledger.append.duration', {
          description: 'How long one ledger transaction of provenance records took',
          unit: 's',
          advice: {
            explicitBucketBoundaries: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
          },
        }),
      };
    }
  }

  get tracing(): boolean {
    return this.#tracer !== undefined;
  }

  /** Whether `/metrics` is served. */
  get prometheus(): boolean {
    return this.#pull !== undefined;
  }

  /** Upstream states (a gauge per state, 1 for the current one) and restarts, read from the operator's board. */
  observeUpstreams(board: UpstreamStatusBoard): void {
    const meter = this.#meter;
    if (!meter) return;
    meter
      .createObservableGauge('mcp_envelope.gateway.upstream.state', {
        description: 'Each upstream state: 1 for the state it is in, 0 for the others',
      })
      .addCallback((result) => {
        for (const { name, status } of board.all())
          for (const state of ['starting', 'ready', 'retrying', 'gave_up'] as const)
            result.observe(status.state === state ? 1 : 0, { [ATTR_UPSTREAM]: name, state });
      });
    meter
      .createObservableCounter('mcp_envelope.gateway.upstream.restarts', {
        description: 'Times an upstream that was ready was lost and restarted',
        unit: '{restart}',
      })
      .addCallback((result) => {
        for (const { name } of board.all()) result.observe(board.restarts(name), { [ATTR_UPSTREAM]: name });
      });
  }

  /** One ledger transaction of `records` provenance records took `seconds`. */
  ledgerAppended(seconds: number, records: number): void {
    this.#instruments?.ledgerAppend.record(seconds, { records: records > 1 ? 'batch' : 'single' });
  }

  /** The metrics in the Prometheus text format, collected now. */
  async prometheusText(): Promise<string> {
    if (!this.#pull) return '';
    const { resourceMetrics } = await this.#pull.collect();
    return toPrometheusText(resourceMetrics);
  }

  /**
   * Spans and durations of every request but `tools/call` (when tracing, or
   * metering: `mcp.server.operation.duration` is every operation's); the
   * relay calls it per request.
   */
  get requests(): RequestTracing | undefined {
    const tracer = this.#tracer;
    const instruments = this.#instruments;
    if (!tracer && !instruments) return undefined;
    this.#requests ??= { begin: (facts) => new RequestSpan(tracer, instruments, facts) };
    return this.#requests;
  }

  startCall(start: CallStart): CallTelemetry {
    return new CallTelemetry(start, this.#tracer, this.#instruments);
  }

  /** Exports what is buffered and stops; bounded by the exporters' own timeouts. */
  async shutdown(): Promise<void> {
    await Promise.allSettled([this.#tracerProvider?.shutdown(), this.#meterProvider?.shutdown()]);
  }
}

/** Builds the gateway's telemetry, or nothing when the configuration turns none on. */
export function createTelemetry(config: TelemetryConfig, version: string): GatewayTelemetry | undefined {
  const on = config.traces.enabled || config.metrics.prometheus || config.metrics.otlp;
  return on ? new GatewayTelemetry(config, version) : undefined;
}

/** The canonical code a failure carries, when it says one. */
function codeOf(error: unknown): string | undefined {
  if (error instanceof EnvelopeError) return error.code;
  const data = (error as { data?: { canonical_code?: unknown } } | undefined)?.data;
  if (typeof data?.canonical_code === 'string') return data.canonical_code;
  return undefined;
}

function errorType(error: unknown): string {
  return codeOf(error) ?? (error instanceof Error ? error.name : 'unknown');
}

function failed(span: Span, type: string, message?: string): void {
  span.setAttribute(ATTR_ERROR_TYPE, type);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
}

/**
 * One call's spans and measurements. The root span (SERVER, `tools/call <tool>`)
 * has children for validation (until the upstream is called), the upstream call
 * (CLIENT), enveloping (from the upstream's answer to the pipeline's) and
 * recording (the wait for the ledger). The root ends when the answer goes; its
 * status is set from the call's report, read once the answer has gone.
 */
export class CallTelemetry {
  readonly #start: CallStart;
  readonly #tracer: Tracer | undefined;
  readonly #instruments: Instruments | undefined;
  readonly #began: HrTime;
  readonly #root: Span | undefined;
  readonly #context: Context | undefined;
  #phase: Span | undefined;

  constructor(start: CallStart, tracer: Tracer | undefined, instruments: Instruments | undefined) {
    this.#start = start;
    this.#tracer = tracer;
    this.#instruments = instruments;
    this.#began = hrTime();
    if (!tracer) return;
    const attributes: Attributes = {
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_GEN_AI_TOOL_NAME]: start.tool,
      [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
      [ATTR_UPSTREAM]: start.upstream,
      [ATTR_NETWORK_TRANSPORT]: start.transport === 'stdio' ? 'pipe' : 'tcp',
    };
    if (start.protocolVersion !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = start.protocolVersion;
    if (start.requestId !== undefined) attributes[ATTR_JSONRPC_REQUEST_ID] = String(start.requestId);
    // Only the 2025-11-25 wire has sessions; a 2026-07-28 request names none.
    if (start.sessionId !== undefined && (start.protocolVersion ?? '') < STATELESS_REVISION)
      attributes[ATTR_MCP_SESSION_ID] = start.sessionId;
    const parent = remoteParent(start.meta, start.headers);
    this.#root = tracer.startSpan(
      `tools/call ${start.tool}`,
      { kind: SpanKind.SERVER, attributes, startTime: this.#began },
      parent,
    );
    // A trace that is not sampled has no children: nothing of it is recorded, and the upstream is
    // sent the root's context (flag 00) so the decision travels on.
    if (!this.#root.isRecording()) return;
    this.#context = trace.setSpan(parent, this.#root);
    this.#phase = tracer.startSpan('validate', { startTime: this.#began }, this.#context);
  }

  /** The trace and span ids the call log carries: the root span's, when tracing. */
  get ids(): { traceId: string; spanId: string } | undefined {
    const span = this.#root?.spanContext();
    return span ? { traceId: span.traceId, spanId: span.spanId } : undefined;
  }

  /** Whether the call's spans are recorded and exported (sampled), so its ids lead to a trace. */
  get recorded(): boolean {
    return this.#root?.isRecording() === true;
  }

  /** Wraps the upstream call: the CLIENT span, and its trace context in the `_meta` sent upstream. */
  invoking(invoke: InvokeUpstream): InvokeUpstream {
    const tracer = this.#tracer;
    const context = this.#context;
    const root = this.#root;
    if (!tracer || !root) return invoke;
    if (!context) {
      const unsampled = root.spanContext();
      return (params) => invoke({ ...params, _meta: withTraceContext(params._meta, unsampled) });
    }
    return async (params: CallToolParams): Promise<CallToolResult> => {
      this.#phase?.end();
      const span = tracer.startSpan(
        `tools/call ${params.name}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            [ATTR_MCP_METHOD_NAME]: 'tools/call',
            [ATTR_GEN_AI_TOOL_NAME]: params.name,
            [ATTR_UPSTREAM]: this.#start.upstream,
          },
        },
        context,
      );
      this.#phase = undefined;
      try {
        const result = await invoke({ ...params, _meta: withTraceContext(params._meta, span.spanContext()) });
        if (result.isError === true) failed(span, 'tool_error');
        return result;
      } catch (error) {
        failed(span, errorType(error), error instanceof Error ? error.message : undefined);
        throw error;
      } finally {
        span.end();
        this.#phase = tracer.startSpan('envelope', {}, context);
      }
    };
  }

  /** The pipeline has its answer; what is left is the wait for the ledger. */
  answered(): void {
    if (!this.#tracer || !this.#context) return;
    this.#phase?.end();
    this.#phase = this.#start.recording ? this.#tracer.startSpan('record', {}, this.#context) : undefined;
  }

  /**
   * The answer goes now (`error`: as a protocol error). How the call ended is
   * read a turn later, once the answer has gone, for the span's status and the
   * metrics: from the call's report when the call log or the ledger had one
   * made, else from the answer itself, so telemetry never has the report's
   * digests computed for it alone.
   */
  end(ending: CallEnding): void {
    const ended = hrTime();
    this.#phase?.end(ended);
    this.#phase = undefined;
    setImmediate(() => this.#finish(how(ending), ended, ending.error));
  }

  #finish({ outcome, code, refused }: How, ended: HrTime, error: unknown): void {
    const root = this.#root;
    if (root) {
      root.setAttribute(ATTR_OUTCOME, outcome);
      if (code !== null) root.setAttribute(ATTR_CODE, code);
      if (outcome === 'error')
        failed(root, code ?? errorType(error), error instanceof Error ? error.message : undefined);
      root.end(ended);
    }
    const instruments = this.#instruments;
    if (!instruments) return;
    const { upstream, tool } = this.#start;
    const counted: Attributes = { upstream, tool, outcome, ...(code === null ? {} : { code }) };
    instruments.calls.add(1, counted);
    if (refused) instruments.refused.add(1, { upstream, tool, ...(code === null ? {} : { code }) });
    const seconds = hrTimeToMilliseconds(hrTimeDuration(this.#began, ended)) / 1000;
    instruments.duration.record(seconds, {
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_GEN_AI_TOOL_NAME]: tool,
      upstream,
      ...(outcome === 'error' ? { [ATTR_ERROR_TYPE]: code ?? errorType(error) } : {}),
    });
  }
}

/** What a request names, as the MCP conventions record it: a prompt by name, a resource by URI. */
interface Target {
  /** Low-cardinality: the prompt's name; it ends the span's name. */
  prompt?: string;
  /** The resource's URI: an attribute only, never in the span's name (high cardinality). */
  uri?: string;
}

/** Methods whose `params.uri` names the resource they are about. */
const URI_METHODS: ReadonlySet<string> = new Set([
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'resources/directory/read',
  'skills/get',
]);

function targetOf(method: string, params: Record<string, unknown> | undefined): Target {
  if (method === 'prompts/get' && typeof params?.name === 'string') return { prompt: params.name };
  if (URI_METHODS.has(method) && typeof params?.uri === 'string') return { uri: params.uri };
  if (method === 'completion/complete') {
    const ref = params?.ref as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
    if (ref?.type === 'ref/prompt' && typeof ref.name === 'string') return { prompt: ref.name };
    if (typeof ref?.uri === 'string') return { uri: ref.uri };
  }
  return {};
}

/** The span name the conventions give: `{mcp.method.name} {target}`, the target a prompt's name where there is one. */
function spanName(method: string, target: Target): string {
  return target.prompt === undefined ? method : `${method} ${target.prompt}`;
}

function targetAttributes(attributes: Attributes, target: Target): Attributes {
  if (target.prompt !== undefined) attributes[ATTR_GEN_AI_PROMPT_NAME] = target.prompt;
  if (target.uri !== undefined) attributes[ATTR_MCP_RESOURCE_URI] = target.uri;
  return attributes;
}

/**
 * A failed request: a JSON-RPC error's code is its `error.type` and
 * `rpc.response.status_code` (the conventions' rule), else what it says of itself.
 */
function failedRequest(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'number') span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, String(code));
  failed(span, requestErrorType(error), error instanceof Error ? error.message : undefined);
}

/**
 * One request other than `tools/call`: a SERVER span named as the conventions
 * say, its parent the caller's `_meta.traceparent` (else the HTTP headers),
 * and a CLIENT child for each request the gateway makes upstream for it (a
 * list gathered from several upstreams has one per upstream and page).
 */
class RequestSpan implements TracedRequest {
  readonly #tracer: Tracer | undefined;
  /** Undefined when traces are off (the request is only timed). */
  readonly #span: Span | undefined;
  readonly #context: Context | undefined;
  /** Unsampled, a request's upstream requests are sent its context (flag 00) and get no span of their own. */
  readonly #recording: boolean;
  readonly #instruments: Instruments | undefined;
  readonly #method: string;
  readonly #prompt: string | undefined;
  readonly #began = performance.now();

  constructor(tracer: Tracer | undefined, instruments: Instruments | undefined, facts: TracedRequestFacts) {
    this.#tracer = tracer;
    this.#instruments = instruments;
    const { method, params } = facts;
    const target = targetOf(method, params);
    this.#method = method;
    this.#prompt = target.prompt;
    if (!tracer) {
      this.#recording = false;
      return;
    }
    const attributes: Attributes = {
      [ATTR_MCP_METHOD_NAME]: method,
      [ATTR_JSONRPC_REQUEST_ID]: String(facts.id),
      [ATTR_NETWORK_TRANSPORT]: facts.transport === 'stdio' ? 'pipe' : 'tcp',
    };
    if (facts.protocolVersion !== undefined) attributes[ATTR_MCP_PROTOCOL_VERSION] = facts.protocolVersion;
    if (facts.sessionId !== undefined && (facts.protocolVersion ?? '') < STATELESS_REVISION)
      attributes[ATTR_MCP_SESSION_ID] = facts.sessionId;
    const headers = facts.transport === 'http' ? traceHeadersOf(facts.authInfo) : undefined;
    const parent = remoteParent(params?._meta as TraceCarrier | undefined, headers);
    this.#span = tracer.startSpan(
      spanName(method, target),
      { kind: SpanKind.SERVER, attributes: targetAttributes(attributes, target) },
      parent,
    );
    this.#context = trace.setSpan(parent, this.#span);
    this.#recording = this.#span.isRecording();
  }

  upstream(
    upstream: string,
    method: string,
    params: Record<string, unknown> | undefined,
  ): { sent: Record<string, unknown> | undefined; end(error?: unknown): void } {
    const tracer = this.#tracer;
    const own = this.#span;
    // Not traced: the upstream gets the params as they are.
    if (!tracer || !own) return { sent: params, end: () => {} };
    if (!this.#recording) {
      const sent =
        params === undefined
          ? undefined
          : {
              ...params,
              _meta: withTraceContext(params._meta as Record<string, unknown> | undefined, own.spanContext()),
            };
      return { sent, end: () => {} };
    }
    const target = targetOf(method, params);
    const attributes: Attributes = { [ATTR_MCP_METHOD_NAME]: method, [ATTR_UPSTREAM]: upstream };
    const span = tracer.startSpan(
      spanName(method, target),
      { kind: SpanKind.CLIENT, attributes: targetAttributes(attributes, target) },
      this.#context,
    );
    const sent =
      params === undefined
        ? undefined
        : {
            ...params,
            _meta: withTraceContext(params._meta as Record<string, unknown> | undefined, span.spanContext()),
          };
    return {
      sent,
      end: (error?: unknown) => {
        if (error !== undefined) failedRequest(span, error);
        span.end();
      },
    };
  }

  end(error?: unknown): void {
    if (this.#span) {
      if (error !== undefined) failedRequest(this.#span, error);
      this.#span.end();
    }
    // Every operation's duration, as for tools/call (low-cardinality attributes only: no URIs).
    this.#instruments?.duration.record((performance.now() - this.#began) / 1000, {
      [ATTR_MCP_METHOD_NAME]: this.#method,
      ...(this.#prompt === undefined ? {} : { [ATTR_GEN_AI_PROMPT_NAME]: this.#prompt }),
      ...(error === undefined ? {} : { [ATTR_ERROR_TYPE]: requestErrorType(error) }),
    });
  }
}

/** A failed request's `error.type`: a JSON-RPC error's code, else what it says of itself. */
function requestErrorType(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? String(code) : errorType(error);
}
