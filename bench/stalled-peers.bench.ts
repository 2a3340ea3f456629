/**
 * Stalled peers against a real gateway process (`mcp-envelope gateway`, built
 * dist/): resident memory (VmRSS) before and after each case, next to nginx's
 * for the download case when /usr/sbin/nginx exists (else said and skipped).
 * 1. 1,500 download readers that read the response head and then nothing
 *    (a 32 MiB artifact); the gateway caps downloads per address and cuts
 *    those that stop reading after 30 s.
 * 2. 300 POST bodies stalled one byte short of their Content-Length; cut
 *    after the 30 s request read timeout.
 * 3. 32 concurrent resources/read of a 45 MiB artifact (over the 16 MiB one
 *    read answers), then of a 15 MiB one (reads in flight hold at most 64 MiB
 *    between them), each POSTed on a raw connection that reads its reply only
 *    as far as it says answered or refused, then nothing; then 32 more of the
 *    15 MiB one with those replies still unread. Besides RSS before and after,
 *    the peak during the case (VmHWM, reset before it) and how many reads
 *    were answered or refused, by canonical code and the bound that refused.
 * 4. Ping latency under the costliest input schemas: on a second gateway in
 *    front of tests/fixtures/servers/heavy-schemas.ts, input validation
 *    enforced, one client calls a tool 20 times, one call after another
 *    (uniqueItems over 40,000 objects; then 200 patternProperties against
 *    50,000 members) while another sends pings one after another until those
 *    calls end; their median and max against 100 pings with no load in the
 *    same run (target: max under 100 ms).
 * Every connection is made once and closed at the end; every loop is bounded;
 * nothing waits on a clock but the settling pause before each reading.
 * Run: npm run build && node bench/stalled-peers.bench.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  benchStore,
  freePort,
  grantBenchFile,
  memoryOf,
  NGINX,
  quantile,
  startNginx,
  waitForLine,
} from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));
const UPSTREAM = fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url));
const HEAVY = fileURLToPath(new URL('../tests/fixtures/servers/heavy-schemas.ts', import.meta.url));
const READERS = 1500;
const BODIES = 300;
const SIZE_MB = 32;
/** Concurrent resources/read of each size: one over the per-read limit (16 MiB), one just under it. */
const RESOURCE_READS = 32;
const READ_SIZES_MB = [45, 15];
/** Pings with no load, each awaited before the next. */
const PINGS = 100;
/** Calls of a heavy tool per measure under load, each awaited before the next; the pings go on until they end. */
const LOAD_CALLS = 20;
/** At most this many pings under load, however long the calls take. */
const MAX_PINGS = 10_000;
const UNIQUE_ITEMS = 40_000;
const PATTERN_MEMBERS = 50_000;
const PING_TARGET_MS = 100;
const PROTOCOL = '2025-06-18';

const children: ChildProcess[] = [];
const sockets: Socket[] = [];
const work = mkdtempSync(join(tmpdir(), 'stalled-bench-'));

const mib = (bytes: number | undefined) =>
  bytes === undefined ? '?' : `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
/** Lets the peer take in what it was sent before its memory is read (a settling pause, not a measure). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1500));
const ms = (value: number) => `${value.toFixed(1)} ms`;

/** Resets a process's VmHWM to its VmRSS now (Linux clear_refs 5), so VmHWM is then the peak of what follows. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A GET that takes the first bytes of the answer (or its refusal) and then reads nothing. */
function stalledReader(port: number, path: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`),
    );
    sockets.push(socket);
    socket.once('data', () => {
      socket.pause();
      resolve();
    });
    socket.once('error', () => resolve());
    socket.once('close', () => resolve());
  });
}

/** A POST whose body stops one byte short. */
function stalledBody(port: number): Promise<void> {
  return new Promise((resolve) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      params: { pad: 'x'.repeat(64 * 1024) },
    });
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length + 1}\r\n\r\n${body}`,
        () => resolve(),
      );
    });
    sockets.push(socket);
    socket.once('error', () => resolve());
  });
}

/** Which bound a RESOURCE_EXHAUSTED names in its details: the artifact reads in flight, or an answer budget. */
function boundOf(text: string): string {
  if (text.includes('"held_bytes"')) return ' (reads in flight)';
  const limit = /"limit":"([^"]+)"/.exec(text)?.[1];
  return limit === undefined ? '' : ` (${limit})`;
}

/**
 * A resources/read POSTed in a session on a raw connection, its reply read
 * only as far as it says answered (`answered`) or refused (the canonical code),
 * then not at all: what remains of the reply stays with the gateway.
 */
function stalledResourceRead(
  url: URL,
  headers: Record<string, string>,
  uri: string,
  id: number,
): Promise<string> {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri } });
  const head = Object.entries({ ...headers, host: url.host, 'content-length': String(body.length) })
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n');
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname, () =>
      socket.write(`POST ${url.pathname} HTTP/1.1\r\n${head}\r\n\r\n${body}`),
    );
    sockets.push(socket);
    let text = '';
    const reading = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const code = /"canonical_code":"([A-Z_.]+)"/.exec(text)?.[1];
      const outcome = code ? `${code}${boundOf(text)}` : text.includes('"result"') ? 'answered' : undefined;
      // The reply's first bytes say which it is: a refusal is small, an answer starts with "result".
      if (outcome !== undefined || text.length > 64 * 1024) {
        socket.pause();
        socket.off('data', reading);
        resolve(outcome ?? `unrecognized: ${text.slice(0, 120)}`);
      }
    };
    socket.on('data', reading);
    socket.once('error', (error) => resolve(`connection error: ${error.message}`));
    socket.once('close', () => resolve(`closed: ${text.slice(0, 120)}`));
  });
}

interface Session {
  headers: Record<string, string>;
  /** POSTs one JSON-RPC body in the session; the reply's text. */
  post(body: string): Promise<string>;
}

/** A 2025-era Streamable HTTP session opened with plain POSTs (initialize, then initialized). */
async function openSession(url: URL): Promise<Session> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL,
  };
  const post = async (body: string) => {
    const reply = await fetch(url, { method: 'POST', headers, body });
    const text = await reply.text();
    if (!reply.ok) throw new Error(`${url} answered ${reply.status}: ${text.slice(0, 200)}`);
    return text;
  };
  const opened = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  await opened.text();
  const session = opened.headers.get('mcp-session-id');
  if (opened.status !== 200 || !session) throw new Error(`initialize answered ${opened.status}`);
  headers['mcp-session-id'] = session;
  await post('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  return { headers, post };
}

/** Milliseconds of each of `count` pings one after another, or of fewer once `until` settles. */
async function pings(
  session: Session,
  count: number,
  firstId: number,
  until?: Promise<unknown>,
): Promise<number[]> {
  let done = false;
  const stop = () => {
    done = true;
  };
  until?.then(stop, stop);
  const times: number[] = [];
  for (let i = 0; i < count && !done; i++) {
    const started = performance.now();
    const text = await session.post(JSON.stringify({ jsonrpc: '2.0', id: firstId + i, method: 'ping' }));
    times.push(performance.now() - started);
    if (!text.includes('"result"')) throw new Error(`ping answered ${text.slice(0, 200)}`);
  }
  return times.sort((a, b) => a - b);
}

/** How a tools/call reply came back: `answered`, or the canonical code of its refusal (an error envelope's, in its text). */
function outcomeOf(text: string): string {
  const code = /"(?:canonical_)?code":"([A-Z][A-Z_.]+)"/.exec(text.replaceAll('\\"', '"'))?.[1];
  return code ?? (text.includes('"isError":true') ? 'isError' : 'answered');
}

/** Sends `body` (a tools/call) `calls` times, each awaited; each call's milliseconds, and their outcomes. */
async function load(
  session: Session,
  body: string,
  calls: number,
): Promise<{ times: number[]; outcomes: Map<string, number> }> {
  const times: number[] = [];
  const outcomes = new Map<string, number>();
  for (let call = 0; call < calls; call++) {
    const started = performance.now();
    const outcome = outcomeOf(await session.post(body));
    times.push(performance.now() - started);
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  }
  return { times: times.sort((a, b) => a - b), outcomes };
}

const counted = (outcomes: Map<string, number>) =>
  [...outcomes].map(([outcome, count]) => `${outcome} ${count}`).join(', ');

async function startGateway(
  name: string,
  upstream: Record<string, unknown>,
): Promise<{ child: ChildProcess; port: number; dir: string; url: URL }> {
  const dir = join(work, name);
  mkdirSync(dir);
  const config = join(dir, 'gateway.config.json');
  const port = await freePort();
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: [upstream],
      listen: { stdio: false, http: { port } },
      logs: { enabled: false },
    }),
  );
  const child = spawn(process.execPath, [GATEWAY, 'gateway', '--config', config], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const [, url] = await waitForLine(child, /^Streamable HTTP: (http:\/\/\S+)$/m, 'the gateway');
  return { child, port, dir, url: new URL(url as string) };
}

try {
  const gateway = await startGateway('gateway', {
    name: 'everything',
    stdio: { command: 'node', args: [UPSTREAM] },
  });
  const store = benchStore(gateway.dir);
  const info = await grantBenchFile(store, SIZE_MB, 'big.bin');
  const { downloadId } = info;
  const readable: { sizeMb: number; uri: string }[] = [];
  for (const sizeMb of READ_SIZES_MB) {
    const grant = await grantBenchFile(store, sizeMb, `read-${sizeMb}.bin`);
    readable.push({ sizeMb, uri: `mcp-envelope://artifacts/${grant.downloadId}` });
  }
  await store.close();
  const pid = gateway.child.pid as number;

  const idle = memoryOf(pid, 'VmRSS');
  await Promise.all(
    Array.from({ length: READERS }, () => stalledReader(gateway.port, `/api/download?id=${downloadId}`)),
  );
  await settle();
  const readers = memoryOf(pid, 'VmRSS');
  console.log(
    `${READERS} stalled download readers (${SIZE_MB} MiB file): gateway RSS ${mib(idle)} -> ${mib(readers)}`,
  );
  if (existsSync(NGINX)) {
    const site = join(work, 'site');
    mkdirSync(site);
    linkSync(
      join(gateway.dir, 'data', 'artifacts', 'blobs', info.digest.slice(0, 2), info.digest),
      join(site, 'big.bin'),
    );
    const nginx = await startNginx(site, work);
    children.push(nginx.child);
    const nginxPid = nginx.child.pid as number;
    const nginxIdle = memoryOf(nginxPid, 'VmRSS');
    await Promise.all(Array.from({ length: READERS }, () => stalledReader(nginx.port, '/big.bin')));
    await settle();
    console.log(`  nginx, the same readers: RSS ${mib(nginxIdle)} -> ${mib(memoryOf(nginxPid, 'VmRSS'))}`);
  } else {
    console.log(`  nginx: not installed (${NGINX}), peer skipped`);
  }
  for (const socket of sockets.splice(0)) socket.destroy();

  const beforeBodies = memoryOf(pid, 'VmRSS');
  await Promise.all(Array.from({ length: BODIES }, () => stalledBody(gateway.port)));
  await settle();
  console.log(
    `${BODIES} POST bodies stalled one byte short (64 KiB each): gateway RSS ${mib(beforeBodies)} -> ${mib(memoryOf(pid, 'VmRSS'))}`,
  );
  for (const socket of sockets.splice(0)) socket.destroy();

  // The peak over the run is kept across the resets that give each read case its own.
  let runPeak = memoryOf(pid, 'VmHWM') ?? 0;
  const readSession = await openSession(gateway.url);
  let readId = 100;
  // The last size read twice: the second time with the first time's replies still unread.
  const waves = [
    ...readable.map((read) => ({ ...read, again: false })),
    { ...(readable.at(-1) as (typeof readable)[number]), again: true },
  ];
  for (const [index, { sizeMb, uri, again }] of waves.entries()) {
    await settle();
    const before = memoryOf(pid, 'VmRSS');
    runPeak = Math.max(runPeak, memoryOf(pid, 'VmHWM') ?? 0);
    const peakKnown = resetPeak(pid);
    const outcomes = await Promise.all(
      Array.from({ length: RESOURCE_READS }, () =>
        stalledResourceRead(gateway.url, readSession.headers, uri, readId++),
      ),
    );
    await settle();
    const peak = memoryOf(pid, 'VmHWM');
    runPeak = Math.max(runPeak, peak ?? 0);
    const answered = outcomes.filter((outcome) => outcome === 'answered').length;
    const refused = new Map<string, number>();
    for (const outcome of outcomes)
      if (outcome !== 'answered') refused.set(outcome, (refused.get(outcome) ?? 0) + 1);
    const what = again
      ? `${RESOURCE_READS} more of the ${sizeMb} MiB artifact, the ${RESOURCE_READS} before still unread`
      : `${RESOURCE_READS} concurrent resources/read of a ${sizeMb} MiB artifact, replies left unread`;
    console.log(
      `${what}: gateway RSS ${mib(before)} -> ${mib(memoryOf(pid, 'VmRSS'))}` +
        `${peakKnown ? `, peak ${mib(peak)} during the case` : ''}; answered ${answered}, refused ${RESOURCE_READS - answered}${refused.size > 0 ? ` (${counted(refused)})` : ''}`,
    );
    if (!waves[index + 1]?.again) for (const socket of sockets.splice(0)) socket.destroy();
  }
  runPeak = Math.max(runPeak, memoryOf(pid, 'VmHWM') ?? 0);
  console.log(`gateway peak RSS over the run: ${mib(runPeak)}`);
  gateway.child.kill('SIGKILL');

  const heavy = await startGateway('heavy', {
    name: 'heavy',
    stdio: { command: 'node', args: [HEAVY] },
    validation: { input: 'enforce' },
  });
  const pinger = await openSession(heavy.url);
  const caller = await openSession(heavy.url);
  const call = (id: number, name: string, args: Record<string, unknown>) =>
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  // Distinct objects, so the uniqueness check goes through every one of them.
  const loads = [
    {
      what: `uniqueItems over ${UNIQUE_ITEMS.toLocaleString('en-US')} objects`,
      body: call(2, 'unique_items', {
        items: Array.from({ length: UNIQUE_ITEMS }, (_, i) => ({ id: i, tag: 'x' })),
      }),
    },
    {
      what: `200 patternProperties against ${PATTERN_MEMBERS.toLocaleString('en-US')} members`,
      body: call(3, 'pattern_properties', {
        fields: Object.fromEntries(
          Array.from({ length: PATTERN_MEMBERS }, (_, i) => [`f${i % 200}_${i}`, i]),
        ),
      }),
    },
  ];
  // Warm-up: the tool list fetched, the schemas compiled, both paths run once.
  for (const { body } of loads) await caller.post(body);
  await pings(pinger, 20, 1_000_000);
  const unloaded = await pings(pinger, PINGS, 0);
  const idleMedian = quantile(unloaded, 0.5);
  const idleMax = unloaded.at(-1) as number;
  console.log(`${PINGS} pings one after another, no load: median ${ms(idleMedian)}, max ${ms(idleMax)}`);
  let nextId = PINGS;
  for (const { what, body } of loads) {
    const loading = load(caller, body, LOAD_CALLS);
    const [loaded, calls] = await Promise.all([pings(pinger, MAX_PINGS, nextId, loading), loading]);
    nextId += loaded.length;
    const median = quantile(loaded, 0.5);
    const max = loaded.at(-1) as number;
    const verdict =
      max < PING_TARGET_MS
        ? `under ${PING_TARGET_MS} ms`
        : `OVER ${PING_TARGET_MS} ms by ${ms(max - PING_TARGET_MS)}`;
    console.log(
      `${loaded.length} pings while another client calls a tool with ${what} (input validation enforce): median ${ms(median)} (x${(median / idleMedian).toFixed(1)} unloaded), max ${ms(max)} (x${(max / idleMax).toFixed(1)} unloaded): max ${verdict}` +
        `\n  the load meanwhile: ${calls.times.length} calls one after another, median ${ms(quantile(calls.times, 0.5))} each; ${counted(calls.outcomes)}`,
    );
  }
} finally {
  for (const socket of sockets) socket.destroy();
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
