/**
 * mcp-envelope's HTTP gateway, the compiled dist/ the CLI runs, in passthrough
 * in front of one stdio upstream that its 2025-era sessions share (`shared`,
 * the default) or each start for themselves (`per-session`), for the sessions
 * benchmark: the CLI's configuration cannot ask for the latter yet. The
 * session caps are raised so that a hundred sessions of one client fit. Not a
 * product; only the benchmark starts it.
 * Run: node bench/peers/session-gateway.ts PORT shared|per-session -- COMMAND [ARGS...]
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Server from '../../src/gateway/http/server.ts';
import type * as Fleet from '../../src/gateway/relay/upstream-fleet.ts';

const [portText, sharing, separator, command, ...args] = process.argv.slice(2);
if (separator !== '--' || !command || (sharing !== 'shared' && sharing !== 'per-session'))
  throw new Error('usage: session-gateway.ts PORT shared|per-session -- COMMAND [ARGS...]');

const compiled = (path: string) =>
  pathToFileURL(fileURLToPath(new URL(`../../dist/gateway/${path}`, import.meta.url))).href;
const { startHttpGateway } = (await import(compiled('http/server.js'))) as typeof Server;
const { UpstreamFleet } = (await import(compiled('relay/upstream-fleet.js'))) as typeof Fleet;
const gateway = await startHttpGateway({
  fleet: new UpstreamFleet({
    upstreams: [{ name: 'upstream', kind: 'stdio', command, args, sharing }],
    // Processes booting side by side on a small machine can take longer than the usual 15 s.
    upstream: { startTimeoutMs: 60_000 },
  }),
  port: Number(portText),
  maxSessions: 1000,
  maxSessionsPerPrincipal: 1000,
});
await gateway.ready;
process.stderr.write(`listening on ${gateway.url}\n`);
process.once('SIGTERM', () => {
  void gateway.close().finally(() => process.exit(0));
});
