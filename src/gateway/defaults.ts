/**
 * Every default of the gateway's settings, read from the configuration schema's
 * `default` keywords: the schema is the one table of settings, so the
 * documentation generated from it, the configuration loader, the proxy's flags
 * and the fallbacks of the modules that take options all agree. A leaf module
 * (it imports only the schema), so every part of the gateway can read it.
 */
import type { ReturnMode } from '../artifacts/service.ts';
import type { ResultDialectId } from '../envelope/dialect.ts';
import schema from '../schemas/data/gateway.config.schema.json' with { type: 'json' };

/** A result dialect of the codec contract, or `passthrough` (relay results untouched). */
export type UpstreamDialect = ResultDialectId | 'passthrough';
export const UPSTREAM_DIALECTS = [
  'prov-v0.1',
  'scalpel-v1',
  'hosted-v2',
  'a11y-v0.1',
  'legacy',
  'passthrough',
] as const satisfies readonly UpstreamDialect[];
export type ValidationMode = 'enforce' | 'warn' | 'off';
/** How a result stored as an artifact reaches the client (the `artifacts.defaultReturnMode` setting). */
export type { ReturnMode };
export type InvalidInputForm = 'result' | 'jsonrpc-error';
export type ProvenanceMode = 'minimal' | 'full';
/** `auto`: the newest revision the upstream speaks (probed once); otherwise the one revision pinned. */
export type UpstreamProtocol = 'auto' | '2025-11-25' | '2026-07-28';
/** `shared`: one upstream process serves a principal's 2025-era HTTP sessions; `per-session`: one each. */
export type UpstreamSharing = 'shared' | 'per-session';
/** `shared`: the gateway's artifact store is the upstream's too (passed in its environment); `own`: not. */
export type UpstreamArtifacts = 'own' | 'shared';
/** Tool pinning (src/gateway/pinning/): `warn` notes changed definitions, `enforce` also hides and refuses them. */
export type PinMode = 'off' | 'warn' | 'enforce';

/**
 * Every default, read from the schema's `default` keywords: the schema is the
 * one table of settings, so the documentation generated from it and the code
 * cannot disagree. Defaults that depend on other members (auth.required,
 * allowedHosts, maxSessionsPerPrincipal, tiers.anonymous, token names) are
 * computed below and described by the schema's `x-default`; the tier order's
 * is the library's DEFAULT_TIERS, which a test holds equal to the schema's.
 */
const UPSTREAM = schema.$defs.upstream.properties;
const HTTP = schema.$defs.http.properties;
const TOP = schema.properties;
export const CONFIG_DEFAULTS = deepFreeze({
  upstream: {
    stdio: {
      args: UPSTREAM.stdio.properties.args.default as string[],
      env: UPSTREAM.stdio.properties.env.default as Record<string, string>,
      envFromEnv: UPSTREAM.stdio.properties.envFromEnv.default as Record<string, string>,
      cwd: UPSTREAM.stdio.properties.cwd.default,
    },
    url: {
      headers: UPSTREAM.url.properties.headers.default as Record<string, string>,
      headersFromEnv: UPSTREAM.url.properties.headersFromEnv.default as Record<string, string>,
    },
    dialect: UPSTREAM.dialect.default as UpstreamDialect,
    validation: {
      input: UPSTREAM.validation.properties.input.default as ValidationMode,
      output: UPSTREAM.validation.properties.output.default as ValidationMode,
      invalidInput: UPSTREAM.validation.properties.invalidInput.default as InvalidInputForm,
    },
    provenance: {
      enabled: UPSTREAM.provenance.properties.enabled.default,
      mode: UPSTREAM.provenance.properties.mode.default as ProvenanceMode,
      captureArtifacts: UPSTREAM.provenance.properties.captureArtifacts.default,
    },
    timeouts: {
      callMs: UPSTREAM.timeouts.properties.callMs.default,
      startMs: UPSTREAM.timeouts.properties.startMs.default,
      tools: UPSTREAM.timeouts.properties.tools.default as Record<string, number>,
    },
    restart: {
      enabled: UPSTREAM.restart.properties.enabled.default,
      initialDelayMs: UPSTREAM.restart.properties.initialDelayMs.default,
      maxDelayMs: UPSTREAM.restart.properties.maxDelayMs.default,
      factor: UPSTREAM.restart.properties.factor.default,
      maxAttempts: UPSTREAM.restart.properties.maxAttempts.default,
    },
    protocol: UPSTREAM.protocol.default as UpstreamProtocol,
    sharing: UPSTREAM.sharing.default as UpstreamSharing,
    artifacts: UPSTREAM.artifacts.default as UpstreamArtifacts,
  },
  listen: {
    stdio: TOP.listen.properties.stdio.default,
    http: {
      host: HTTP.host.default,
      port: HTTP.port.default,
      path: HTTP.path.default,
      allowedOrigins: HTTP.allowedOrigins.default as string[],
      bodyLimitBytes: HTTP.bodyLimitBytes.default,
      resumable: HTTP.resumable.default,
      maxSessions: HTTP.maxSessions.default,
      sessionIdleMs: HTTP.sessionIdleMs.default,
      abandonedSessionMs: HTTP.abandonedSessionMs.default,
    },
  },
  auth: { tokens: TOP.auth.properties.tokens.default as unknown[] },
  token: {
    optional: schema.$defs.token.properties.optional.default,
    scopes: schema.$defs.token.properties.scopes.default as string[],
  },
  oauth: {
    algorithms: schema.$defs.oauth.properties.algorithms.default as string[],
    clockSkewSeconds: schema.$defs.oauth.properties.clockSkewSeconds.default,
    requiredScopes: schema.$defs.oauth.properties.requiredScopes.default as string[],
    tiers: schema.$defs.oauth.properties.tiers.default as { scope?: string; tier: string }[],
    dpop: schema.$defs.oauth.properties.dpop.default as 'off' | 'allowed' | 'required',
  },
  access: {
    rules: TOP.access.properties.rules.default as unknown[],
    default: TOP.access.properties.default.default as 'allow' | 'deny',
    rule: {
      allow: schema.$defs.accessRule.properties.allow.default as string[],
      deny: schema.$defs.accessRule.properties.deny.default as string[],
    },
  },
  ledger: {
    enabled: TOP.ledger.properties.enabled.default,
    path: TOP.ledger.properties.path.default,
    checkpointIntervalMs: TOP.ledger.properties.checkpointIntervalMs.default,
  },
  rateLimits: TOP.rateLimits.default as unknown[],
  rateLimit: { per: schema.$defs.rateLimit.properties.per.default as 'principal' | 'global' },
  artifacts: {
    enabled: TOP.artifacts.properties.enabled.default,
    dir: TOP.artifacts.properties.dir.default,
    ttlMs: TOP.artifacts.properties.ttlMs.default,
    maxBytes: TOP.artifacts.properties.maxBytes.default,
    downloadPath: TOP.artifacts.properties.downloadPath.default,
    inlineMaxBytes: TOP.artifacts.properties.inlineMaxBytes.default,
    defaultReturnMode: TOP.artifacts.properties.defaultReturnMode.default as ReturnMode,
  },
  pinning: { mode: TOP.pinning.properties.mode.default as PinMode },
  logs: {
    enabled: TOP.logs.properties.enabled.default,
    dir: TOP.logs.properties.dir.default,
    includeArguments: TOP.logs.properties.includeArguments.default,
  },
  telemetry: {
    serviceName: TOP.telemetry.properties.serviceName.default,
    traces: {
      enabled: TOP.telemetry.properties.traces.properties.enabled.default,
      sampleRatio: TOP.telemetry.properties.traces.properties.sampleRatio.default,
    },
    metrics: {
      otlp: TOP.telemetry.properties.metrics.properties.otlp.default,
      exportIntervalMs: TOP.telemetry.properties.metrics.properties.exportIntervalMs.default,
    },
    otlp: {
      headers: TOP.telemetry.properties.otlp.properties.headers.default as Record<string, string>,
      headersFromEnv: TOP.telemetry.properties.otlp.properties.headersFromEnv.default as Record<
        string,
        string
      >,
    },
  },
});

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
