import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { isInputRequiredResult } from '@modelcontextprotocol/server';
import { FeatureGate } from '../../envelope/tiers.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { IdSource } from '../../ids/index.ts';
import type { Ledger } from '../../ledger/index.ts';
import type { ArtifactSink } from '../../mcp/pipeline/types.ts';
import {
  answeredAt,
  type CallAccess,
  type CallSummary,
  createPipeline,
  type Pipeline,
  type PipelineOptions,
  type PipelineTool,
  type ToolCall,
  thrownSummary,
  type UnenforcedCall,
} from '../../mcp/pipeline.ts';
import { RateLimiter, type RateLimitRule } from '../../ratelimit/limiter.ts';
import { defaultRegistry } from '../../schemas/registry.ts';
import type { AccessDecision, AccessPolicy } from '../access/policy.ts';
import { accessPrincipalOf, type CallerIdentity, callerIdentity } from '../access/principal.ts';
import { splitReturnMode } from '../artifacts/return-modes.ts';
import { rateLimitedListener, traceHeadersOf } from '../http/scope.ts';
import type { CallLog, CallLogFacts, CallTransport } from '../operations/call-log.ts';
import type { GatewayTiers, UpstreamConfig } from '../operations/config.ts';
import { LedgerFiler } from '../operations/ledger-filer.ts';
import { isRoundSignal } from '../relay/input-required.ts';
import {
  type CallToolParams,
  isCreateTaskResult,
  NAMESPACE_SEPARATOR,
  type ToolCallContext,
  type ToolCallHandler,
} from '../relay/relay.ts';
import type { CallTelemetry, GatewayTelemetry } from '../telemetry/telemetry.ts';

/**
 * What the gateway does to every tools/call: per upstream, either pass the
 * result through untouched or run it through the one enforcement pipeline in
 * the upstream's dialect; then file the call's one report (`CallSummary`): a
 * call-log line and, when a provenance record was built, a ledger entry. The
 * pipeline reports the calls it answers; a relayed call, and one answered with
 * a protocol error, is reported here through the same builders, so nothing
 * re-reads an answer the pipeline made. The same instance serves stdio and
 * HTTP, so both transports enforce, log and record identically.
 */

export interface EnforcementOptions {
  upstreams: readonly UpstreamConfig[];
  ids: IdSource;
  ledger?: Ledger;
  callLog?: CallLog;
  /** The tier order and the anonymous tier; with it, each upstream's tier rules gate its tools. */
  tiers?: GatewayTiers;
  /**
   * Authorization per identity: each call's caller held to the `access` rules,
   * in the pipeline before anything else; the decision is logged and labels the
   * record. Absent: every tool is allowed.
   */
  access?: AccessPolicy;
  /** Token buckets on tools/call, one limiter for every transport and upstream; default none. */
  rateLimits?: readonly RateLimitRule[];
  /** The rate limiter's clock, in epoch milliseconds; default Date.now. */
  now?: () => number;
  /** Where results' files go, as each caller's return mode asks; default none (results stay inline). */
  artifacts?: ArtifactSink;
  /** Version recorded in provenance as the gateway's. */
  version: string;
  /** Spans and metrics of every call; absent, calls pay one check for it. */
  telemetry?: GatewayTelemetry;
  /** Where failures of the log or the ledger are reported; they never fail a call. */
  onError?: (error: unknown) => void;
  /**
   * Told once per tool and schema when a listed tool's schema cannot be compiled
   * (the server's defect: its calls are then not checked against it).
   */
  onSchemaDefect?: (defect: SchemaDefect) => void;
}

/** A listed tool's schema that cannot be compiled, as the operator is told of it. */
export interface SchemaDefect {
  upstream: string;
  tool: string;
  schema: 'inputSchema' | 'outputSchema';
  message: string;
}

interface Route {
  config: UpstreamConfig;
  pipeline: Pipeline;
}

/** The upstream's provenance defaults fill in what a caller who opted in did not say. */
function withProvenanceDefaults(meta: Record<string, unknown> | undefined, config: UpstreamConfig) {
  if (meta?.capture_provenance !== true) return meta;
  return {
    provenance_mode: config.provenance.mode,
    capture_artifacts: config.provenance.captureArtifacts,
    ...meta,
  };
}

/** The one caller of a stdio gateway, for rate limits kept per caller. */
export const LOCAL_PRINCIPAL = 'local';

/**
 * Who calls, for rate limits: what the HTTP server named the caller (its bearer
 * token, else its remote address), else the one local caller of stdio.
 */
function principalOf(context: ToolCallContext, transport: CallTransport): string {
  const principal = context.authInfo?.extra?.principal;
  if (typeof principal === 'string') return principal;
  return transport === 'stdio' ? LOCAL_PRINCIPAL : 'anonymous';
}

/** The longest label value a prov.record.v0.1 artifact carries. */
const MAX_LABEL = 200;
/** What stands for the rest of a value too long for a label: `…sha256:` and 16 hex digits of the whole. */
const LABEL_DIGEST_CHARS = 24;

/**
 * A label value of at most 200 characters: a longer one keeps its start and
 * ends with `…sha256:<16 hex digits of the whole value>`, so it is still told
 * apart from others and can be checked against the value it stands for. A
 * value with a lone surrogate (a token's claim may hold one) has no canonical
 * JSON form, so no record could carry it: it is kept with U+FFFD in place of
 * each, and the same suffix, of its UTF-16 code units, keeps it apart.
 */
export function labelValue(value: string): string {
  const wellFormed = value.isWellFormed();
  if (wellFormed && value.length <= MAX_LABEL) return value;
  const text = wellFormed ? value : value.toWellFormed();
  let cut = Math.min(text.length, MAX_LABEL - LABEL_DIGEST_CHARS);
  // Never half of a surrogate pair.
  const code = text.charCodeAt(cut - 1);
  if (cut < text.length && code >= 0xd800 && code <= 0xdbff) cut -= 1;
  const bytes = wellFormed ? Buffer.from(value, 'utf8') : Buffer.from(value, 'utf16le');
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  return `${text.slice(0, cut)}…sha256:${digest}`;
}

/**
 * The labels of a record's `arguments` artifact that say who asked and why it
 * was allowed: only the members there are (an anonymous caller has no
 * principal; without access rules there is no decision).
 */
export function callLabels(
  identity: CallerIdentity | undefined,
  decision: AccessDecision | undefined,
): Record<string, string> | undefined {
  if (!identity && !decision) return undefined;
  const labels: Record<string, string> = {};
  const put = (name: string, value: string | undefined) => {
    if (value !== undefined) labels[name] = labelValue(value);
  };
  put('principal', identity?.principal);
  put('principal_subject', identity?.subject);
  put('principal_issuer', identity?.issuer);
  put('principal_client_id', identity?.clientId);
  put('principal_tier', identity?.tier);
  put('principal_token_id', identity?.tokenId);
  if (decision) {
    put('access_decision', decision.allowed ? 'allow' : 'deny');
    put('access_rule', decision.rule);
  }
  return labels;
}

/** The tier a bearer token gave the caller; undefined for callers no token authenticated. */
function tierOf(context: ToolCallContext): string | undefined {
  const tier = context.authInfo?.extra?.tier;
  return typeof tier === 'string' ? tier : undefined;
}

/** A failure about one call, its message ending with the call's trace and span ids. */
function tracedError(error: unknown, { traceId, spanId }: CallLogFacts): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`${message} (trace_id=${traceId} span_id=${spanId})`, { cause: error });
}

export class Enforcement {
  readonly #routes = new Map<string, Route>();
  readonly #options: EnforcementOptions;
  /** Shared by every route and transport, so a bucket counts a caller's calls however they come. */
  readonly #limiter: RateLimiter;
  /** Call-log lines to write once their answers have gone. */
  readonly #waiting = new Set<() => void>();
  /** Records for the ledger, stored a turn of the event loop at a time. */
  readonly #filer: LedgerFiler | undefined;

  constructor(options: EnforcementOptions) {
    this.#options = options;
    this.#filer = options.ledger
      ? new LedgerFiler(
          options.ledger,
          (error) => this.#options.onError?.(error),
          options.telemetry
            ? (seconds, records) => options.telemetry?.ledgerAppended(seconds, records)
            : undefined,
        )
      : undefined;
    this.#limiter = new RateLimiter(options.rateLimits ?? [], options.now ? { now: options.now } : {});
    for (const config of options.upstreams) {
      // Passthrough is a mode of the same pipeline: its gates and report run there too.
      const pipeline = createPipeline({
        dialect: config.dialect,
        inputValidation: config.validation.input,
        outputValidation: config.validation.output,
        invalidInput: config.validation.invalidInput,
        ids: options.ids,
        server: { name: config.name, version: options.version },
        adapter: 'mcp-envelope-gateway',
        // Signed in the pipeline, before the answer and the ledger each get the record.
        ...(config.provenance.signingKey ? { signingKey: config.provenance.signingKey } : {}),
        ...(options.tiers ? this.#tierGate(config, options.tiers) : {}),
        ...(options.artifacts ? { artifacts: options.artifacts } : {}),
        ...(options.onError ? { onStoreError: options.onError } : {}),
        // Always set: hosted-v2 answers carry the null placeholder when no rule applies.
        rateLimit: (call) =>
          this.#limiter.check({
            principal: call.principal,
            upstream: config.name,
            tool: call.tool.name,
          }),
      });
      this.#routes.set(config.name, { config, pipeline });
    }
  }

  /** A tool's name as clients call it: namespaced when the gateway fronts several upstreams. */
  #called(config: UpstreamConfig, name: string): string {
    return this.#options.upstreams.length > 1 ? `${config.name}${NAMESPACE_SEPARATOR}${name}` : name;
  }

  /**
   * The pipeline's tier gate for one upstream. Rules are keyed by the name clients
   * call, so upgrade hints name the tool as the caller knows it; callers no token
   * authenticated are the configured anonymous tier.
   */
  #tierGate(
    config: UpstreamConfig,
    tiers: GatewayTiers,
  ): Pick<PipelineOptions, 'gate' | 'tier' | 'featuresOf'> {
    const features: Record<string, string> = {};
    const reasons: Record<string, string> = {};
    for (const [tool, rule] of Object.entries(config.tiers.tools)) {
      features[this.#called(config, tool)] = rule.tier;
      if (rule.reason !== undefined) reasons[this.#called(config, tool)] = rule.reason;
    }
    return {
      gate: new FeatureGate({ tiers: tiers.order, features, reasons }),
      tier: tiers.anonymous,
      featuresOf: (tool) => [this.#called(config, tool.name)],
    };
  }

  /**
   * The outputSchema to advertise for a listed tool of this upstream, or undefined
   * to keep the tool's own. An enforced upstream's tool is also checked here, as it
   * is listed: a schema that cannot be compiled is reported once (`onSchemaDefect`),
   * not at every call.
   */
  outputSchemaFor(tool: Tool, upstream: string): Tool['outputSchema'] | undefined {
    const route = this.#routes.get(upstream);
    if (!route || route.config.dialect === 'passthrough') return undefined;
    this.#checkSchemas(tool, route.config);
    return route.pipeline.outputSchema as Tool['outputSchema'] | undefined;
  }

  /** Schemas already checked, by upstream, tool, which schema and content. */
  readonly #checked = new Set<string>();

  #checkSchemas(tool: Tool, config: UpstreamConfig): void {
    const { onSchemaDefect } = this.#options;
    if (!onSchemaDefect) return;
    const checks = [
      ['inputSchema', tool.inputSchema, config.validation.input],
      ['outputSchema', tool.outputSchema, config.validation.output],
    ] as const;
    for (const [which, schema, mode] of checks) {
      if (schema === undefined || mode === 'off') continue;
      const key = JSON.stringify([config.name, tool.name, which, schema]);
      if (this.#checked.has(key)) continue;
      this.#checked.add(key);
      try {
        defaultRegistry().validatorForSchema(schema as Record<string, unknown>);
      } catch (error) {
        if (!(error instanceof EnvelopeError)) throw error;
        onSchemaDefect({ upstream: config.name, tool: tool.name, schema: which, message: error.message });
      }
    }
  }

  /** The tools/call hook for one serving transport. */
  handler(transport: CallTransport, route: string | null): ToolCallHandler {
    return async (params, invokeUpstream, context) => {
      const target = this.#routes.get(context.upstream);
      const call: UnenforcedCall = {
        tool: params.name,
        arguments: params.arguments,
        started: performance.now(),
        signal: context.signal,
      };
      const identity = callerIdentity(context.authInfo);
      const policy = this.#options.access;
      const decision = policy?.decide(
        accessPrincipalOf(context.authInfo, policy.anonymousTier),
        context.upstream,
        params.name,
      );
      // Who called, as a credential says (nothing for callers none authenticated: their principal
      // is an address or a session, not a who), and what the access rules decided.
      const facts: CallLogFacts = {
        upstream: context.upstream,
        transport,
        route,
        ...identity,
        ...(decision
          ? { access: { decision: decision.allowed ? 'allow' : 'deny', rule: decision.rule } }
          : {}),
        arguments: params.arguments,
      };
      let reported: (() => CallSummary) | undefined;
      const principal = principalOf(context, transport);
      const traced = this.#options.telemetry ? this.#traced(params, context, transport) : undefined;
      const ids = traced?.ids;
      if (ids) Object.assign(facts, ids);
      // Without a log or a ledger nothing reads the report, so none is made (its digests cost);
      // telemetry then reads the answer itself.
      const filing = this.#options.callLog !== undefined || this.#options.ledger !== undefined;
      const report = filing
        ? (summary: () => CallSummary) => {
            reported = summary;
            this.#file(summary, facts, principal);
          }
        : undefined;
      // `_meta.return_mode` is the gateway's: upstreams never see it.
      const { forwarded, asked } = splitReturnMode(params);
      try {
        if (!target) throw new EnvelopeError('NOT_FOUND', `Unknown upstream: ${context.upstream}`);
        const result = await this.#enforce(
          target.config,
          target.pipeline,
          forwarded,
          traced ? traced.invoking(invokeUpstream) : invokeUpstream,
          context,
          principal,
          report,
          asked,
          { identity, decision },
          // The record's arguments name the call's span, so a record leads to its trace (one exported).
          ids && traced?.recorded ? { trace_id: ids.traceId, span_id: ids.spanId } : undefined,
        );
        traced?.answered();
        // The answer goes once its record is in the ledger.
        await this.#filer?.settled();
        traced?.end({ summary: reported, result, signal: context.signal });
        return result;
      } catch (error) {
        // Answered with a protocol error the pipeline did not report (an unknown tool, a relayed JSON-RPC error).
        if (report && !reported) {
          const dialect = target?.config.dialect ?? 'passthrough';
          const at = answeredAt(call.signal);
          report(() => thrownSummary({ ...call, dialect }, error, at));
        }
        traced?.answered();
        await this.#filer?.settled();
        traced?.end({ summary: reported, error, signal: context.signal });
        throw error;
      }
    };
  }

  /** The call's telemetry, its parent the caller's trace context (`_meta`, else the HTTP headers). */
  #traced(
    params: CallToolParams,
    context: ToolCallContext,
    transport: CallTransport,
  ): CallTelemetry | undefined {
    const config = this.#routes.get(context.upstream)?.config;
    return this.#options.telemetry?.startCall({
      upstream: context.upstream,
      tool: config ? this.#called(config, params.name) : params.name,
      meta: params._meta,
      headers: transport === 'http' ? traceHeadersOf(context.authInfo) : undefined,
      transport,
      protocolVersion: context.request?.protocolVersion,
      sessionId: context.request?.sessionId,
      requestId: context.request?.id,
      recording: this.#filer !== undefined,
    });
  }

  async #enforce(
    config: UpstreamConfig,
    pipeline: Pipeline,
    params: CallToolParams,
    invokeUpstream: (params: CallToolParams) => Promise<CallToolResult>,
    context: ToolCallContext,
    principal: string,
    report: ((summary: () => CallSummary) => void) | undefined,
    returnMode: unknown,
    caller: { identity: CallerIdentity | undefined; decision: AccessDecision | undefined },
    traceLabels: Record<string, string> | undefined,
  ): Promise<CallToolResult> {
    const described = context.tool;
    const down = context.unavailable;
    const passthrough = config.dialect === 'passthrough';
    const access = this.#access(config, params.name, caller.decision);
    // The upstream listed no such tool: a protocol error naming the tool as the client called it,
    // rather than an execution failure quoting the upstream's un-namespaced name. In passthrough
    // the upstream answers for its own tools, whatever they are, except under access rules: there
    // an unknown tool must answer as a hidden one does (from the pipeline, in every mode), or
    // the difference would tell a caller which names exist.
    const upstreamAnswersUnknown = passthrough && caller.decision === undefined;
    if (!described && !down && !upstreamAnswersUnknown && !(access && 'hidden' in access)) {
      throw this.#unknownTool(config, params.name);
    }
    // An upstream that is down cannot describe its tool, but the call is still answered through
    // the pipeline (gate, envelope, log line), with why it is down as the failed execution.
    const tool: PipelineTool = described
      ? {
          name: params.name,
          title: described.title,
          // The record names the tool's own server version, not the gateway's.
          ...(context.serverInfo?.version ? { version: context.serverInfo.version } : {}),
          inputSchema: described.inputSchema as Record<string, unknown>,
          outputSchema: described.outputSchema as Record<string, unknown> | undefined,
          ...(context.definitionDigest ? { definitionDigest: context.definitionDigest } : {}),
        }
      : { name: params.name };
    // Provenance switched off for this upstream: the caller's opt-in is not honoured,
    // but its _meta (progress tokens and the like) still reaches the upstream.
    const meta =
      config.provenance.enabled && !passthrough ? withProvenanceDefaults(params._meta, config) : undefined;
    const tier = tierOf(context);
    const listener = rateLimitedListener(context.authInfo);
    // Who asked and under which rule, on the record's arguments: built only when a record is.
    const who =
      (meta as { capture_provenance?: unknown } | undefined)?.capture_provenance === true
        ? callLabels(caller.identity, caller.decision)
        : undefined;
    const labels = who || traceLabels ? { ...who, ...traceLabels } : undefined;
    const call: ToolCall = {
      tool,
      ...(tier === undefined ? {} : { tier }),
      ...(access ? { access } : {}),
      ...(labels ? { labels } : {}),
      principal,
      ...(listener ? { onRateLimited: listener } : {}),
      ...(returnMode === undefined ? {} : { returnMode }),
      arguments: params.arguments,
      meta,
      // Passthrough forwards whatever was called; the upstream (or why it is down) answers.
      invoke:
        described || passthrough
          ? (args) => invokeUpstream({ ...params, arguments: args })
          : () => Promise.reject(down),
      signal: context.signal,
      // A call waiting for client input is no answer yet, nor is a task handle (its result comes
      // from tasks/result); and a client that cannot give input is told so.
      isInterim: (result) => isInputRequiredResult(result) || isCreateTaskResult(result),
      isProtocolSignal: isRoundSignal,
      ...(report ? { report } : {}),
    };
    return pipeline.callTool(call);
  }

  /** The unknown-tool error: a protocol error naming the tool as the client called it. */
  #unknownTool(config: UpstreamConfig, name: string): EnvelopeError {
    const called = this.#called(config, name);
    return new EnvelopeError('NOT_FOUND', `Unknown tool: ${called}`, { tool: called, upstream: config.name });
  }

  /**
   * What the pipeline is told of a call the access rules refuse: hidden, the
   * unknown-tool error; allowed at a higher tier, the upgrade hint naming it.
   */
  #access(
    config: UpstreamConfig,
    name: string,
    decision: AccessDecision | undefined,
  ): CallAccess | undefined {
    if (!decision || decision.allowed) return undefined;
    const tier = decision.upgradeTier;
    if (tier === undefined) return { hidden: this.#unknownTool(config, name) };
    const feature = this.#called(config, name);
    return { upgrade: { feature, tier, reason: `${feature} is available from the ${tier} tier` } };
  }

  /**
   * Files one call's report: its provenance record in the ledger now, so it is
   * stored when the client has its answer; its call-log line (and, without a
   * ledger, the report's digests) once the answer has gone, so they add
   * nothing to the call's latency. `flush()` files what is still waiting.
   */
  #file(summary: () => CallSummary, facts: CallLogFacts, principal: string): void {
    const { callLog } = this.#options;
    const filer = this.#filer;
    if (filer) {
      this.#guarded(facts, () => {
        const { provenance, tool } = summary();
        // Who called is in the record's log leaf, where an auditor reads it.
        if (provenance) filer.file(provenance.record, { tool, upstream: facts.upstream, principal });
      });
    }
    if (!callLog) return;
    const write = () => this.#guarded(facts, () => callLog.write(summary(), facts));
    this.#waiting.add(write);
    setImmediate(() => {
      if (this.#waiting.delete(write)) write();
    });
  }

  /** Files every report still waiting for its answer to go (before the log closes). */
  flush(): void {
    this.#filer?.flush();
    for (const write of this.#waiting) write();
    this.#waiting.clear();
  }

  /**
   * Failures of the log or the ledger are reported, never the call's; when the
   * call is traced, the report names its trace and span, as its log line does.
   */
  #guarded(facts: CallLogFacts, action: () => void): void {
    try {
      action();
    } catch (error) {
      this.#options.onError?.(facts.traceId ? tracedError(error, facts) : error);
    }
  }
}
