import { basename } from 'node:path';
import { EnvelopeError } from '../../errors/index.ts';
import { UPSTREAM_DIALECTS, type UpstreamDialect } from '../../gateway/config.ts';
import { envelopeMode } from '../../gateway/envelope-mode.ts';
import { startHttpGateway } from '../../gateway/http.ts';
import type { GatewayOptions } from '../../gateway/session.ts';
import { serveGatewayOnStdio } from '../../gateway/stdio.ts';
import { type Registrar, runs } from '../command.ts';
import { EXIT } from '../output.ts';

interface ProxyOptions {
  dialect: string;
  http?: string;
  stdio?: boolean;
  deterministicIds?: string;
  timeout: string;
  token?: string[];
  allowHost?: string[];
  allowOrigin?: string[];
  maxBody?: string;
}

function parseListen(value: string): { host: string; port: number } {
  const at = value.lastIndexOf(':');
  const host = at > 0 ? value.slice(0, at).replace(/^\[(.*)\]$/, '$1') : '127.0.0.1';
  const port = Number(at >= 0 ? value.slice(at + 1) : value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new EnvelopeError('USAGE_ERROR', `--http wants HOST:PORT, got ${value}`);
  }
  return { host, port };
}

function positiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new EnvelopeError('USAGE_ERROR', `${flag} wants a positive integer`);
  return n;
}

/** `TOKEN` or `TOKEN=TIER`; a bare token gets the `default` tier. */
function parseToken(value: string): { token: string; tier: string } {
  const at = value.lastIndexOf('=');
  return at > 0
    ? { token: value.slice(0, at), tier: value.slice(at + 1) }
    : { token: value, tier: 'default' };
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

export const registerProxy: Registrar = (program, invocation) => {
  program
    .command('proxy')
    .description(
      'front one stdio MCP server: serve it on stdio (default) and/or Streamable HTTP at /mcp, every MCP feature relayed',
    )
    .argument('<command>', 'the upstream server command (after --)')
    .argument('[args...]', 'its arguments')
    .option('--dialect <dialect>', 'envelope dialect for tool results, or passthrough', 'passthrough')
    .option('--http <host:port>', 'serve Streamable HTTP at http://HOST:PORT/mcp')
    .option('--stdio', 'serve on stdio (the default without --http; with --http, serve both)')
    .option('--deterministic-ids <seed>', 'derive run and request ids from SEED (reproducible output)')
    .option('--timeout <ms>', 'per-call timeout for the upstream', '60000')
    .option('--token <token[=tier]>', 'accept this bearer token on HTTP (repeatable)', collect)
    .option('--allow-host <name>', 'accept this Host besides loopback (repeatable)', collect)
    .option('--allow-origin <origin>', 'accept this Origin besides loopback (repeatable)', collect)
    .option('--max-body <bytes>', 'largest HTTP request body', String(4 * 1024 * 1024))
    .action(
      runs(invocation, async ({ io }, command: string, args: string[], options: ProxyOptions) => {
        const dialect = options.dialect as UpstreamDialect;
        if (!(UPSTREAM_DIALECTS as readonly string[]).includes(dialect)) {
          throw new EnvelopeError(
            'USAGE_ERROR',
            `--dialect wants one of ${UPSTREAM_DIALECTS.join(', ')}; got ${options.dialect}`,
          );
        }
        const timeoutMs = positiveInt(options.timeout, '--timeout');
        const gateway: GatewayOptions = {
          upstreams: [{ name: basename(command), kind: 'stdio', command, args, cwd: io.cwd }],
          upstream: { timeoutMs },
          ...(dialect === 'passthrough'
            ? {}
            : envelopeMode({
                dialect,
                deterministicIdsSeed: options.deterministicIds,
                adapter: 'mcp-envelope-gateway',
              })),
        };
        const listen = options.http ? parseListen(options.http) : undefined;
        const serveStdio = options.stdio === true || !listen;
        const closers: (() => Promise<void>)[] = [];
        let done: Promise<void>;
        if (listen) {
          const http = await startHttpGateway({
            gateway,
            host: listen.host,
            port: listen.port,
            tokens: (options.token ?? []).map(parseToken),
            allowedHosts: options.allowHost,
            allowedOrigins: options.allowOrigin,
            maxBodyBytes: positiveInt(options.maxBody ?? '', '--max-body'),
            mode: options.dialect,
            onError: (error) =>
              io.stderr(`gateway: ${error instanceof Error ? error.message : String(error)}\n`),
          });
          closers.push(() => http.close());
          io.stderr(`mcp-envelope proxy: listening on ${http.url}\n`);
        }
        if (serveStdio) {
          const stdio = await serveGatewayOnStdio(gateway);
          closers.push(() => stdio.close());
          done = Promise.race([stdio.closed, waitForSignal()]);
        } else {
          done = waitForSignal();
        }
        await done;
        await Promise.all(closers.map((close) => close()));
        return { exitCode: EXIT.ok };
      }),
    );
};
