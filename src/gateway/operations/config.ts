/**
 * The gateway configuration: one JSON file, checked against
 * gateway.config.schema.json with the project's SchemaRegistry, then turned
 * into a fully-defaulted, path-resolved object so that the rest of the gateway
 * never has to ask "was this set?".
 */
import { createPublicKey, createSecretKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseJsonBytes } from '../../canonical/index.ts';
import { DEFAULT_TIERS } from '../../envelope/tiers.ts';
import { EnvelopeError, isEnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';
import { keyIdFor, loadPrivateKey } from '../../provenance/integrity.ts';
import type { RateLimitRule } from '../../ratelimit/limiter.ts';
import schema from '../../schemas/data/gateway.config.schema.json' with { type: 'json' };
import { defaultRegistry, type SchemaIssue } from '../../schemas/index.ts';
import { type AccessPolicy, type RawAccess, resolveAccess } from '../access/policy.ts';
import {
  type GatewayTiers,
  type RawGatewayTiers,
  type RawUpstreamTiers,
  resolveTiers,
  type ToolTier,
} from '../enforcement/tiers.ts';
import type { OAuthOptions, OAuthTier } from '../http/oauth/resource-server.ts';

export type { GatewayTiers, ToolTier } from '../enforcement/tiers.ts';

export const GATEWAY_CONFIG_SCHEMA_ID = 'mcp-envelope.gateway.config.v1';
export const GATEWAY_CONFIG_SCHEMA = schema as Record<string, unknown> & { $id: string };

import {
  CONFIG_DEFAULTS,
  type InvalidInputForm,
  type PinMode,
  type ProvenanceMode,
  type ReturnMode,
  type UpstreamArtifacts,
  type UpstreamDialect,
  type UpstreamProtocol,
  type UpstreamSharing,
  type ValidationMode,
} from '../defaults.ts';

export {
  CONFIG_DEFAULTS,
  type InvalidInputForm,
  type PinMode,
  type ProvenanceMode,
  type ReturnMode,
  UPSTREAM_DIALECTS,
  type UpstreamArtifacts,
  type UpstreamDialect,
  type UpstreamProtocol,
  type UpstreamSharing,
  type ValidationMode,
} from '../defaults.ts';

export interface StdioUpstream {
  kind: 'stdio';
  command: string;
  args: string[];
  /** The child's variables (`env`, then `envFromEnv` resolved), over child-transport.ts's safe base: nothing else of the gateway's environment. */
  env: Record<string, string>;
  /** Absolute; defaults to the configuration file's folder. */
  cwd: string;
}

export interface HttpUpstream {
  kind: 'http';
  url: string;
  /** Literal headers merged with those read from the environment. */
  headers: Record<string, string>;
}

export interface UpstreamConfig {
  name: string;
  transport: StdioUpstream | HttpUpstream;
  dialect: UpstreamDialect;
  validation: { input: ValidationMode; output: ValidationMode; invalidInput: InvalidInputForm };
  provenance: {
    enabled: boolean;
    mode: ProvenanceMode;
    captureArtifacts: boolean;
    /** The gateway-wide `signing` key, shared by every upstream; absent when records are not signed. */
    signingKey?: KeyObject;
  };
  timeouts: { callMs: number; startMs: number; tools: Record<string, number> };
  /** Tool (its own name) → the lowest tier that may call it; empty when nothing is gated. */
  tiers: { tools: Record<string, ToolTier> };
  restart: {
    enabled: boolean;
    initialDelayMs: number;
    maxDelayMs: number;
    factor: number;
    maxAttempts: number;
  };
  /** The protocol revision spoken to the upstream: `auto` (probed) or pinned. */
  protocol: UpstreamProtocol;
  /** How the upstream's processes are shared among 2025-era HTTP sessions. */
  sharing: UpstreamSharing;
  /** Whether the gateway's artifact store is the upstream's too. */
  artifacts: UpstreamArtifacts;
  /** Tool pinning for this upstream (its own `pin`, else `pinning.mode`). */
  pin: PinMode;
  /** Public keys one of which must sign the upstream's tools/list (pinning/signature.ts); empty: unsigned. */
  pinKeys: KeyObject[];
}

export interface HttpListenConfig {
  host: string;
  port: number;
  path: string;
  allowedHosts: string[];
  allowedOrigins: string[];
  bodyLimitBytes: number;
  /** Replayable SSE streams (Last-Event-ID) for 2025-era sessions. */
  resumable: boolean;
  maxSessions: number;
  maxSessionsPerPrincipal: number;
  sessionIdleMs: number;
  abandonedSessionMs: number;
}

export interface AuthToken {
  name: string;
  token: string;
  tier: string;
  /** Scopes its holder has for access rules; empty when none are configured. */
  scopes: string[];
}

export interface GatewayConfig {
  /** Absolute path of the file this came from (undefined when built from a value). */
  file: string | undefined;
  /** The folder relative paths were resolved against. */
  baseDir: string;
  upstreams: UpstreamConfig[];
  listen: { stdio: boolean; http: HttpListenConfig | undefined };
  /** `oauth`: the gateway as an OAuth 2.1 resource server, its client secret read; undefined without one. */
  auth: { required: boolean; tokens: AuthToken[]; oauth: OAuthOptions | undefined };
  /** The tier order and the tier of unauthenticated callers; undefined when no tiers section is given. */
  tiers: GatewayTiers | undefined;
  /** Authorization per identity (`access`), checked and compiled; undefined without the section. */
  access: AccessPolicy | undefined;
  ledger: { enabled: boolean; path: string; checkpointIntervalMs: number };
  /** `instance` absent: the environment's `MCP_ENVELOPE_INSTANCE`, else `<host>-<pid>`, decided at start. */
  logs: { enabled: boolean; dir: string; includeArguments: boolean; instance?: string };
  ids: { seed: string | undefined };
  /** Where definition pins are kept: `file` absolute, or undefined for the ledger's file (ledger on) or memory. */
  pinning: { mode: PinMode; file: string | undefined };
  /** The key every record is signed with, loaded once; undefined when records are not signed. */
  signing: SigningConfig | undefined;
  /** Large results as files behind signed download links. */
  artifacts: ArtifactsConfig;
  /** Token buckets on tools/call, every `per` filled in; empty: no limits. */
  rateLimits: GatewayRateLimit[];
  telemetry: TelemetryConfig;
}

/** OpenTelemetry traces and metrics (src/gateway/telemetry/). */
export interface TelemetryConfig {
  serviceName: string;
  /** `sampleRatio`: the share of the traces the gateway starts that are recorded (callers' flags decide theirs). */
  traces: { enabled: boolean; sampleRatio: number };
  /** `prometheus` resolved: true when the HTTP listener requires a token, unless configured. */
  metrics: { prometheus: boolean; otlp: boolean; exportIntervalMs: number };
  /** `endpoint` absent: nothing is exported over OTLP. Headers include those read from the environment. */
  otlp: { endpoint?: string; headers: Record<string, string> };
}

/** One `rateLimits` rule, its `per` defaulted. */
export interface GatewayRateLimit extends RateLimitRule {
  per: 'principal' | 'global';
}

/** A key that signs (the first) or verifies download ids; a KeyObject, so its bytes never print. */
export interface DownloadKey {
  id: string;
  key: KeyObject;
}

export interface ArtifactsConfig {
  enabled: boolean;
  /** Absolute. */
  dir: string;
  ttlMs: number;
  maxBytes: number;
  downloadPath: string;
  /** The base URL links start with; undefined: the HTTP listener's own address. */
  publicUrl: string | undefined;
  /** Configured keys, loaded; undefined: generated and kept in `<dir>/keys.json`. */
  keys: DownloadKey[] | undefined;
  inlineMaxBytes: number;
  defaultReturnMode: ReturnMode;
}

/** Shorter download secrets are refused (HMAC-SHA256 wants at least its output size). */
const MIN_DOWNLOAD_SECRET_BYTES = 32;

export interface SigningConfig {
  /** An Ed25519 private key; a KeyObject, so the key's bytes are never printed with the configuration. */
  key: KeyObject;
  /** `ed25519:` plus the public key's fingerprint, as signatures name it. */
  keyId: string;
}

export interface LoadOptions {
  /** Where `tokenEnv` and `headersFromEnv` are read; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
}

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

function configError(message: string, pointer: string, extra: Record<string, unknown> = {}): EnvelopeError {
  return new EnvelopeError('CONFIG_INVALID', message, { pointer, ...extra });
}

/** Reads, validates and defaults a gateway configuration file. */
export function loadGatewayConfig(file: string, options: LoadOptions = {}): GatewayConfig {
  const path = resolve(file);
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new EnvelopeError('CONFIG_NOT_FOUND', `Configuration file not found: ${path}`, { path });
    }
    throw new EnvelopeError('CONFIG_INVALID', `Configuration file cannot be read: ${path} (${code})`, {
      path,
      pointer: '',
    });
  }
  let value: unknown;
  try {
    // Strict: invalid UTF-8, duplicate keys and lone surrogates are errors, not guesses.
    value = parseJsonBytes(bytes);
  } catch (error) {
    const reason = isEnvelopeError(error) ? error.message : String(error);
    throw new EnvelopeError('CONFIG_INVALID', `${path}: ${reason}`, {
      path,
      pointer:
        isEnvelopeError(error) && typeof error.details?.pointer === 'string' ? error.details.pointer : '',
      cause_code: isEnvelopeError(error) ? error.code : 'JSON_MALFORMED',
    });
  }
  return resolveGatewayConfig(value, dirname(path), { ...options, file: path });
}

/** Validates a configuration value and applies every default; paths resolve against `baseDir`. */
export function resolveGatewayConfig(
  value: unknown,
  baseDir: string,
  options: LoadOptions & { file?: string } = {},
): GatewayConfig {
  const registry = defaultRegistry();
  registry.register(GATEWAY_CONFIG_SCHEMA);
  const result = registry.validate(GATEWAY_CONFIG_SCHEMA_ID, value);
  if (!result.valid) throw schemaProblem(result.issues, options.file);
  const raw = value as RawConfig;
  const env = options.env ?? process.env;
  const at = (path: string) => resolvePath(baseDir, path);

  const names = new Set<string>();
  const upstreams = raw.upstreams.map((upstream, index) => {
    if (names.has(upstream.name)) {
      throw configError(
        `Upstream name "${upstream.name}" is used twice`,
        encodePointer(['upstreams', index, 'name']),
      );
    }
    names.add(upstream.name);
    return resolveUpstream(upstream, index, baseDir, env);
  });
  const tiers = resolveTiers(
    { tiers: raw.tiers, upstreams: raw.upstreams, tokens: raw.auth?.tokens ?? [], oauth: raw.auth?.oauth },
    options.file,
  );
  for (const upstream of upstreams) upstream.tiers.tools = tiers.tools.get(upstream.name) ?? {};
  const signing = raw.signing === undefined ? undefined : resolveSigning(raw.signing, baseDir, env);
  // One key for the whole gateway, handed to each upstream's pipeline as its provenance settings.
  if (signing) for (const upstream of upstreams) upstream.provenance.signingKey = signing.key;

  const tokens: AuthToken[] = [];
  const unset: string[] = [];
  const configuredTokens = raw.auth?.tokens ?? (CONFIG_DEFAULTS.auth.tokens as RawToken[]);
  configuredTokens.forEach((entry, index) => {
    // The label operators know the token by: the token itself is never shown.
    const name = entry.name ?? `token-${index + 1}`;
    let token = entry.token;
    if (entry.tokenEnv !== undefined) {
      token = env[entry.tokenEnv];
      if ((token === undefined || token.length === 0) && (entry.optional ?? CONFIG_DEFAULTS.token.optional)) {
        unset.push(`${entry.tokenEnv} (token "${name}")`);
        return;
      }
      if (token === undefined || token.length === 0) {
        throw configError(
          `Environment variable ${entry.tokenEnv} (bearer token "${name}", tier "${entry.tier}") is not set`,
          encodePointer(['auth', 'tokens', index, 'tokenEnv']),
        );
      }
    }
    tokens.push({
      name,
      token: token as string,
      tier: entry.tier,
      scopes: entry.scopes ?? [...CONFIG_DEFAULTS.token.scopes],
    });
  });

  const access = resolveAccessSection(raw, tiers.gateway, upstreams, options.file);
  const oauth =
    raw.auth?.oauth === undefined
      ? undefined
      : resolveOAuth(raw.auth.oauth, tiers.gateway, env, access?.claimPaths ?? []);
  // Closed by default once any token is configured, whether or not its variable is set.
  const authRequired = raw.auth?.required ?? (configuredTokens.length > 0 || oauth !== undefined);
  if (authRequired && tokens.length === 0 && oauth === undefined) {
    throw configError(
      unset.length > 0
        ? `auth.required is true but no bearer token is usable: environment variable ${unset.join(', ')} is not set`
        : 'auth.required is true but no bearer token is configured (auth.tokens)',
      encodePointer(['auth', unset.length > 0 ? 'tokens' : 'required']),
    );
  }

  const http = raw.listen?.http;
  const listenHttp = http === undefined || http === false ? undefined : httpListen(http);

  const defaults = CONFIG_DEFAULTS;
  return {
    file: options.file,
    baseDir: resolve(baseDir),
    upstreams,
    listen: { stdio: raw.listen?.stdio ?? defaults.listen.stdio, http: listenHttp },
    auth: { required: authRequired, tokens, oauth },
    tiers: tiers.gateway,
    access,
    ledger: {
      enabled: raw.ledger?.enabled ?? defaults.ledger.enabled,
      path: at(raw.ledger?.path ?? defaults.ledger.path),
      checkpointIntervalMs: raw.ledger?.checkpointIntervalMs ?? defaults.ledger.checkpointIntervalMs,
    },
    logs: {
      enabled: raw.logs?.enabled ?? defaults.logs.enabled,
      dir: at(raw.logs?.dir ?? defaults.logs.dir),
      includeArguments: raw.logs?.includeArguments ?? defaults.logs.includeArguments,
      ...(raw.logs?.instance === undefined ? {} : { instance: raw.logs.instance }),
    },
    ids: { seed: raw.ids?.seed },
    pinning: resolvePinning(raw, upstreams, at),
    signing,
    artifacts: sharedArtifacts(resolveArtifacts(raw.artifacts ?? {}, baseDir, env), upstreams),
    rateLimits: resolveRateLimits(raw.rateLimits ?? (defaults.rateLimits as RateLimitRule[]), names),
    telemetry: resolveTelemetry(raw.telemetry ?? {}, authRequired && listenHttp !== undefined, env),
  };
}

/**
 * `access`, checked against the rest of the configuration and compiled: its
 * tiers are those of `tiers.order` (the default order without a `tiers`
 * section), callers without a credential have `tiers.anonymous`.
 */
function resolveAccessSection(
  raw: RawConfig,
  tiers: GatewayTiers | undefined,
  upstreams: readonly UpstreamConfig[],
  file: string | undefined,
): AccessPolicy | undefined {
  if (raw.access === undefined) return undefined;
  const order = tiers?.order ?? [...DEFAULT_TIERS];
  const defaults = CONFIG_DEFAULTS.access;
  return resolveAccess(
    {
      access: {
        rules: (raw.access.rules ?? (defaults.rules as NonNullable<RawAccess['rules']>)).map((rule) => ({
          ...rule,
          allow: rule.allow ?? [...defaults.rule.allow],
          deny: rule.deny ?? [...defaults.rule.deny],
        })),
        default: raw.access.default ?? defaults.default,
      },
      upstreams: upstreams.map((upstream) => upstream.name),
      order,
      anonymousTier: tiers?.anonymous ?? (order[0] as string),
      tokens: (raw.auth?.tokens ?? []).map((entry, index) => entry.name ?? `token-${index + 1}`),
      ...(raw.auth?.oauth ? { issuer: raw.auth.oauth.issuer } : {}),
    },
    file,
  );
}

/**
 * The telemetry settings, defaulted. An export asked for with nowhere to send
 * it stops the gateway (fails closed) rather than dropping what was asked for;
 * `/metrics` is served by default only where a token guards it.
 */
function resolveTelemetry(raw: RawTelemetry, guarded: boolean, env: NodeJS.ProcessEnv): TelemetryConfig {
  const defaults = CONFIG_DEFAULTS.telemetry;
  const traces = raw.traces?.enabled ?? defaults.traces.enabled;
  const otlpMetrics = raw.metrics?.otlp ?? defaults.metrics.otlp;
  const endpoint = raw.otlp?.endpoint;
  if (endpoint === undefined && (traces || otlpMetrics)) {
    throw configError(
      `telemetry.${traces ? 'traces.enabled' : 'metrics.otlp'} is true but telemetry.otlp.endpoint names no collector`,
      encodePointer(['telemetry', traces ? 'traces' : 'metrics', traces ? 'enabled' : 'otlp']),
    );
  }
  const headers = {
    ...(raw.otlp?.headers ?? defaults.otlp.headers),
    ...readFromEnvironment(raw.otlp?.headersFromEnv ?? defaults.otlp.headersFromEnv, env, (header) => ({
      what: `telemetry.otlp header ${header}`,
      pointer: ['telemetry', 'otlp', 'headersFromEnv', header],
    })),
  };
  return {
    serviceName: raw.serviceName ?? defaults.serviceName,
    traces: { enabled: traces, sampleRatio: raw.traces?.sampleRatio ?? defaults.traces.sampleRatio },
    metrics: {
      prometheus: raw.metrics?.prometheus ?? guarded,
      otlp: otlpMetrics,
      exportIntervalMs: raw.metrics?.exportIntervalMs ?? defaults.metrics.exportIntervalMs,
    },
    otlp: { ...(endpoint === undefined ? {} : { endpoint: endpoint.replace(/\/+$/, '') }), headers },
  };
}

/**
 * Each upstream's pinning mode, and where pins are kept. `enforce` fails
 * closed: pins that die with the gateway cannot be accepted by an operator,
 * so it needs the ledger's file or a pins file.
 */
function resolvePinning(
  raw: RawConfig,
  upstreams: UpstreamConfig[],
  at: (path: string) => string,
): GatewayConfig['pinning'] {
  const mode = raw.pinning?.mode ?? CONFIG_DEFAULTS.pinning.mode;
  const file = raw.pinning?.file === undefined ? undefined : at(raw.pinning.file);
  const ledger = raw.ledger?.enabled ?? CONFIG_DEFAULTS.ledger.enabled;
  upstreams.forEach((upstream, index) => {
    upstream.pin = raw.upstreams[index]?.pin ?? mode;
    if (upstream.pin === 'enforce' && file === undefined && !ledger)
      throw configError(
        `Upstream "${upstream.name}" pins in enforce mode, but its pins would be kept in memory only (the ledger is off and pinning.file is not set), where \`mcp-envelope tools accept\` cannot reach them`,
        raw.upstreams[index]?.pin === undefined
          ? '/pinning/mode'
          : encodePointer(['upstreams', index, 'pin']),
      );
  });
  return { mode, file };
}

/**
 * A key that signs an upstream's tools/list: a PEM public key (SPKI), or a
 * JWK in a JSON file. One that cannot be read stops the gateway (fails
 * closed) instead of leaving its lists unchecked.
 */
function loadPinKey(path: string, pointer: string): KeyObject {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw configError(
      `pinKeys file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      pointer,
      { path },
    );
  }
  try {
    return text.trimStart().startsWith('{')
      ? createPublicKey({ key: JSON.parse(text) as JsonWebKey, format: 'jwk' })
      : createPublicKey(text);
  } catch (error) {
    throw configError(`pinKeys file ${path} holds no public key: ${(error as Error).message}`, pointer, {
      path,
    });
  }
}

/** Artifact sharing fails closed: only with a store to share, and only with a process the gateway starts. */
function sharedArtifacts(artifacts: ArtifactsConfig, upstreams: readonly UpstreamConfig[]): ArtifactsConfig {
  upstreams.forEach((upstream, index) => {
    if (upstream.artifacts !== 'shared') return;
    const pointer = encodePointer(['upstreams', index, 'artifacts']);
    if (!artifacts.enabled)
      throw configError(
        `Upstream "${upstream.name}" shares the gateway's artifact store, but artifacts.enabled is false`,
        pointer,
      );
    if (upstream.transport.kind !== 'stdio')
      throw configError(
        `Upstream "${upstream.name}" is reached by URL: the gateway cannot hand it a capability to its artifact store (only stdio upstreams share it)`,
        pointer,
      );
  });
  return artifacts;
}

/** The rate rules, each bucket named once and each upstream one that is configured. */
function resolveRateLimits(
  rules: readonly RateLimitRule[],
  upstreams: ReadonlySet<string>,
): GatewayRateLimit[] {
  const buckets = new Set<string>();
  return rules.map((rule, index) => {
    if (buckets.has(rule.bucket)) {
      throw configError(
        `Rate bucket "${rule.bucket}" is named twice`,
        encodePointer(['rateLimits', index, 'bucket']),
      );
    }
    buckets.add(rule.bucket);
    if (rule.upstream !== undefined && !upstreams.has(rule.upstream)) {
      throw configError(
        `Rate bucket "${rule.bucket}" names upstream "${rule.upstream}", which is not configured (upstreams: ${[...upstreams].join(', ')})`,
        encodePointer(['rateLimits', index, 'upstream']),
      );
    }
    return { ...rule, per: rule.per ?? CONFIG_DEFAULTS.rateLimit.per };
  });
}

/**
 * The artifact settings, defaulted; configured download keys are read now, so
 * a missing variable or file, or a short secret, stops the gateway (fails
 * closed) instead of leaving links unverifiable. Messages never show a secret.
 */
function resolveArtifacts(raw: RawArtifacts, baseDir: string, env: NodeJS.ProcessEnv): ArtifactsConfig {
  const defaults = CONFIG_DEFAULTS.artifacts;
  const keys = raw.keys?.map((entry, index): DownloadKey => {
    let secret: Buffer;
    let where: string;
    let pointer: string;
    if (entry.keyFile !== undefined) {
      const path = resolvePath(baseDir, entry.keyFile);
      where = `artifacts.keys[${index}].keyFile ${path}`;
      pointer = encodePointer(['artifacts', 'keys', index, 'keyFile']);
      try {
        // A trailing newline is the editor's, not the key's.
        secret = Buffer.from(readFileSync(path, 'utf8').replace(/\r?\n$/, ''), 'utf8');
      } catch (error) {
        throw configError(
          `${where} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
          pointer,
          {
            path,
          },
        );
      }
      refuseLooseKeyFile(path, where, pointer);
    } else {
      const variable = entry.keyEnv as string;
      where = `Environment variable ${variable} (artifacts.keys[${index}].keyEnv, download key "${entry.id}")`;
      pointer = encodePointer(['artifacts', 'keys', index, 'keyEnv']);
      const value = env[variable];
      if (value === undefined || value.length === 0) throw configError(`${where} is not set`, pointer);
      secret = Buffer.from(value, 'utf8');
    }
    if (secret.length < MIN_DOWNLOAD_SECRET_BYTES) {
      throw configError(
        `${where} holds ${secret.length} bytes; a download key needs at least ${MIN_DOWNLOAD_SECRET_BYTES}`,
        pointer,
      );
    }
    return { id: entry.id, key: createSecretKey(secret) };
  });
  const ids = new Set<string>();
  keys?.forEach((key, index) => {
    if (ids.has(key.id)) {
      throw configError(
        `Download key id "${key.id}" is used twice`,
        encodePointer(['artifacts', 'keys', index, 'id']),
      );
    }
    ids.add(key.id);
  });
  return {
    enabled: raw.enabled ?? defaults.enabled,
    dir: resolvePath(baseDir, raw.dir ?? defaults.dir),
    ttlMs: raw.ttlMs ?? defaults.ttlMs,
    maxBytes: raw.maxBytes ?? defaults.maxBytes,
    downloadPath: raw.downloadPath ?? defaults.downloadPath,
    publicUrl: raw.publicUrl,
    keys,
    inlineMaxBytes: raw.inlineMaxBytes ?? defaults.inlineMaxBytes,
    defaultReturnMode: raw.defaultReturnMode ?? defaults.defaultReturnMode,
  };
}

/**
 * A private key file others may read or write is refused, as ssh and cosign
 * refuse theirs: whoever else reads it can sign as the gateway. (Windows has
 * no such mode bits to read.)
 */
function refuseLooseKeyFile(path: string, where: string, pointer: string): void {
  if (process.platform === 'win32') return;
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw configError(
      `${where} may be read or written by others (mode ${mode.toString(8).padStart(4, '0')}): a key anyone else can read signs as this gateway; chmod 600 it`,
      pointer,
      { path },
    );
  }
}

/**
 * Loads the signing key named by `keyFile` or `keyEnv`. A key that cannot be
 * used stops the gateway rather than leaving records unsigned; messages name
 * the member, the file or the variable, never the key's text.
 */
function resolveSigning(raw: RawSigning, baseDir: string, env: NodeJS.ProcessEnv): SigningConfig {
  let pem: Buffer | string;
  let where: string;
  let pointer: string;
  if (raw.keyFile !== undefined) {
    const path = resolvePath(baseDir, raw.keyFile);
    where = `signing.keyFile ${path}`;
    pointer = encodePointer(['signing', 'keyFile']);
    try {
      pem = readFileSync(path);
    } catch (error) {
      throw configError(
        `${where} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        pointer,
        { path },
      );
    }
    refuseLooseKeyFile(path, where, pointer);
  } else {
    const variable = raw.keyEnv as string;
    where = `Environment variable ${variable} (signing.keyEnv)`;
    pointer = encodePointer(['signing', 'keyEnv']);
    const value = env[variable];
    if (value === undefined || value.length === 0) throw configError(`${where} is not set`, pointer);
    pem = value;
  }
  let key: KeyObject;
  try {
    key = loadPrivateKey(pem);
  } catch (error) {
    // loadPrivateKey names a wrong key type; for text that is no key at all, say what is expected.
    const type = isEnvelopeError(error) ? /^Private key is (\S+), not/.exec(error.message)?.[1] : undefined;
    const reason = type
      ? `holds a key of type ${type}, not Ed25519`
      : 'is not an unencrypted PKCS#8 PEM private key';
    throw configError(`${where} ${reason}`, pointer);
  }
  return { key, keyId: keyIdFor(key) };
}

function resolveUpstream(
  upstream: RawUpstream,
  index: number,
  baseDir: string,
  env: NodeJS.ProcessEnv,
): UpstreamConfig {
  const defaults = CONFIG_DEFAULTS.upstream;
  let transport: StdioUpstream | HttpUpstream;
  if (upstream.stdio) {
    const { command, args, env: childEnv, envFromEnv, cwd } = upstream.stdio;
    const childVariables = {
      ...(childEnv ?? defaults.stdio.env),
      ...readFromEnvironment(envFromEnv ?? defaults.stdio.envFromEnv, env, (name) => ({
        what: `variable ${name} of upstream "${upstream.name}"`,
        pointer: ['upstreams', index, 'stdio', 'envFromEnv', name],
      })),
    };
    transport = {
      kind: 'stdio',
      command: resolveCommand(baseDir, command),
      args: [...(args ?? defaults.stdio.args)],
      env: childVariables,
      cwd: resolvePath(baseDir, cwd ?? defaults.stdio.cwd),
    };
  } else {
    const { url, headers, headersFromEnv } = upstream.url as NonNullable<RawUpstream['url']>;
    const merged = {
      ...(headers ?? defaults.url.headers),
      ...readFromEnvironment(headersFromEnv ?? defaults.url.headersFromEnv, env, (header) => ({
        what: `header ${header} of upstream "${upstream.name}"`,
        pointer: ['upstreams', index, 'url', 'headersFromEnv', header],
      })),
    };
    transport = { kind: 'http', url, headers: merged };
  }
  const restart = { ...defaults.restart, ...upstream.restart };
  if (restart.maxDelayMs < restart.initialDelayMs) {
    throw configError(
      `restart.maxDelayMs (${restart.maxDelayMs}) is below restart.initialDelayMs (${restart.initialDelayMs})`,
      encodePointer(['upstreams', index, 'restart', 'maxDelayMs']),
    );
  }
  return {
    name: upstream.name,
    transport,
    dialect: upstream.dialect ?? defaults.dialect,
    validation: { ...defaults.validation, ...upstream.validation },
    provenance: { ...defaults.provenance, ...upstream.provenance },
    timeouts: {
      callMs: upstream.timeouts?.callMs ?? defaults.timeouts.callMs,
      startMs: upstream.timeouts?.startMs ?? defaults.timeouts.startMs,
      tools: { ...(upstream.timeouts?.tools ?? defaults.timeouts.tools) },
    },
    // Filled in by resolveTiers, which sees every upstream at once.
    tiers: { tools: {} },
    restart,
    protocol: upstream.protocol ?? defaults.protocol,
    sharing: upstream.sharing ?? defaults.sharing,
    artifacts: upstream.artifacts ?? defaults.artifacts,
    // Resolved with the gateway-wide mode, which it overrides (resolvePinning).
    pin: upstream.pin ?? CONFIG_DEFAULTS.pinning.mode,
    pinKeys: (upstream.pinKeys ?? []).map((file, at) =>
      loadPinKey(resolvePath(baseDir, file), encodePointer(['upstreams', index, 'pinKeys', at])),
    ),
  };
}

/** An HTTP listener's settings, every one the configuration leaves out at its default. */
export function httpListen(http: Partial<HttpListenConfig>): HttpListenConfig {
  const defaults = CONFIG_DEFAULTS.listen.http;
  const host = http.host ?? defaults.host;
  const maxSessions = http.maxSessions ?? defaults.maxSessions;
  return {
    host,
    port: http.port ?? defaults.port,
    path: http.path ?? defaults.path,
    allowedHosts: http.allowedHosts ?? defaultAllowedHosts(host),
    allowedOrigins: [...(http.allowedOrigins ?? defaults.allowedOrigins)],
    bodyLimitBytes: http.bodyLimitBytes ?? defaults.bodyLimitBytes,
    resumable: http.resumable ?? defaults.resumable,
    maxSessions,
    maxSessionsPerPrincipal: http.maxSessionsPerPrincipal ?? Math.max(1, Math.floor(maxSessions / 4)),
    sessionIdleMs: http.sessionIdleMs ?? defaults.sessionIdleMs,
    abandonedSessionMs: http.abandonedSessionMs ?? defaults.abandonedSessionMs,
  };
}

/** The timeout of one tool call: the tool's own entry, else the upstream's default. */
export function callTimeoutMs(upstream: UpstreamConfig, tool: string): number {
  return Object.hasOwn(upstream.timeouts.tools, tool)
    ? (upstream.timeouts.tools[tool] as number)
    : upstream.timeouts.callMs;
}

/**
 * `node` means the Node running the gateway (so TypeScript upstreams get the same
 * type stripping, whatever PATH holds); another bare name is looked up on PATH;
 * a relative path is relative to the configuration's folder.
 */
function resolveCommand(baseDir: string, command: string): string {
  if (command === 'node') return process.execPath;
  return command.includes('/') ? resolvePath(baseDir, command) : command;
}

function defaultAllowedHosts(host: string): string[] {
  // Loopback binds get DNS-rebinding protection by default; other binds must list their names.
  return LOOPBACK_HOSTS.includes(host) || host === '::1' ? [...LOOPBACK_HOSTS] : [];
}

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

/**
 * One error naming the most useful issue. Ajv reports every failed branch of a
 * oneOf; the deepest pointer is nearly always the one a person must fix.
 */
function schemaProblem(issues: readonly SchemaIssue[], file: string | undefined): EnvelopeError {
  const ranked = [...issues].sort(
    (a, b) =>
      depth(b.pointer) - depth(a.pointer) || Number(b.keyword === 'oneOf') - Number(a.keyword === 'oneOf'),
  );
  const first = ranked[0] as SchemaIssue;
  const where = first.pointer === '' ? '/' : first.pointer;
  const prefix = file === undefined ? '' : `${file}: `;
  return configError(`${prefix}${where} ${oneOfHint(first)}`, first.pointer, {
    ...(file === undefined ? {} : { path: file }),
    issues: issues.map(({ pointer, message, keyword }) => ({ pointer, message, keyword })),
  });
}

function oneOfHint(issue: SchemaIssue): string {
  if (/^\/access\/rules\/\d+\/(allow|deny)\/\d+$/.test(issue.pointer))
    return 'must be an <upstream>/<name> pattern (`*` matching any run of characters), without spaces';
  if (/^\/auth\/oauth\/tiers\/\d+$/.test(issue.pointer) && /"(scope|claims)"/.test(issue.message))
    return 'must have "scope" or "claims" (or both)';
  if (issue.keyword !== 'oneOf') return issue.message;
  if (/^\/upstreams\/\d+$/.test(issue.pointer)) return 'must have exactly one of "stdio" or "url"';
  if (/^\/auth\/tokens\/\d+$/.test(issue.pointer)) return 'must have exactly one of "token" or "tokenEnv"';
  if (issue.pointer === '/signing') return 'must have exactly one of "keyFile" or "keyEnv"';
  if (/^\/artifacts\/keys\/\d+$/.test(issue.pointer)) return 'must have exactly one of "keyFile" or "keyEnv"';
  if (/^(\/upstreams\/\d+)?\/tiers\/tools\/[^/]+$/.test(issue.pointer)) {
    return 'must be a tier name (lower case: [a-z][a-z0-9_-]*) or an object {"tier", "reason"}';
  }
  return issue.message;
}

function depth(pointer: string): number {
  return pointer === '' ? 0 : pointer.split('/').length;
}

// The shape the schema admits, before defaults.
interface RawUpstream {
  name: string;
  stdio?: {
    command: string;
    args?: string[];
    env?: Record<string, string>;
    envFromEnv?: Record<string, string>;
    cwd?: string;
  };
  url?: { url: string; headers?: Record<string, string>; headersFromEnv?: Record<string, string> };
  dialect?: UpstreamDialect;
  validation?: { input?: ValidationMode; output?: ValidationMode; invalidInput?: InvalidInputForm };
  provenance?: { enabled?: boolean; mode?: ProvenanceMode; captureArtifacts?: boolean };
  timeouts?: { callMs?: number; startMs?: number; tools?: Record<string, number> };
  tiers?: RawUpstreamTiers;
  restart?: {
    enabled?: boolean;
    initialDelayMs?: number;
    maxDelayMs?: number;
    factor?: number;
    maxAttempts?: number;
  };
  protocol?: UpstreamProtocol;
  sharing?: UpstreamSharing;
  artifacts?: UpstreamArtifacts;
  pin?: PinMode;
  pinKeys?: string[];
}

interface RawOAuth {
  issuer: string;
  audience?: string;
  resource?: string;
  jwksUri?: string;
  algorithms?: string[];
  clockSkewSeconds?: number;
  requiredScopes?: string[];
  ledgerScope?: string;
  tiers?: OAuthTier[];
  defaultTier?: string;
  introspection?: { endpoint?: string; clientId: string; clientSecretEnv: string };
  dpop?: 'off' | 'allowed' | 'required';
}

/**
 * `auth.oauth` resolved: defaults filled, the default tier worked out (the
 * anonymous tier), the introspection secret read from its variable (an unset
 * one refuses to start, naming the variable, never a value).
 */
function resolveOAuth(
  raw: RawOAuth,
  tiers: GatewayTiers | undefined,
  env: NodeJS.ProcessEnv,
  accessClaims: readonly string[],
): OAuthOptions {
  const defaults = CONFIG_DEFAULTS.oauth;
  let introspection: OAuthOptions['introspection'];
  if (raw.introspection) {
    const secret = env[raw.introspection.clientSecretEnv];
    if (secret === undefined || secret.length === 0) {
      throw configError(
        `Environment variable ${raw.introspection.clientSecretEnv} (the introspection client secret) is not set`,
        encodePointer(['auth', 'oauth', 'introspection', 'clientSecretEnv']),
      );
    }
    introspection = {
      ...(raw.introspection.endpoint === undefined ? {} : { endpoint: raw.introspection.endpoint }),
      clientId: raw.introspection.clientId,
      clientSecret: secret,
    };
  }
  return {
    issuer: raw.issuer,
    ...(raw.audience === undefined ? {} : { audience: raw.audience }),
    ...(raw.resource === undefined ? {} : { resource: raw.resource }),
    ...(raw.jwksUri === undefined ? {} : { jwksUri: raw.jwksUri }),
    algorithms: raw.algorithms ?? [...defaults.algorithms],
    clockSkewSeconds: raw.clockSkewSeconds ?? defaults.clockSkewSeconds,
    requiredScopes: raw.requiredScopes ?? [...defaults.requiredScopes],
    ...(raw.ledgerScope === undefined ? {} : { ledgerScope: raw.ledgerScope }),
    tiers: raw.tiers ?? [...defaults.tiers],
    defaultTier: raw.defaultTier ?? tiers?.anonymous ?? DEFAULT_TIERS[0],
    // The claims read of a token: those the access rules and the tier entries name, no others.
    claimPaths: [
      ...new Set([...accessClaims, ...(raw.tiers ?? []).flatMap((entry) => Object.keys(entry.claims ?? {}))]),
    ],
    ...(introspection ? { introspection } : {}),
    dpop: raw.dpop ?? defaults.dpop,
  };
}

interface RawToken {
  name?: string;
  token?: string;
  tokenEnv?: string;
  tier: string;
  optional?: boolean;
  scopes?: string[];
}

interface RawConfig {
  upstreams: RawUpstream[];
  listen?: { stdio?: boolean; http?: false | Partial<HttpListenConfig> };
  auth?: {
    required?: boolean;
    tokens?: RawToken[];
    oauth?: RawOAuth;
  };
  tiers?: RawGatewayTiers;
  access?: RawAccess;
  ledger?: { enabled?: boolean; path?: string; checkpointIntervalMs?: number };
  logs?: { enabled?: boolean; dir?: string; includeArguments?: boolean; instance?: string };
  ids?: { seed?: string };
  pinning?: { mode?: PinMode; file?: string };
  signing?: RawSigning;
  artifacts?: RawArtifacts;
  rateLimits?: RateLimitRule[];
  telemetry?: RawTelemetry;
}

interface RawTelemetry {
  serviceName?: string;
  traces?: { enabled?: boolean; sampleRatio?: number };
  metrics?: { prometheus?: boolean; otlp?: boolean; exportIntervalMs?: number };
  otlp?: { endpoint?: string; headers?: Record<string, string>; headersFromEnv?: Record<string, string> };
}

interface RawArtifacts {
  enabled?: boolean;
  dir?: string;
  ttlMs?: number;
  maxBytes?: number;
  downloadPath?: string;
  publicUrl?: string;
  keys?: { id: string; keyFile?: string; keyEnv?: string }[];
  inlineMaxBytes?: number;
  defaultReturnMode?: ReturnMode;
}

interface RawSigning {
  keyFile?: string;
  keyEnv?: string;
}

/**
 * Values read from the environment by variable name (`headersFromEnv`,
 * `envFromEnv`), so secrets stay out of the file; an unset variable stops the
 * gateway, naming what it was for and where it is configured.
 */
function readFromEnvironment(
  names: Readonly<Record<string, string>>,
  env: NodeJS.ProcessEnv,
  describe: (key: string) => { what: string; pointer: (string | number)[] },
): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [key, variable] of Object.entries(names)) {
    const value = env[variable];
    if (value === undefined) {
      const { what, pointer } = describe(key);
      throw configError(`Environment variable ${variable} (${what}) is not set`, encodePointer(pointer));
    }
    found[key] = value;
  }
  return found;
}
