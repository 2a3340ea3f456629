import { basename } from 'node:path';
import { EnvelopeError } from '../../errors/index.ts';
import { CONFIG_DEFAULTS, type UpstreamProtocol } from '../../gateway/defaults.ts';
import { UPSTREAM_DIALECTS } from '../../gateway/operations/config.ts';
import { type Registrar, runs } from '../command.ts';
import { EXIT } from '../output.ts';
import { exitSoon, stopRequested } from '../stop-signals.ts';
import { parseListen } from './listen.ts';

interface ProxyOptions {
  dialect: string;
  protocol: string;
  http?: string;
  stdio?: boolean;
  deterministicIds?: string;
  timeout: string;
  token?: string[];
  allowHost?: string[];
  allowOrigin?: string[];
  maxBody?: string;
  name?: string;
  logs?: string;
  ledger?: string;
  artifacts?: string;
  invalidInput: string;
  env?: string[];
}

function positiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new EnvelopeError('USAGE_ERROR', `${flag} wants a positive integer`);
  return n;
}

/**
 * `TOKEN` or `TOKEN=TIER`; a bare token gets the `default` tier. A value
 * ending in `=` names no tier: refused here, where the flag can be named (a
 * token that itself ends in `=`, as base64 may, takes an explicit tier).
 */
function parseToken(value: string): { token: string; tier: string } {
  const at = value.lastIndexOf('=');
  if (at > 0 && at === value.length - 1) {
    throw new EnvelopeError(
      'USAGE_ERROR',
      '--token TOKEN=TIER has nothing after "=": give --token TOKEN for the default tier, or name the tier (a token ending in "=" takes one too: --token TOKEN==default)',
    );
  }
  return at > 0
    ? { token: value.slice(0, at), tier: value.slice(at + 1) }
    : { token: value, tier: 'default' };
}

/**
 * `--env NAME=VALUE`, or `--env NAME` for the proxy's own value: the upstream
 * gets these over the safe base, and nothing else of the proxy's environment.
 */
export function upstreamEnv(entries: readonly string[], env: NodeJS.ProcessEnv): Record<string, string> {
  const result: Record<string, string> = {};
  for (const entry of entries) {
    const at = entry.indexOf('=');
    const name = at >= 0 ? entry.slice(0, at) : entry;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new EnvelopeError('USAGE_ERROR', `--env wants NAME or NAME=VALUE; got ${entry}`);
    const value = at >= 0 ? entry.slice(at + 1) : env[name];
    if (value === undefined)
      throw new EnvelopeError('USAGE_ERROR', `--env ${name}: ${name} is not set in this environment`);
    result[name] = value;
  }
  return result;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Commands that run a program named by their first argument that is not an option. */
const INTERPRETERS = new Set([
  'node',
  'nodejs',
  'python',
  'python3',
  'deno',
  'bun',
  'ruby',
  'perl',
  'php',
  'java',
  'uv',
  'uvx',
  'npx',
  'tsx',
]);

/**
 * The upstream's name for logs and records: the command's base name, or for an
 * interpreter (`node server.ts`, `python3 -m pkg`) the program it runs, without
 * its extension; made safe as a folder name.
 */
export function upstreamName(command: string, args: readonly string[] = []): string {
  let base = basename(command).replace(/\.exe$/i, '');
  if (INTERPRETERS.has(base)) {
    const moduleFlag = args.indexOf('-m');
    const program = moduleFlag >= 0 ? args[moduleFlag + 1] : args.find((arg) => !arg.startsWith('-'));
    if (program) base = basename(program).replace(/\.(?:[cm]?[jt]s|py|rb|pl|php|jar)$/i, '');
  }
  const safe = base.replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return safe.slice(0, 64) || 'upstream';
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
    .option(
      '--protocol <revision>',
      'the protocol revision spoken to the upstream: auto (the newest it speaks), 2025-11-25 or 2026-07-28',
      CONFIG_DEFAULTS.upstream.protocol,
    )
    .option('--http <host:port>', 'serve Streamable HTTP at http://HOST:PORT/mcp')
    .option('--stdio', 'serve on stdio (the default without --http; with --http, serve both)')
    .option('--deterministic-ids <seed>', 'derive run and request ids from SEED (reproducible output)')
    .option(
      '--timeout <ms>',
      'per-call timeout for the upstream',
      String(CONFIG_DEFAULTS.upstream.timeouts.callMs),
    )
    .option('--token <token[=tier]>', 'accept this bearer token on HTTP (repeatable)', collect)
    .option('--allow-host <name>', 'accept this Host besides loopback (repeatable)', collect)
    .option('--allow-origin <origin>', 'accept this Origin besides loopback (repeatable)', collect)
    .option(
      '--max-body <bytes>',
      'largest HTTP request body',
      String(CONFIG_DEFAULTS.listen.http.bodyLimitBytes),
    )
    .option('--name <name>', "the upstream's name in logs and records (default: the command's base name)")
    .option('--logs <dir>', 'write one JSON line per tools/call under DIR/<name>/<date>/')
    .option(
      '--invalid-input <form>',
      'answer arguments that break the input schema as an error envelope (result) or a JSON-RPC error -32602 (jsonrpc-error)',
      'result',
    )
    .option('--ledger <file>', 'store provenance records in this SQLite file')
    .option(
      '--artifacts <dir>',
      'keep files from tool results in DIR, handed out as download links, inline or as resources as each caller asks (return_mode)',
    )
    .option(
      '--env <name[=value]>',
      "give the upstream this variable, NAME=VALUE or NAME for this process's own (repeatable); otherwise it inherits only a safe base (PATH, HOME, locale, temp dir, TLS trust settings)",
      collect,
    )
    .action(
      runs(invocation, async ({ io }, command: string, args: string[], options: ProxyOptions) => {
        if (!(UPSTREAM_DIALECTS as readonly string[]).includes(options.dialect)) {
          throw new EnvelopeError(
            'USAGE_ERROR',
            `--dialect wants one of ${UPSTREAM_DIALECTS.join(', ')}; got ${options.dialect}`,
          );
        }
        const name = options.name ?? upstreamName(command, args);
        const listen = options.http ? parseListen(options.http) : undefined;
        // A proxy is a gateway with one upstream: the same configuration, checked the same way.
        const { resolveGatewayConfig } = await import('../../gateway/operations/config.ts');
        const { startGateway } = await import('../../gateway/start.ts');
        const config = resolveGatewayConfig(
          {
            upstreams: [
              {
                name,
                stdio: { command, args, cwd: io.cwd, env: upstreamEnv(options.env ?? [], io.env) },
                dialect: options.dialect,
                protocol: options.protocol as UpstreamProtocol,
                timeouts: { callMs: positiveInt(options.timeout, '--timeout') },
                validation: { invalidInput: options.invalidInput },
              },
            ],
            listen: {
              stdio: options.stdio === true || !listen,
              ...(listen && {
                http: {
                  host: listen.host,
                  port: listen.port,
                  bodyLimitBytes: positiveInt(options.maxBody ?? '', '--max-body'),
                  ...(options.allowHost && { allowedHosts: options.allowHost }),
                  ...(options.allowOrigin && { allowedOrigins: options.allowOrigin }),
                },
              }),
            },
            auth: {
              tokens: (options.token ?? []).map(parseToken).map((grant, index) => ({
                name: `token-${index + 1}`,
                ...grant,
              })),
            },
            ledger: options.ledger ? { path: options.ledger } : { enabled: false },
            artifacts: options.artifacts ? { dir: options.artifacts } : { enabled: false },
            logs: options.logs ? { dir: options.logs } : { enabled: false },
            ids: options.deterministicIds === undefined ? {} : { seed: options.deterministicIds },
          },
          io.cwd,
        );
        const stop = stopRequested();
        try {
          const running = await Promise.race([
            startGateway(config, {
              name,
              onError: (error) =>
                io.stderr(`gateway: ${error instanceof Error ? error.message : String(error)}\n`),
            }),
            stop.requested,
          ]);
          // Stopped while starting: the upstreams being started die with the process ('exit' kills their groups).
          if (!running) process.exit(EXIT.ok);
          if (running.http) io.stderr(`mcp-envelope proxy: listening on ${running.http.url}\n`);
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
