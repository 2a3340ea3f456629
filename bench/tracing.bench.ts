/**
 * What tracing costs: calls/s of a 1 KB echo at 16 in flight through two
 * gateways started here, alike but for `telemetry` — one traces every call and
 * exports its spans over OTLP/HTTP to a receiver in this process, the other has
 * no telemetry (the default). Ledger and call log are off in both, so tracing
 * is weighed against the least the gateway does per call (with them on it also
 * reuses their report instead of building one). Rounds rotate between the
 * gateways so a drift of the machine weighs on all; the medians are compared.
 * With TRACING_BENCH_BASELINE naming the root of another built checkout (the
 * commit before telemetry existed), its gateway runs beside them as a third
 * peer, so what "off" costs against no telemetry code at all is measured too.
 * Besides calls/s, each gateway process's own CPU time per call is read from
 * /proc, which a machine loaded by others disturbs far less than throughput.
 * Run: node bench/tracing.bench.ts (after npm run build)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { quantile, waitForLine } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const NODE = process.execPath;
const UPSTREAM = fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url));
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));

const WARMUP = 2000;
const ROUNDS = 8;
const CALLS_PER_ROUND = 2000;
const IN_FLIGHT = 16;
const PAYLOAD = 'x'.repeat(1024);
/** Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times. */
const TICKS_PER_SECOND = 100;

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

/** The CPU time a process has used so far (user and system), in milliseconds, from /proc (Linux). */
function cpuMsOf(pid: number): number {
  // Fields after the command (which may hold spaces) start at its closing parenthesis: utime is the 12th, stime the 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
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

async function callsPerSecond(client: Client, total: number): Promise<number> {
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < total) {
        issued++;
        await echo(client);
      }
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

const BASELINE = process.env.TRACING_BENCH_BASELINE;

try {
  const receiver = await startReceiver();
  const started = await Promise.all([
    startGateway('off', undefined),
    startGateway('on', { traces: { enabled: true }, otlp: { endpoint: receiver.url } }),
    ...(BASELINE ? [startGateway('baseline', undefined, join(BASELINE, 'bin/mcp-envelope'))] : []),
  ]);
  const peers: { client: Client; pid: number; rates: number[]; cpuMsPerCall: number[] }[] = [];
  for (const { url, pid } of started)
    peers.push({ client: await connect(url), pid, rates: [], cpuMsPerCall: [] });
  for (const peer of peers) await callsPerSecond(peer.client, WARMUP);
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate which goes first, so none always runs on a warmer machine.
    for (let turn = 0; turn < peers.length; turn++) {
      const peer = peers[(round + turn) % peers.length] as (typeof peers)[number];
      const cpuBefore = cpuMsOf(peer.pid);
      peer.rates.push(await callsPerSecond(peer.client, CALLS_PER_ROUND));
      peer.cpuMsPerCall.push((cpuMsOf(peer.pid) - cpuBefore) / CALLS_PER_ROUND);
    }
  }
  const median = (values: number[]) =>
    quantile(
      [...values].sort((a, b) => a - b),
      0.5,
    );
  const [offRate = Number.NaN, onRate = Number.NaN, baseRate] = peers.map((peer) => median(peer.rates));
  // The gateway process's own CPU per call: what telemetry adds there, whatever else loads the machine.
  const [offCpu = Number.NaN, onCpu = Number.NaN, baseCpu] = peers.map(
    (peer) => median(peer.cpuMsPerCall) * 1000,
  );
  const cost = (rate: number) =>
    `${(rate / offRate).toFixed(3)}  (cost ${((1 - rate / offRate) * 100).toFixed(1)}%)`;
  console.log(
    `tools/call of a 1 KB echo at ${IN_FLIGHT} in flight, median of ${ROUNDS} rounds of ${CALLS_PER_ROUND}:`,
  );
  console.log(`  telemetry off (default)        ${offRate.toFixed(0)} calls/s`);
  console.log(
    `  traces on, OTLP/HTTP export    ${onRate.toFixed(0)} calls/s  (${receiver.exports()} exports received)`,
  );
  console.log(`  on / off                       ${cost(onRate)}`);
  console.log(
    `  gateway CPU per call: off ${offCpu.toFixed(0)} µs, on ${onCpu.toFixed(0)} µs  (on / off ${(onCpu / offCpu).toFixed(3)})`,
  );
  if (baseRate !== undefined && baseCpu !== undefined) {
    console.log(
      `  before telemetry (baseline)    ${baseRate.toFixed(0)} calls/s, gateway CPU ${baseCpu.toFixed(0)} µs per call`,
    );
    console.log(
      `  off / baseline                 ${(offRate / baseRate).toFixed(3)} calls/s, ${(offCpu / baseCpu).toFixed(3)} CPU`,
    );
  }
  for (const peer of peers) await peer.client.close();
  receiver.close();
} finally {
  for (const child of children) child.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
