/**
 * Gateway round trip: tools/call of a 1 KB echo through the gateway, next to
 * the same upstream called directly (stdio) and behind two other bridges over
 * Streamable HTTP (supergateway --stateful, mcp-proxy), all started here on
 * 127.0.0.1. A bare forwarder (bench/peers/bare-forwarder.ts: body to stdin,
 * answer back as JSON, no MCP work at all) shows the floor any HTTP bridge to
 * a stdio server stands on with this client; a canned answer
 * (bench/peers/canned-answer.ts: the HTTP server answers itself, no upstream)
 * shows what the client and one loopback exchange cost alone. Then one
 * 10 MB result over stdio, direct and through the proxy, and peak RSS of the
 * HTTP front process with 100 KB results.
 * Run: node bench/gateway.bench.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { callsPerSecond, freePort, quantile } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const NODE = process.execPath;
const UPSTREAM = [fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url))];
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));
const SUPERGATEWAY = `${root}node_modules/supergateway/dist/index.js`;
const MCP_PROXY = `${root}node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs`;
const BARE_FORWARDER = fileURLToPath(new URL('./peers/bare-forwarder.ts', import.meta.url));
const CANNED_ANSWER = fileURLToPath(new URL('./peers/canned-answer.ts', import.meta.url));

const WARMUP = 2000;
const SEQUENTIAL = 2000;
const ROUNDS = 10;
const CONCURRENT_TOTAL = 3000;
const IN_FLIGHT = 16;
const RSS_CALLS = 400;
const PAYLOAD = 'x'.repeat(1024);
const LARGE_RESULT = 10_000_000;
const LARGE_CALLS = 5;

interface Figures {
  p50: number;
  p99: number;
  callsPerSecond: number;
}

const children: ChildProcess[] = [];

function start(args: string[]): ChildProcess {
  const child = spawn(NODE, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.resume();
  children.push(child);
  return child;
}

/** Connects an SDK client over HTTP, retrying (bounded) while the server starts. */
async function httpClient(url: string): Promise<Client> {
  let last: unknown;
  for (let attempt = 0; attempt < 100; attempt++) {
    const client = new Client({ name: 'bench', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      return client;
    } catch (error) {
      last = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`could not connect to ${url}: ${String(last)}`);
}

async function stdioClient(command: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: NODE, args: command, cwd: root }));
  return client;
}

async function echo(client: Client): Promise<void> {
  const result = await client.callTool({ name: 'echo', arguments: { text: PAYLOAD } });
  const text = (result.content as { text?: string }[])[0]?.text;
  // Passthrough returns the text itself; envelope mode the envelope's JSON holding it.
  if (!text?.includes(PAYLOAD)) throw new Error('echo came back wrong');
}

/**
 * p50/p99 of sequential calls, and calls/s at IN_FLIGHT, for each client. Every
 * client is first warmed to a steady state (the JIT of each process in the
 * chain has seen the path), then the sequential calls run in ROUNDS that take
 * the clients in turn, so a drift of the machine during the run weighs on all
 * of them alike instead of on whichever came last.
 */
async function measure(clients: Client[]): Promise<Figures[]> {
  for (const client of clients) for (let i = 0; i < WARMUP; i++) await echo(client);
  const latencies = clients.map((): number[] => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, client] of clients.entries()) {
      for (let i = 0; i < SEQUENTIAL / ROUNDS; i++) {
        const started = performance.now();
        await echo(client);
        latencies[index]?.push(performance.now() - started);
      }
    }
  }
  const figures: Figures[] = [];
  for (const [index, client] of clients.entries()) {
    const sorted = (latencies[index] ?? []).sort((a, b) => a - b);
    figures.push({
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      callsPerSecond: await callsPerSecond(() => echo(client), CONCURRENT_TOTAL, IN_FLIGHT),
    });
  }
  return figures;
}

/** Median time of a call whose result is LARGE_RESULT bytes of text: what reading long lines costs. */
async function largeResultMs(client: Client): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < LARGE_CALLS; i++) {
    const started = performance.now();
    await client.callTool({ name: 'blob', arguments: { bytes: LARGE_RESULT } }, { timeout: 120_000 });
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(LARGE_CALLS / 2)] ?? Number.NaN;
}

/** Peak resident set of a process, from /proc (Linux), in MiB. */
function peakRssMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
    return kb / 1024;
  } catch {
    return Number.NaN;
  }
}

async function bigResults(client: Client): Promise<void> {
  let issued = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < RSS_CALLS) {
        issued++;
        await client.callTool({ name: 'blob', arguments: { bytes: 100_000 } });
      }
    }),
  );
}

function row(label: string, figures: Figures): string {
  return `${label.padEnd(34)} p50 ${figures.p50.toFixed(3).padStart(7)} ms   p99 ${figures.p99
    .toFixed(3)
    .padStart(7)} ms   ${figures.callsPerSecond.toFixed(0).padStart(6)} calls/s @${IN_FLIGHT}`;
}

function ratio(label: string, ours: Figures, peer: Figures): string {
  return `${label.padEnd(34)} p50 x${(ours.p50 / peer.p50).toFixed(2)}   calls/s x${(
    ours.callsPerSecond / peer.callsPerSecond
  ).toFixed(2)}`;
}

async function main(): Promise<void> {
  console.log(
    `tools/call, ${PAYLOAD.length} B echo; after ${WARMUP} warm-up calls each, ${SEQUENTIAL} sequential ` +
      `(${ROUNDS} rounds taking the clients in turn), then ${CONCURRENT_TOTAL} at ${IN_FLIGHT} in flight`,
  );

  const direct = await stdioClient(UPSTREAM);
  const bareStdioClient = await stdioClient([BARE_FORWARDER, 'stdio', '--', NODE, ...UPSTREAM]);
  const viaStdio = await stdioClient([GATEWAY, 'proxy', '--', NODE, ...UPSTREAM]);
  // Envelope mode: every result validated, wrapped as mcp.envelope.v0.1 and carried twice.
  const viaEnvelope = await stdioClient([
    GATEWAY,
    'proxy',
    '--dialect',
    'prov-v0.1',
    '--',
    NODE,
    ...UPSTREAM,
  ]);
  const stdioClients = [direct, bareStdioClient, viaStdio, viaEnvelope];
  const [directFigures, bareStdio, gatewayStdio, envelopeStdio] = (await measure(stdioClients)) as [
    Figures,
    Figures,
    Figures,
    Figures,
  ];
  const [directLarge, gatewayLarge] = [await largeResultMs(direct), await largeResultMs(viaStdio)];
  await Promise.all(stdioClients.map((client) => client.close()));
  console.log(row('stdio, direct to upstream', directFigures));
  console.log(row('stdio, bare forwarder (floor)', bareStdio));
  console.log(row('stdio, through mcp-envelope proxy', gatewayStdio));
  console.log(row('stdio, proxy --dialect prov-v0.1', envelopeStdio));
  console.log(
    `stdio, one ${LARGE_RESULT / 1_000_000} MB result (median of ${LARGE_CALLS}): direct ${directLarge.toFixed(0)} ms, ` +
      `through the proxy ${gatewayLarge.toFixed(0)} ms (x${(gatewayLarge / directLarge).toFixed(2)})`,
  );

  const gatewayPort = await freePort();
  const gatewayProcess = start([
    GATEWAY,
    'proxy',
    '--http',
    `127.0.0.1:${gatewayPort}`,
    '--',
    NODE,
    ...UPSTREAM,
  ]);
  const superPort = await freePort();
  const superProcess = start([
    SUPERGATEWAY,
    '--stdio',
    `${NODE} ${UPSTREAM.join(' ')}`,
    '--outputTransport',
    'streamableHttp',
    '--stateful',
    '--port',
    String(superPort),
    '--logLevel',
    'none',
  ]);
  const proxyPort = await freePort();
  start([MCP_PROXY, '--port', String(proxyPort), '--host', '127.0.0.1', '--', NODE, ...UPSTREAM]);
  const envelopePort = await freePort();
  start([
    GATEWAY,
    'proxy',
    '--dialect',
    'prov-v0.1',
    '--http',
    `127.0.0.1:${envelopePort}`,
    '--',
    NODE,
    ...UPSTREAM,
  ]);
  const barePort = await freePort();
  start([BARE_FORWARDER, String(barePort), '--', NODE, ...UPSTREAM]);
  const cannedPort = await freePort();
  start([CANNED_ANSWER, String(cannedPort)]);

  // Connect every bridge first, so that no measurement overlaps another one booting.
  const gatewayClient = await httpClient(`http://127.0.0.1:${gatewayPort}/mcp`);
  const superClient = await httpClient(`http://127.0.0.1:${superPort}/mcp`);
  const proxyClient = await httpClient(`http://127.0.0.1:${proxyPort}/mcp`);
  const envelopeClient = await httpClient(`http://127.0.0.1:${envelopePort}/mcp`);
  const bareClient = await httpClient(`http://127.0.0.1:${barePort}/mcp`);
  const cannedClient = await httpClient(`http://127.0.0.1:${cannedPort}/mcp`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const [cannedHttp, bareHttp, gatewayHttp, envelopeHttp, superHttp, proxyHttp] = (await measure([
    cannedClient,
    bareClient,
    gatewayClient,
    envelopeClient,
    superClient,
    proxyClient,
  ])) as [Figures, Figures, Figures, Figures, Figures, Figures];
  await Promise.all([cannedClient, bareClient, envelopeClient, proxyClient].map((client) => client.close()));
  console.log(row('HTTP, canned answer (no upstream)', cannedHttp));
  console.log(row('HTTP, bare forwarder (floor)', bareHttp));
  console.log(row('HTTP, mcp-envelope proxy', gatewayHttp));
  console.log(row('HTTP, proxy --dialect prov-v0.1', envelopeHttp));
  console.log(row('HTTP, supergateway --stateful', superHttp));
  console.log(row('HTTP, mcp-proxy', proxyHttp));

  console.log('\nratios (ours / peer; p50 lower is better, calls/s higher is better)');
  console.log(ratio('stdio: gateway / direct', gatewayStdio, directFigures));
  console.log(ratio('stdio: envelope mode / direct', envelopeStdio, directFigures));
  console.log(
    `p50 added over stdio: passthrough ${(gatewayStdio.p50 - directFigures.p50).toFixed(3)} ms, ` +
      `envelope mode ${(envelopeStdio.p50 - directFigures.p50).toFixed(3)} ms (target < 0.3 ms in envelope mode); ` +
      `a bare pipe hop adds ${(bareStdio.p50 - directFigures.p50).toFixed(3)} ms`,
  );
  console.log(ratio('HTTP: gateway / supergateway', gatewayHttp, superHttp));
  console.log(ratio('HTTP: envelope mode / supergateway', envelopeHttp, superHttp));
  console.log(ratio('HTTP: gateway / mcp-proxy', gatewayHttp, proxyHttp));
  console.log(ratio('HTTP: gateway / bare forwarder', gatewayHttp, bareHttp));
  console.log(ratio('HTTP: supergateway / bare forwarder', superHttp, bareHttp));
  // What each bridge adds over the floor of one loopback exchange (a canned answer, no upstream).
  const added = (figures: Figures) => figures.p50 - cannedHttp.p50;
  console.log(
    `p50 added over a canned answer (${cannedHttp.p50.toFixed(3)} ms): passthrough ${added(gatewayHttp).toFixed(3)} ms ` +
      `(x${(added(gatewayHttp) / added(superHttp)).toFixed(2)}), envelope mode ${added(envelopeHttp).toFixed(3)} ms ` +
      `(x${(added(envelopeHttp) / added(superHttp)).toFixed(2)}), supergateway ${added(superHttp).toFixed(3)} ms; ` +
      `target: at most x0.50 of supergateway's in both modes, calls/s at least 1.5x supergateway's`,
  );

  const before = [peakRssMiB(gatewayProcess.pid), peakRssMiB(superProcess.pid)];
  await Promise.all([bigResults(gatewayClient), bigResults(superClient)]);
  const ours = peakRssMiB(gatewayProcess.pid);
  const theirs = peakRssMiB(superProcess.pid);
  console.log(
    `\npeak RSS of the HTTP front process, ${RSS_CALLS} calls of 100 KB at ${IN_FLIGHT} in flight: ` +
      `mcp-envelope ${ours.toFixed(1)} MiB, supergateway ${theirs.toFixed(1)} MiB (x${(ours / theirs).toFixed(2)}); ` +
      `peak before them ${before[0]?.toFixed(1)} / ${before[1]?.toFixed(1)} MiB`,
  );
  await gatewayClient.close();
  await superClient.close();
}

try {
  await main();
} finally {
  for (const child of children) child.kill('SIGTERM');
}
