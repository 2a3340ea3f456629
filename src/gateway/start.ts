import { createPublicKey } from 'node:crypto';
import { type ArtifactService, openArtifactService } from '../artifacts/service.ts';
import { EnvelopeError } from '../errors/index.ts';
import { createIdSource } from '../ids/index.ts';
import { Ledger } from '../ledger/index.ts';
import { PACKAGE_VERSION } from '../version.ts';
import { type PutApi, startPutApi } from './artifacts/put-api.ts';
import { artifactResources, artifactSink } from './artifacts/sink.ts';
import { Enforcement } from './enforcement/enforcement.ts';
import { type HttpGateway, startHttpGateway } from './http/server.ts';
import { CallLog, instanceName } from './operations/call-log.ts';
import { startCheckpoints } from './operations/checkpoints.ts';
import { callTimeoutMs, type GatewayConfig, type UpstreamConfig } from './operations/config.ts';
import { UpstreamStatusBoard } from './operations/upstream-status.ts';
import { PinGuard, pinChangeLine, signatureLine } from './pinning/pin-guard.ts';
import { PinStore } from './pinning/pin-store.ts';
import { UpstreamFleet } from './relay/upstream-fleet.ts';
import type { GatewayTelemetry } from './telemetry/telemetry.ts';
import { type StdioGateway, serveGatewayOnStdio } from './transports/stdio/serve-stdio.ts';
import { KILL_GRACE_MS, killAllUpstreams } from './upstreams/child-transport.ts';
import { EraMemory } from './upstreams/protocol-era.ts';
import { credentialsOf, rememberCredentials } from './upstreams/redact.ts';
import type { UpstreamOptions, UpstreamSpec } from './upstreams/upstream.ts';

/**
 * How long closing the gateway may take: enough for upstreams to exit on EOF
 * or SIGTERM (their own close sends SIGKILL after KILL_GRACE_MS); past it,
 * whatever upstream process is left is killed and the close ends anyway.
 */
export const SHUTDOWN_GRACE_MS = KILL_GRACE_MS + 1000;
/** After the forced kill, how long the rest of the close (call log, ledger) may still take. */
const SHUTDOWN_FINISH_MS = 1000;

/** Runs `close`, bounded: past SHUTDOWN_GRACE_MS the upstreams are killed, and past SHUTDOWN_FINISH_MS more it is left. */
async function closeWithin(close: () => Promise<void>): Promise<void> {
  const closing = close();
  let timer: NodeJS.Timeout | undefined;
  const expired = (ms: number) =>
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
  try {
    if (await Promise.race([closing.then(() => true), expired(SHUTDOWN_GRACE_MS)])) return;
    clearTimeout(timer);
    killAllUpstreams();
    await Promise.race([closing, expired(SHUTDOWN_FINISH_MS)]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Turns a resolved configuration into a running gateway: the ledger and the
 * call log opened once, one Enforcement shared by every transport, and the
 * listeners the configuration asks for. `proxy` and `gateway` both start here.
 */

export const GATEWAY_VERSION = PACKAGE_VERSION;

export interface RunningGateway {
  http: HttpGateway | undefined;
  /** Each upstream's state: ready, retrying (with why and its last stderr lines), gave up. */
  status: UpstreamStatusBoard;
  stdio: StdioGateway | undefined;
  ledger: Ledger | undefined;
  callLog: CallLog | undefined;
  /** The artifact store and download links; undefined when `artifacts.enabled` is false. */
  artifacts: ArtifactService | undefined;
  /** Resolves when the stdio client went away (never, without stdio). */
  stdioClosed: Promise<void>;
  /** Settles within SHUTDOWN_GRACE_MS plus a second, whatever the upstreams do. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Where operational messages go (never stdout: stdout may carry MCP). */
  onError?: (error: unknown) => void;
  /** Names the call log's folder; defaults to "gateway". */
  name?: string;
}

function upstreamSpec(upstream: UpstreamConfig, putApi?: PutApi): UpstreamSpec {
  const transport = upstream.transport;
  if (transport.kind !== 'stdio')
    return { name: upstream.name, kind: 'http', url: transport.url, headers: transport.headers };
  const spec = {
    name: upstream.name,
    kind: 'stdio' as const,
    command: transport.command,
    args: transport.args,
    env: transport.env,
    cwd: transport.cwd,
  };
  if (upstream.artifacts !== 'shared' || !putApi) return spec;
  // Asked at each start: each start gets a capability of its own (put-api.ts), never a path or a key.
  return { ...spec, env: (starting) => ({ ...transport.env, ...putApi.environmentFor(starting) }) };
}

function upstreamOptions(upstream: UpstreamConfig): UpstreamOptions {
  const tools: Record<string, number> = {};
  for (const tool of Object.keys(upstream.timeouts.tools)) tools[tool] = callTimeoutMs(upstream, tool);
  return {
    timeoutMs: upstream.timeouts.callMs,
    startTimeoutMs: upstream.timeouts.startMs,
    toolTimeoutsMs: tools,
    protocol: upstream.protocol,
    restart: upstream.restart.enabled
      ? {
          maxRestarts: upstream.restart.maxAttempts,
          initialDelayMs: upstream.restart.initialDelayMs,
          maxDelayMs: upstream.restart.maxDelayMs,
          factor: upstream.restart.factor,
        }
      : { maxRestarts: 0 },
  };
}

/** An address that cannot be bound is the operator's to fix: say which, and how. */
function listenError(error: unknown, config: GatewayConfig): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const listen = config.listen.http;
  if (!listen || (code !== 'EADDRINUSE' && code !== 'EACCES' && code !== 'EADDRNOTAVAIL')) return error;
  const reason =
    code === 'EADDRINUSE'
      ? 'the address is in use'
      : code === 'EACCES'
        ? 'permission denied'
        : 'no such local address';
  return new EnvelopeError(
    'LISTEN_FAILED',
    `Cannot listen on ${listen.host}:${listen.port}: ${reason}; choose another with --http HOST:PORT (with npm start: npm start -- --http 127.0.0.1:8788)`,
    { host: listen.host, port: listen.port, errno: code },
  );
}

/** Whether an address only this machine can reach was bound (127.0.0.0/8, ::1, localhost). */
function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/**
 * The warning for an HTTP listener other machines can reach with no token
 * required: anyone on the network may then call every tool. Host checks do
 * not help there, as they only stop browsers; a client outside sends any Host.
 */
export function exposureWarning(config: GatewayConfig, url?: string): string | undefined {
  const listen = config.listen.http;
  if (!listen || isLoopback(listen.host) || config.auth.required) return undefined;
  return (
    `WARNING: HTTP at ${url ?? `${listen.host}:${listen.port}`} is open to the network and no bearer token is required: ` +
    'anyone who can reach this address can call every tool. Configure auth.tokens or auth.oauth, or bind 127.0.0.1.'
  );
}

/**
 * The artifact store and its keys, opened once: its metadata goes in the
 * ledger's file when the ledger is on (opened first, so the file is a ledger
 * before the store adds its tables), else in `<dir>/artifacts.sqlite`.
 */
/**
 * Where definition pins are kept: `pinning.file`, else the ledger's file
 * (migrated by the ledger, opened first), else memory. None when every
 * upstream's pinning is off: then nothing is recorded.
 */
function openPins(config: GatewayConfig): PinStore | undefined {
  if (config.upstreams.every((upstream) => upstream.pin === 'off')) return undefined;
  return PinStore.open(config.pinning.file ?? (config.ledger.enabled ? config.ledger.path : undefined));
}

/** The pin checks of every relay: a change counted on the board and told to the operator once. */
function pinGuard(
  config: GatewayConfig,
  store: PinStore,
  status: UpstreamStatusBoard,
  report: (message: string) => void,
): PinGuard {
  return new PinGuard({
    store,
    modes: Object.fromEntries(config.upstreams.map((upstream) => [upstream.name, upstream.pin])),
    onChange: (change, mode) => {
      status.notePinChange(change.upstream);
      report(pinChangeLine(change, mode));
    },
    onRefused: (change) => status.notePinRefusal(change.upstream),
    keys: Object.fromEntries(config.upstreams.map((upstream) => [upstream.name, upstream.pinKeys])),
    onSignature: (upstream, problem, mode) => {
      if (problem !== undefined) status.notePinChange(upstream);
      report(signatureLine(upstream, problem, mode));
    },
  });
}

function openArtifacts(config: GatewayConfig, report: (error: unknown) => void): ArtifactService | undefined {
  const settings = config.artifacts;
  if (!settings.enabled) return undefined;
  return openArtifactService({
    dir: settings.dir,
    ...(config.ledger.enabled ? { databasePath: config.ledger.path } : {}),
    ttlMs: settings.ttlMs,
    maxBytes: settings.maxBytes,
    inlineMaxBytes: settings.inlineMaxBytes,
    defaultReturnMode: settings.defaultReturnMode,
    downloadPath: settings.downloadPath,
    ...(settings.publicUrl === undefined ? {} : { publicUrl: settings.publicUrl }),
    ...(settings.keys === undefined
      ? {}
      : { keys: settings.keys.map(({ id, key }) => ({ id, secret: key })) }),
    onError: report,
  });
}

function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

function formatBytes(bytes: number): string {
  if (bytes % (1 << 20) === 0) return `${bytes / (1 << 20)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

export async function startGateway(
  config: GatewayConfig,
  options: StartOptions = {},
): Promise<RunningGateway> {
  const report = options.onError ?? (() => {});
  // What upstreams write on stderr reaches callers in failures; the gateway's own credentials never do.
  rememberCredentials([
    ...config.auth.tokens.map(({ token }) => token),
    ...(config.auth.oauth?.introspection ? [config.auth.oauth.introspection.clientSecret] : []),
  ]);
  for (const upstream of config.upstreams) rememberCredentials(credentialsOf(upstreamSpec(upstream)));
  const ledger = config.ledger.enabled ? Ledger.open(config.ledger.path) : undefined;
  // With a signing key, the ledger's log is checkpointed as it grows and when the gateway stops.
  const checkpoints =
    ledger && config.signing
      ? startCheckpoints(ledger, config.signing.key, config.ledger.checkpointIntervalMs, report)
      : undefined;
  let artifacts: ArtifactService | undefined;
  let pinStore: PinStore | undefined;
  try {
    pinStore = openPins(config);
    artifacts = openArtifacts(config, report);
  } catch (error) {
    pinStore?.close();
    checkpoints?.stop();
    ledger?.close();
    throw error;
  }
  const callLog = config.logs.enabled
    ? new CallLog({
        dir: config.logs.dir,
        server: options.name ?? 'gateway',
        // Files and latest link are this instance's, so gateways sharing the folder keep apart.
        instance: config.logs.instance ?? instanceName(),
        includeArguments: config.logs.includeArguments,
      })
    : undefined;
  const status = new UpstreamStatusBoard(config.upstreams.map((upstream) => upstream.name));
  const pins = pinStore ? pinGuard(config, pinStore, status, report) : undefined;
  // Undefined unless the configuration turns traces or metrics on: then nothing of the SDK exists,
  // not even its modules (loaded here only when needed, so a gateway without telemetry pays nothing).
  const { traces, metrics } = config.telemetry;
  const telemetry: GatewayTelemetry | undefined =
    traces.enabled || metrics.prometheus || metrics.otlp
      ? (await import('./telemetry/telemetry.ts')).createTelemetry(config.telemetry, GATEWAY_VERSION)
      : undefined;
  telemetry?.observeUpstreams(status);
  const enforcement = new Enforcement({
    upstreams: config.upstreams,
    ...(config.tiers ? { tiers: config.tiers } : {}),
    ...(config.access ? { access: config.access } : {}),
    rateLimits: config.rateLimits,
    ids: createIdSource(config.ids.seed),
    ledger,
    callLog,
    ...(telemetry ? { telemetry } : {}),
    // Return modes store results' files here, owned by each caller.
    ...(artifacts ? { artifacts: artifactSink(artifacts) } : {}),
    version: GATEWAY_VERSION,
    onError: report,
    onSchemaDefect: ({ upstream, tool, schema, message }) => {
      status.noteSchemaDefect(upstream, { tool, schema, message });
      report(
        `upstream ${upstream}: tool ${tool} has an ${schema} that does not compile (${message}); ${
          schema === 'inputSchema'
            ? 'its calls are refused while input validation is enforce'
            : 'its results are not checked against it'
        }`,
      );
    },
  });
  // What each upstream speaks, learned once for every connection to it.
  const eras = new EraMemory();
  // One fleet per transport served: each has its tool-call handler; the eras and the board are shared.
  const fleet = (transport: 'stdio' | 'http', route: string | null): UpstreamFleet =>
    new UpstreamFleet({
      upstreams: config.upstreams.map((upstream) => ({
        ...upstreamSpec(upstream, putApi),
        sharing: upstream.sharing,
        options: upstreamOptions(upstream),
      })),
      eras,
      toolCallHandler: enforcement.handler(transport, route),
      outputSchemaFor: (tool, upstream) => enforcement.outputSchemaFor(tool, upstream),
      serverInfo:
        config.upstreams.length > 1 ? { name: 'mcp-envelope-gateway', version: GATEWAY_VERSION } : undefined,
      report,
      status,
      ...(pins ? { pins } : {}),
      ...(config.access ? { access: config.access } : {}),
      ...(artifacts ? { artifacts, ownResources: artifactResources(artifacts) } : {}),
      ...(telemetry?.requests ? { requestTracing: telemetry.requests } : {}),
    });

  let http: HttpGateway | undefined;
  let stdio: StdioGateway | undefined;
  let putApi: PutApi | undefined;
  const closeAll = async () => {
    await Promise.allSettled([http?.close(), stdio?.close()]);
    await putApi?.close();
    enforcement.flush();
    await callLog?.close();
    await artifacts?.close();
    checkpoints?.stop();
    pinStore?.close();
    ledger?.close();
    // Last, so a collector that does not answer delays nothing else: what is buffered is
    // exported within what is left of the bounded close.
    await telemetry?.shutdown();
  };
  try {
    // Before any upstream starts: a shared one is given the API's address and a capability at its start.
    if (artifacts && config.upstreams.some((upstream) => upstream.artifacts === 'shared'))
      putApi = await startPutApi(artifacts, { onError: report });
    const listen = config.listen.http;
    if (listen) {
      http = await startHttpGateway({
        fleet: fleet('http', listen.path),
        host: listen.host,
        port: listen.port,
        allowedHosts: listen.allowedHosts,
        allowedOrigins: listen.allowedOrigins,
        maxBodyBytes: listen.bodyLimitBytes,
        resumable: listen.resumable,
        maxSessions: listen.maxSessions,
        maxSessionsPerPrincipal: listen.maxSessionsPerPrincipal,
        sessionIdleMs: listen.sessionIdleMs,
        abandonedSessionMs: listen.abandonedSessionMs,
        // Sessions the gateway closed on its own are the operator's to know about.
        onSessionClosed: (id, reason) => {
          if (reason !== 'ended' && reason !== 'shutdown') report(`session ${id} closed: ${reason}`);
        },
        tokens: config.auth.tokens.map(({ name, token, tier, scopes }) => ({ name, token, tier, scopes })),
        ...(config.auth.oauth ? { oauth: config.auth.oauth } : {}),
        authRequired: config.auth.required,
        path: listen.path,
        mode: config.upstreams.map((upstream) => `${upstream.name}: ${upstream.dialect}`).join(', '),
        onError: report,
        onListening: (url) => artifacts?.useOrigin(new URL(url).origin),
        ...(ledger ? { ledger } : {}),
        ...(config.signing ? { ledgerPublicKey: createPublicKey(config.signing.key) } : {}),
        ...(telemetry?.prometheus ? { metrics: () => telemetry.prometheusText() } : {}),
        ...(artifacts
          ? { downloads: { path: config.artifacts.downloadPath, handler: artifacts.handler } }
          : {}),
      });
    }
    if (config.listen.stdio) stdio = await serveGatewayOnStdio(fleet('stdio', null));
  } catch (error) {
    await closeAll();
    throw listenError(error, config);
  }
  const exposed = exposureWarning(config, http?.url);
  if (exposed) report(exposed);
  const route = artifacts?.downloadRoute();
  if (artifacts && route) {
    report(
      `downloads: ${route}?id=<download id> (links live ${formatDuration(artifacts.ttlMs)}; artifacts up to ${formatBytes(artifacts.maxBytes)}, kept in ${config.artifacts.dir})`,
    );
  }
  // The first session's upstreams have started or failed, so the caller can say which.
  await http?.ready;
  let closing: Promise<void> | undefined;
  return {
    http,
    status,
    stdio,
    ledger,
    callLog,
    artifacts,
    stdioClosed: stdio ? stdio.closed : new Promise<void>(() => {}),
    close: () => {
      closing ??= closeWithin(closeAll);
      return closing;
    },
  };
}
