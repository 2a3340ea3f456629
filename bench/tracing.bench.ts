/**
 * What tracing costs: calls/s of a 1 KB echo at 16 in flight through
 * gateways started here, alike but for `telemetry` — "on" traces every call and
 * exports its spans over OTLP/HTTP to a receiver in this process, "off" and
 * "off-2" have no telemetry (the default). Ledger and call log are off in all,
 * so tracing is weighed against the least the gateway does per call (with them
 * on it also reuses their report instead of building one).
 *
 * A loaded machine moves calls/s by tens of percent between two identical
 * runs, so the figures are made to show their own noise: rounds alternate
 * between the gateways (rotated, and reversed every other round), each round's
 * figure is divided by the same round's "off", and the median and middle half
 * of those ratios are printed — off-2 / off is what two identical gateways
 * differ by now, against which on / off is read. Besides calls/s, each gateway
 * process's own CPU time per call is read from /proc/<pid>/stat (utime+stime)
 * before and after its round, which load from others disturbs far less.
 * With TRACING_BENCH_BASELINE naming the root of another built checkout (the
 * commit before telemetry existed), its gateway runs beside them as one more
 * peer, so what "off" costs against no telemetry code at all is measured too.
 * With TRACING_BENCH_OTHER naming another built checkout, its gateway runs
 * traced too ("on-other"), so two versions of tracing are weighed in one run.
 * TRACING_BENCH_ROUNDS (16) and TRACING_BENCH_CALLS (2000 a round) size it;
 * TRACING_BENCH_TELEMETRY adds members to the traced gateway's `telemetry`.
 * Run: node bench/tracing.bench.ts (after npm run build)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { callsPerSecond, cpuMs, quantile, waitForLine } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const NODE = process.execPath;
const UPSTREAM = fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url));
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));

const WARMUP = 2000;
const ROUNDS = Number(process.env.TRACING_BENCH_ROUNDS ?? 16);
const CALLS_PER_ROUND = Number(process.env.TRACING_BENCH_CALLS ?? 2000);
/** More of the traced gateway's `telemetry` as JSON (TRACING_BENCH_TELEMETRY), to weigh a setting. */
const TRACED_EXTRA = JSON.parse(process.env.TRACING_BENCH_TELEMETRY ?? '{}') as Record<string, unknown>;
const IN_FLIGHT = 16;
const PAYLOAD = 'x'.repeat(1024);

const children: ChildProcess[] = [];
const work = mkdtempSync(join(tmpdir(), 'tracing-bench-'));

/** An OTLP/HTTP receiver that reads and drops what it is sent, counting spans' exports. */
async function startReceiver(): Promise<{ url: string; exports: () => number; close: () => void }> {
  let exports = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/v1/traces') exports++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports: () => exports,
    close: () => server.close(),
  };
}

async function startGateway(
  name: string,
  telemetry: unknown,
  gateway = GATEWAY,
): Promise<{ url: string; pid: number }> {
  const file = join(work, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      upstreams: [{ name: 'everything', stdio: { command: NODE, args: [UPSTREAM] } }],
      listen: { stdio: false, http: { host: '127.0.0.1', port: 0 } },
      ledger: { enabled: false },
      logs: { enabled: false },
      ...(telemetry ? { telemetry } : {}),
    }),
  );
  const child = spawn(NODE, [gateway, 'gateway', '--config', file], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const [, url] = await waitForLine(child, /^Streamable HTTP: (http:\/\/\S+)$/m, name);
  child.stderr?.resume();
  return { url: url as string, pid: child.pid as number };
}

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function echo(client: Client): Promise<void> {
  const result = await client.callTool({ name: 'echo', arguments: { text: PAYLOAD } });
  const text = (result.content as { text?: string }[])[0]?.text;
  if (!text?.includes(PAYLOAD)) throw new Error('echo came back wrong');
}

const BASELINE = process.env.TRACING_BENCH_BASELINE;
/** Another built checkout whose gateway runs traced beside this one's ("on-other"), for a before/after of tracing's cost. */
const OTHER = process.env.TRACING_BENCH_OTHER;

interface Peer {
  name: string;
  client: Client;
  pid: number;
  rates: number[];
  cpuUsPerCall: number[];
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const median = (values: number[]) => quantile(sorted(values), 0.5);
/** Median and the range of the middle half (25th–75th percentile) of `values`. */
function spread(values: number[], digits = 3): string {
  const ordered = sorted(values);
  return `${quantile(ordered, 0.5).toFixed(digits)} [${quantile(ordered, 0.25).toFixed(digits)}–${quantile(ordered, 0.75).toFixed(digits)}]`;
}
/** Per round, `peer`'s figure over the first "off" peer's figure of the same round. */
const ratios = (peer: Peer, off: Peer, figure: 'rates' | 'cpuUsPerCall') =>
  peer[figure].map((value, round) => value / (off[figure][round] as number));

try {
  const receiver = await startReceiver();
  const plainTraced = { traces: { enabled: true }, otlp: { endpoint: receiver.url } };
  const traced = { ...plainTraced, ...TRACED_EXTRA };
  const specs: [string, unknown, string?][] = [
    ['off', undefined],
    // A second gateway alike to the first: how far two identical gateways differ on this machine now.
    ['off-2', undefined],
    ['on', traced],
    ...(BASELINE
      ? [['baseline', undefined, join(BASELINE, 'bin/mcp-envelope')] as [string, unknown, string]]
      : []),
    ...(OTHER
      ? [['on-other', plainTraced, join(OTHER, 'bin/mcp-envelope')] as [string, unknown, string]]
      : []),
  ];
  const started = await Promise.all(
    specs.map(([name, telemetry, gateway]) => startGateway(name, telemetry, gateway)),
  );
  const peers: Peer[] = [];
  for (const [index, { url, pid }] of started.entries())
    peers.push({
      name: specs[index]?.[0] as string,
      client: await connect(url),
      pid,
      rates: [],
      cpuUsPerCall: [],
    });
  for (const peer of peers) await callsPerSecond(() => echo(peer.client), WARMUP, IN_FLIGHT);
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate which goes first, and reverse the order every other round, so none always runs on a warmer machine.
    const order = peers.map((_, turn) => peers[(round + turn) % peers.length] as Peer);
    if (round % 2 === 1) order.reverse();
    for (const peer of order) {
      const cpuBefore = cpuMs(peer.pid) ?? Number.NaN;
      peer.rates.push(await callsPerSecond(() => echo(peer.client), CALLS_PER_ROUND, IN_FLIGHT));
      peer.cpuUsPerCall.push((((cpuMs(peer.pid) ?? Number.NaN) - cpuBefore) * 1000) / CALLS_PER_ROUND);
    }
  }
  const [off, off2, on] = peers as [Peer, Peer, Peer];
  const base = peers.find((peer) => peer.name === 'baseline');
  const other = peers.find((peer) => peer.name === 'on-other');
  console.log(
    `tools/call of a 1 KB echo at ${IN_FLIGHT} in flight, ${ROUNDS} alternating rounds of ${CALLS_PER_ROUND} (median [25th–75th percentile]):`,
  );
  for (const peer of peers)
    console.log(
      `  ${peer.name.padEnd(9)} ${spread(peer.rates, 0)} calls/s   gateway CPU ${spread(peer.cpuUsPerCall, 0)} µs per call`,
    );
  console.log(
    `  (${receiver.exports()} span exports received; CPU from /proc/<pid>/stat utime+stime, 10 ms ticks)`,
  );
  console.log('  per-round ratios against "off":');
  console.log(
    `    off-2 / off   calls/s ${spread(ratios(off2, off, 'rates'))}   CPU ${spread(ratios(off2, off, 'cpuUsPerCall'))}`,
  );
  console.log(
    `    on / off      calls/s ${spread(ratios(on, off, 'rates'))}   CPU ${spread(ratios(on, off, 'cpuUsPerCall'))}`,
  );
  const onCost = (1 - median(ratios(on, off, 'rates'))) * 100;
  const cpuCost = (median(ratios(on, off, 'cpuUsPerCall')) - 1) * 100;
  console.log(
    `  tracing costs ${onCost.toFixed(1)}% of calls/s and ${cpuCost.toFixed(1)}% more gateway CPU per call`,
  );
  if (other)
    console.log(
      `    on-other / off calls/s ${spread(ratios(other, off, 'rates'))}   CPU ${spread(ratios(other, off, 'cpuUsPerCall'))}`,
    );
  if (base)
    console.log(
      `    off / baseline calls/s ${spread(ratios(off, base, 'rates'))}   CPU ${spread(ratios(off, base, 'cpuUsPerCall'))}`,
    );
  for (const peer of peers) await peer.client.close();
  receiver.close();
} finally {
  for (const child of children) child.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
