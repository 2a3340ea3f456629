import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnvelopeError } from '../../errors/index.ts';
import type { GatewayConfig } from '../../gateway/operations/config.ts';
import type { RunningGateway } from '../../gateway/start.ts';
import { type Registrar, runs } from '../command.ts';
import { EXIT } from '../output.ts';
import { noting, replaceWithout, takeHandedOver } from '../secret-handover.ts';
import { exitSoon, stopRequested } from '../stop-signals.ts';
import { parseListen } from './listen.ts';

interface GatewayFlags {
  config: string;
  /** false with --no-http. */
  http?: string | false;
  stdio?: boolean;
  deterministicIds?: string;
}

const LAUNCHER = fileURLToPath(new URL('../../../bin/mcp-envelope', import.meta.url));

/** How to reach the running gateway: the URL and an MCP client configuration for stdio. */
export function connectionHelp(config: GatewayConfig, running: RunningGateway): string {
  const down = running.status.all().filter(({ status }) => status.state !== 'ready');
  const lines = [
    down.length === 0
      ? 'mcp-envelope gateway is running.'
      : `mcp-envelope gateway is running, degraded: ${down.length} of ${config.upstreams.length} upstreams not ready.`,
  ];
  for (const upstream of config.upstreams) {
    const status = running.status.get(upstream.name);
    const state =
      status.state === 'ready'
        ? 'ready'
        : status.state === 'gave_up'
          ? `DOWN for good: ${status.reason ?? 'it did not start'}`
          : `NOT READY, retrying: ${status.reason ?? 'it did not start'}`;
    lines.push(`  upstream ${upstream.name} (${upstream.dialect}): ${state}`);
    for (const line of status.stderr ?? []) lines.push(`    stderr: ${line}`);
  }
  if (running.http)
    lines.push(
      '',
      `Streamable HTTP: ${running.http.url}`,
      `Info page:       ${running.http.url} (in a browser)`,
    );
  if (config.ledger.enabled) {
    lines.push(`Ledger:          ${config.ledger.path}`);
    // Its pages are served on the HTTP listener, beside the MCP path.
    if (running.http)
      lines.push(`Ledger pages:    ${new URL('/ledger', running.http.url).href} (in a browser)`);
  }
  if (running.callLog) lines.push(`Call log:        ${running.callLog.latest}`);
  const snippet = {
    mcpServers: {
      'mcp-envelope': {
        command: process.execPath,
        args: [LAUNCHER, 'gateway', '--config', config.file ?? 'gateway.config.json', '--stdio', '--no-http'],
      },
    },
  };
  lines.push('', 'MCP client configuration (stdio):', JSON.stringify(snippet, null, 2));
  if (running.http) {
    lines.push(
      '',
      'MCP client configuration (HTTP):',
      JSON.stringify({ mcpServers: { 'mcp-envelope': { url: running.http.url } } }, null, 2),
    );
  }
  return `${lines.join('\n')}\n`;
}

export const registerGateway: Registrar = (program, invocation) => {
  program
    .command('gateway')
    .description('front the upstream MCP servers of a configuration file and enforce the envelope contract')
    .requiredOption('--config <file>', 'the gateway configuration (see docs/gateway-config.md)')
    .option('--http <host:port>', 'serve Streamable HTTP here instead of the configured address')
    .option('--no-http', 'do not serve HTTP even when the configuration says so')
    .option('--stdio', 'serve MCP on stdio as well')
    .option('--no-stdio', 'do not serve stdio even when the configuration says so')
    .option('--deterministic-ids <seed>', 'derive run and request ids from SEED (reproducible output)')
    .action(
      runs(invocation, async ({ io }, flags: GatewayFlags) => {
        // Loaded here, not at the top: the MCP SDK is only needed by the commands that serve.
        const { httpListen, loadGatewayConfig } = await import('../../gateway/operations/config.ts');
        const { startGateway } = await import('../../gateway/start.ts');
        // Secrets read from the environment leave it: the process replaces itself without them.
        const handed = takeHandedOver(io.env);
        const noted = noting({ ...io.env, ...handed });
        const config = loadGatewayConfig(resolve(io.cwd, flags.config), { env: noted.env });
        const secrets = [...noted.read].filter(
          (name) => !name.startsWith('MCP_ENVELOPE_') && io.env[name] !== undefined,
        );
        if (secrets.length > 0 && io.ownProcess) replaceWithout(secrets, io.env);
        if (flags.http === false) config.listen.http = undefined;
        else if (typeof flags.http === 'string') {
          const { host, port } = parseListen(flags.http);
          // Only the address changes: the configured listener's other settings, or their defaults, stay.
          config.listen.http = httpListen({ ...config.listen.http, host, port });
        }
        if (flags.stdio !== undefined) config.listen.stdio = flags.stdio;
        if (flags.deterministicIds !== undefined) config.ids.seed = flags.deterministicIds;
        if (!config.listen.stdio && !config.listen.http) {
          throw new EnvelopeError(
            'USAGE_ERROR',
            'Nothing to serve: enable stdio or HTTP (--stdio, --http HOST:PORT)',
          );
        }
        const stop = stopRequested();
        try {
          const running = await Promise.race([
            startGateway(config, {
              onError: (error) =>
                io.stderr(`gateway: ${error instanceof Error ? error.message : String(error)}\n`),
            }),
            stop.requested,
          ]);
          // Stopped while starting: the upstreams being started die with the process ('exit' kills their groups).
          if (!running) process.exit(EXIT.ok);
          io.stderr(connectionHelp(config, running));
          await Promise.race([running.stdioClosed, stop.requested]);
          await running.close();
        } finally {
          stop.dispose();
        }
        exitSoon();
        return { exitCode: EXIT.ok };
      }),
    );
};
