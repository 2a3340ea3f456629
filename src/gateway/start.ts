import { EnvelopeError } from '../errors/index.ts';
import { createIdSource } from '../ids/index.ts';
import { Ledger } from '../ledger/index.ts';
import { PACKAGE_VERSION } from '../version.ts';
import { Enforcement } from './enforcement/enforcement.ts';
import { type HttpGateway, startHttpGateway } from './http/server.ts';
import { CallLog, instanceName } from './operations/call-log.ts';
import { callTimeoutMs, type GatewayConfig, type UpstreamConfig } from './operations/config.ts';
import { UpstreamStatusBoard } from './operations/upstream-status.ts';
import type { GatewayOptions } from './relay/client-session.ts';
import { type StdioGateway, serveGatewayOnStdio } from './transports/stdio/serve-stdio.ts';
import type { UpstreamOptions, UpstreamSpec } from './upstreams/upstream.ts';

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
  /** Resolves when the stdio client went away (never, without stdio). */
  stdioClosed: Promise<void>;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Where operational messages go (never stdout: stdout may carry MCP). */
  onError?: (error: unknown) => void;
  /** Names the call log's folder; defaults to "gateway". */
  name?: string;
}

function upstreamSpec(upstream: UpstreamConfig): UpstreamSpec {
  const transport = upstream.transport;
  return transport.kind === 'stdio'
    ? {
        name: upstream.name,
        kind: 'stdio',
        command: transport.command,
        args: transport.args,
        env: transport.env,
        cwd: transport.cwd,
      }
    : { name: upstream.name, kind: 'http', url: transport.url, headers: transport.headers };
}

function upstreamOptions(upstream: UpstreamConfig): UpstreamOptions {
  const tools: Record<string, number> = {};
  for (const tool of Object.keys(upstream.timeouts.tools)) tools[tool] = callTimeoutMs(upstream, tool);
  return {
    timeoutMs: upstream.timeouts.callMs,
    startTimeoutMs: upstream.timeouts.startMs,
    toolTimeoutsMs: tools,
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

export async function startGateway(
  config: GatewayConfig,
  options: StartOptions = {},
): Promise<RunningGateway> {
  const report = options.onError ?? (() => {});
  const ledger = config.ledger.enabled ? Ledger.open(config.ledger.path) : undefined;
  const callLog = config.logs.enabled
    ? new CallLog({
        dir: config.logs.dir,
        server: options.name ?? 'gateway',
        // Files and latest link are this instance's, so gateways sharing the folder keep apart.
        instance: config.logs.instance ?? instanceName(),
        includeArguments: config.logs.includeArguments,
      })
    : undefined;
  const enforcement = new Enforcement({
    upstreams: config.upstreams,
    ...(config.tiers ? { tiers: config.tiers } : {}),
    ids: createIdSource(config.ids.seed),
    ledger,
    callLog,
    version: GATEWAY_VERSION,
    onError: report,
  });
  const status = new UpstreamStatusBoard(config.upstreams.map((upstream) => upstream.name));
  const gatewayOptions = (transport: 'stdio' | 'http', route: string | null): GatewayOptions => ({
    upstreams: config.upstreams.map((upstream) => ({
      ...upstreamSpec(upstream),
      sharing: upstream.sharing,
      options: upstreamOptions(upstream),
    })),
    toolCallHandler: enforcement.handler(transport, route),
    outputSchemaFor: (_tool, upstream) => enforcement.outputSchemaFor(upstream),
    serverInfo:
      config.upstreams.length > 1 ? { name: 'mcp-envelope-gateway', version: GATEWAY_VERSION } : undefined,
    report,
    status,
  });

  let http: HttpGateway | undefined;
  let stdio: StdioGateway | undefined;
  const closeAll = async () => {
    await Promise.allSettled([http?.close(), stdio?.close()]);
    enforcement.flush();
    await callLog?.close();
    ledger?.close();
  };
  try {
    const listen = config.listen.http;
    if (listen) {
      http = await startHttpGateway({
        gateway: gatewayOptions('http', listen.path),
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
        tokens: config.auth.tokens.map(({ token, tier }) => ({ token, tier })),
        authRequired: config.auth.required,
        path: listen.path,
        mode: config.upstreams.map((upstream) => `${upstream.name}: ${upstream.dialect}`).join(', '),
        onError: report,
      });
    }
    if (config.listen.stdio) stdio = await serveGatewayOnStdio(gatewayOptions('stdio', null));
  } catch (error) {
    await closeAll();
    throw listenError(error, config);
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
    stdioClosed: stdio ? stdio.closed : new Promise<void>(() => {}),
    close: () => {
      closing ??= closeAll();
      return closing;
    },
  };
}
