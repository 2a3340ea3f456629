/**
 * Many sessions of one client: 100 concurrent 2025-era HTTP sessions (the
 * official SDK client; each initializes, lists the tools and calls a 1 KB echo)
 * in front of the test server over stdio, through supergateway --stateful
 * (one upstream process per session), mcp-envelope with the upstream started
 * per session (as every session did before sharing) and mcp-envelope with the
 * upstream shared by the sessions (the default), one after the other on
 * 127.0.0.1. For each: the memory of the front process and every process under
 * it, summed over the process tree from /proc while all 100 sessions are open
 * (VmRSS, the figure compared; PSS, which splits pages processes share, beside
 * it), the peak of three samples; and the latency of tools/call, one session
 * after another and with all 100 calling at once. How long the sessions took
 * to open is shown, not compared: supergateway starts each child in a session
 * of its own (detached), which Linux's autogroup scheduling gives a CPU share
 * of its own, so on a machine busy with other work its children boot faster
 * than children that share their parent's.
 * Run: node bench/sessions.bench.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { freePort, processTree, quantile } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const NODE = process.execPath;
const UPSTREAM = [NODE, fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url))];
const SESSION_GATEWAY = fileURLToPath(new URL('./peers/session-gateway.ts', import.meta.url));
const SUPERGATEWAY = `${root}node_modules/supergateway/dist/index.js`;

const SESSIONS = 100;
/**
 * Sessions opening at once. Fronts that start a process per session boot
 * each in about half a second of CPU; a hundred at once on a small machine
 * would measure the boot storm, not the sessions.
 */
const OPENING_AT_ONCE = 10;
/** Calls each session makes while the sessions open, warming every process on the way. */
const OPENING_CALLS = 2;
/** Rounds of one call per session: sequential, then all sessions at once. */
const ROUNDS = 5;
const PAYLOAD = 'x'.repeat(1024);
/** How long a front may take to listen, and to stop. */
const START_MS = 30_000;
const STOP_MS = 10_000;

interface Memory {
  processes: number;
  rssMiB: number;
  pssMiB: number;
}

interface Figures {
  label: string;
  memory: Memory;
  openSeconds: number;
  sequential: { p50: number; p99: number };
  concurrent: { p50: number; p99: number };
}

function kib(text: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

function memoryOf(rootPid: number): Memory {
  let rss = 0;
  let pss = 0;
  let processes = 0;
  for (const pid of processTree(rootPid)) {
    try {
      rss += kib(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS');
      pss += kib(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss');
      processes++;
    } catch {
      // It exited while we looked.
    }
  }
  return { processes, rssMiB: rss / 1024, pssMiB: pss / 1024 };
}

function peak(samples: Memory[]): Memory {
  return samples.reduce((most, sample) => (sample.rssMiB > most.rssMiB ? sample : most));
}

/** Starts a front and waits (bounded) until it accepts connections. */
async function startFront(args: string[], port: number): Promise<ChildProcess> {
  const child = spawn(NODE, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.resume();
  const deadline = Date.now() + START_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${args[0]} exited with ${child.exitCode}`);
    const up = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'OPTIONS' }).then(
      () => true,
      () => false,
    );
    if (up) return child;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${args[0]} did not listen within ${START_MS} ms`);
}

/** Stops the front and, should any outlive it, every process it started. */
async function stopFront(child: ChildProcess): Promise<void> {
  const tree = processTree(child.pid as number);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, STOP_MS)))]);
  clearTimeout(timer);
  for (const pid of tree) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

async function echo(client: Client): Promise<number> {
  const started = performance.now();
  const result = await client.callTool({ name: 'echo', arguments: { text: PAYLOAD } });
  const elapsed = performance.now() - started;
  if (!(result.content as { text?: string }[])[0]?.text?.includes(PAYLOAD))
    throw new Error('echo came back wrong');
  return elapsed;
}

async function openSession(url: string): Promise<Client> {
  const client = new Client({ name: 'sessions-bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.listTools();
  for (let i = 0; i < OPENING_CALLS; i++) await echo(client);
  return client;
}

function summary(latencies: number[]): { p50: number; p99: number } {
  const sorted = latencies.sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
}

async function measure(label: string, args: (port: number) => string[]): Promise<Figures> {
  const port = await freePort();
  const front = await startFront(args(port), port);
  const clients: Client[] = [];
  try {
    const url = `http://127.0.0.1:${port}/mcp`;
    const opening = performance.now();
    while (clients.length < SESSIONS) {
      const wave = Math.min(OPENING_AT_ONCE, SESSIONS - clients.length);
      clients.push(...(await Promise.all(Array.from({ length: wave }, () => openSession(url)))));
    }
    const openSeconds = (performance.now() - opening) / 1000;
    const pid = front.pid as number;
    const samples = [memoryOf(pid)];
    const sequential: number[] = [];
    for (let round = 0; round < ROUNDS; round++)
      for (const client of clients) sequential.push(await echo(client));
    samples.push(memoryOf(pid));
    const concurrent: number[] = [];
    for (let round = 0; round < ROUNDS; round++)
      concurrent.push(...(await Promise.all(clients.map((client) => echo(client)))));
    samples.push(memoryOf(pid));
    return {
      label,
      memory: peak(samples),
      openSeconds,
      sequential: summary(sequential),
      concurrent: summary(concurrent),
    };
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    await stopFront(front);
  }
}

function row(figures: Figures): string {
  const { memory, sequential, concurrent } = figures;
  return [
    figures.label.padEnd(28),
    String(memory.processes).padStart(9),
    `${memory.rssMiB.toFixed(0).padStart(7)} MiB`,
    `${memory.pssMiB.toFixed(0).padStart(7)} MiB`,
    `${figures.openSeconds.toFixed(1).padStart(6)} s`,
    `${sequential.p50.toFixed(3).padStart(8)} ms`,
    `${sequential.p99.toFixed(3).padStart(8)} ms`,
    `${concurrent.p50.toFixed(2).padStart(8)} ms`,
    `${concurrent.p99.toFixed(2).padStart(8)} ms`,
  ].join('  ');
}

async function main(): Promise<void> {
  console.log(
    `${SESSIONS} concurrent 2025-era HTTP sessions of one client, each initializing, listing tools and ` +
      `making ${OPENING_CALLS} calls (${OPENING_AT_ONCE} opening at a time); then ${ROUNDS} rounds of one ${PAYLOAD.length} B echo per session, ` +
      `sequential, and ${ROUNDS} with all ${SESSIONS} at once. Memory: the front and all its processes, ` +
      'peak of 3 samples while every session is open.',
  );
  const shared = await measure('mcp-envelope, shared', (port) => [
    SESSION_GATEWAY,
    String(port),
    'shared',
    '--',
    ...UPSTREAM,
  ]);
  const perSession = await measure('mcp-envelope, per-session', (port) => [
    SESSION_GATEWAY,
    String(port),
    'per-session',
    '--',
    ...UPSTREAM,
  ]);
  const superFigures = await measure('supergateway --stateful', (port) => [
    SUPERGATEWAY,
    '--stdio',
    UPSTREAM.join(' '),
    '--outputTransport',
    'streamableHttp',
    '--stateful',
    '--port',
    String(port),
    '--logLevel',
    'none',
  ]);
  console.log(
    `${'front'.padEnd(28)}  processes    RSS total    PSS total   opened  ${'p50 seq'.padStart(11)}  ` +
      `${'p99 seq'.padStart(11)}  ${`p50 @${SESSIONS}`.padStart(11)}  ${`p99 @${SESSIONS}`.padStart(11)}`,
  );
  for (const figures of [shared, perSession, superFigures]) console.log(row(figures));

  const memoryRatio = shared.memory.rssMiB / superFigures.memory.rssMiB;
  console.log('\nratios (ours / peer; lower is better)');
  console.log(
    `shared / supergateway: RSS x${memoryRatio.toFixed(3)}, PSS x${(shared.memory.pssMiB / superFigures.memory.pssMiB).toFixed(3)}, ` +
      `p50 sequential x${(shared.sequential.p50 / superFigures.sequential.p50).toFixed(2)}, ` +
      `p50 @${SESSIONS} x${(shared.concurrent.p50 / superFigures.concurrent.p50).toFixed(2)}`,
  );
  console.log(
    `shared / per-session:  RSS x${(shared.memory.rssMiB / perSession.memory.rssMiB).toFixed(3)}, ` +
      `p50 sequential x${(shared.sequential.p50 / perSession.sequential.p50).toFixed(2)}, ` +
      `p50 @${SESSIONS} x${(shared.concurrent.p50 / perSession.concurrent.p50).toFixed(2)}`,
  );
  console.log(
    `targets: RSS under a quarter of supergateway's (x${memoryRatio.toFixed(3)}: ${memoryRatio < 0.25 ? 'met' : 'NOT met'}); ` +
      `sequential p50 no worse than per-session (${shared.sequential.p50.toFixed(3)} vs ${perSession.sequential.p50.toFixed(3)} ms: ` +
      `${shared.sequential.p50 <= perSession.sequential.p50 ? 'met' : 'NOT met'})`,
  );
}

await main();
