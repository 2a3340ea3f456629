/**
 * A bounded soak of the gateway, and what a client that stops reading costs.
 *
 * Soak: `proxy --logs DIR` in front of the flood fixture (its `echo` tool),
 * with CLIENTS clients calling echo (1 KB) in a loop for SOAK_SECONDS (each
 * loop also bounded by MAX_CALLS_PER_CLIENT): half on one HTTP gateway
 * (2025-era sessions of the official SDK client), half over stdio (each its
 * own `proxy` process, as stdio clients run them). Printed: each gateway's
 * resident memory (VmRSS) at the start and the end of the soak and its peak
 * (VmHWM), the calls made, and the call-log lines the gateways wrote, counted
 * from the log folder after they stopped.
 *
 * Slow reader: a client that reads nothing of one call's reply while the
 * fixture floods FLOOD_COUNT log messages of FLOOD_SIZE bytes to it, over HTTP
 * (an unread SSE reply) and over stdio (an unread stdout). Printed: the
 * gateway's resident memory before the flood and its peak, and what reached
 * the client once it read again.
 *
 * Figures only, no assertions (tests/gateway/slow-reader.test.ts asserts the
 * bounds). Run: node bench/soak.bench.ts [soak seconds, default 150]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch } from 'node:fs';
import { type IncomingMessage, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { freePort } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const NODE = process.execPath;
const BIN = `${root}bin/mcp-envelope`;
const FLOOD = fileURLToPath(new URL('../tests/fixtures/servers/flood.ts', import.meta.url));

const CLIENTS = 8;
/** The soak's length; a shorter one may be given: `node bench/soak.bench.ts 20`. */
const SOAK_SECONDS = Number(process.argv[2] ?? 150);
const MAX_CALLS_PER_CLIENT = 200_000;
const SAMPLE_MS = 30_000;
const PAYLOAD = 'x'.repeat(1024);
const FLOOD_COUNT = 20_000;
const FLOOD_SIZE = 10 * 1024;
const VERSION = '2025-06-18';
/** How long a gateway may take to listen or to stop, and a flood to finish. */
const START_MS = 30_000;
const STOP_MS = 10_000;
const FLOOD_MS = 180_000;

interface Memory {
  rssMiB: number;
  peakMiB: number;
}

function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

function mib(value: number): string {
  return `${value.toFixed(1)} MiB`;
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/** Starts `proxy --http` and waits (bounded) for its listening line. */
function startHttp(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(NODE, [BIN, 'proxy', ...args], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const listening = new Promise<{ child: ChildProcess; url: string }>((resolve, reject) => {
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      err += text;
      const match = /listening on (http:\/\/\S+)/.exec(err);
      if (match?.[1]) resolve({ child, url: match[1] });
    });
    child.once('exit', (code) => reject(new Error(`proxy exited with ${code}: ${err}`)));
  });
  return within(listening, START_MS, 'listening line');
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await within(exited, STOP_MS, 'exit').catch(() => child.kill('SIGKILL'));
}

/** Every line of every file under `dir` (links skipped: each instance's `latest` names a file counted already). */
function linesUnder(dir: string): number {
  let lines = 0;
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) lines += linesUnder(path);
    else if (stat?.isFile()) lines += readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
  }
  return lines;
}

async function echoLoop(client: Client, until: number): Promise<number> {
  let calls = 0;
  while (calls < MAX_CALLS_PER_CLIENT && Date.now() < until) {
    const result = await client.callTool({ name: 'echo', arguments: { text: PAYLOAD } });
    if ((result.content as { text?: string }[])[0]?.text !== PAYLOAD) throw new Error('echo came back wrong');
    calls++;
  }
  return calls;
}

async function soak(): Promise<void> {
  const logs = mkdtempSync(join(tmpdir(), 'soak-logs-'));
  const port = await freePort();
  const http = await startHttp(['--http', `127.0.0.1:${port}`, '--logs', logs, '--', NODE, FLOOD]);
  const httpPid = http.child.pid as number;
  const stdio: { client: Client; transport: StdioClientTransport }[] = [];
  const httpClients: Client[] = [];
  try {
    for (let i = 0; i < CLIENTS / 2; i++) {
      const client = new Client({ name: `soak-http-${i}`, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      httpClients.push(client);
      const transport = new StdioClientTransport({
        command: NODE,
        args: [BIN, 'proxy', '--logs', logs, '--', NODE, FLOOD],
        cwd: root,
        stderr: 'ignore',
      });
      const stdioClient = new Client({ name: `soak-stdio-${i}`, version: '1.0.0' });
      await stdioClient.connect(transport);
      stdio.push({ client: stdioClient, transport });
    }
    const stdioPids = stdio.map(({ transport }) => transport.pid as number);
    const startHttpMemory = memoryOf(httpPid);
    const startStdioMemory = stdioPids.map(memoryOf);
    const started = performance.now();
    const until = Date.now() + SOAK_SECONDS * 1000;
    // A series, to tell a heap settling at its size from one that keeps growing.
    const series: string[] = [];
    const sampler = setInterval(() => {
      const stdioMiB = stdioPids.map((pid) => memoryOf(pid).rssMiB);
      series.push(
        `${((performance.now() - started) / 1000).toFixed(0)} s: HTTP ${memoryOf(httpPid).rssMiB.toFixed(0)}, stdio ${stdioMiB.map((value) => value.toFixed(0)).join('/')}`,
      );
    }, SAMPLE_MS);
    const counts = await Promise.all([
      ...httpClients.map((client) => echoLoop(client, until)),
      ...stdio.map(({ client }) => echoLoop(client, until)),
    ]).finally(() => clearInterval(sampler));
    const seconds = (performance.now() - started) / 1000;
    const endHttpMemory = memoryOf(httpPid);
    const endStdioMemory = stdioPids.map(memoryOf);
    const calls = counts.reduce((sum, count) => sum + count, 0);
    const httpCalls = counts.slice(0, CLIENTS / 2).reduce((sum, count) => sum + count, 0);

    await Promise.all(httpClients.map((client) => client.close()));
    await Promise.all(stdio.map(({ client }) => client.close()));
    await stop(http.child);
    const logged = linesUnder(logs);

    console.log(
      `soak: ${CLIENTS} clients (${CLIENTS / 2} HTTP sessions on one gateway, ${CLIENTS / 2} stdio gateways), echo of 1 KB, ${seconds.toFixed(0)} s`,
    );
    console.log(
      `  calls made                ${calls} (HTTP ${httpCalls}, stdio ${calls - httpCalls}), ${(calls / seconds).toFixed(0)} calls/s`,
    );
    console.log(`  call-log lines written    ${logged}`);
    console.log(
      `  HTTP gateway RSS          start ${mib(startHttpMemory.rssMiB)}, end ${mib(endHttpMemory.rssMiB)}, peak ${mib(endHttpMemory.peakMiB)}`,
    );
    console.log(`  RSS every ${SAMPLE_MS / 1000} s (MiB)   ${series.join('; ')}`);
    startStdioMemory.forEach((start, i) => {
      const end = endStdioMemory[i] as Memory;
      console.log(
        `  stdio gateway ${i} RSS       start ${mib(start.rssMiB)}, end ${mib(end.rssMiB)}, peak ${mib(end.peakMiB)}`,
      );
    });
  } finally {
    await Promise.allSettled(httpClients.map((client) => client.close()));
    await Promise.allSettled(stdio.map(({ client }) => client.close()));
    await stop(http.child);
    rmSync(logs, { recursive: true, force: true });
  }
}

/** Resolves once the fixture has marked the flood tagged `tag` as finished. */
function floodDone(dir: string, tag: string): Promise<void> {
  const file = join(dir, `flood-${tag}.done`);
  let watcher: ReturnType<typeof watch> | undefined;
  const done = new Promise<void>((resolve) => {
    watcher = watch(dir, () => {
      if (existsSync(file)) resolve();
    });
    if (existsSync(file)) resolve();
  });
  return within(done, FLOOD_MS, `end of flood ${tag}`).finally(() => watcher?.close());
}

function floodCall(id: number, tag: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'flood', arguments: { count: FLOOD_COUNT, size: FLOOD_SIZE, tag } },
  });
}

/** Reads what is left of `stream` to its end (bounded), counting log messages and the answer. */
function drain(
  stream: NodeJS.ReadableStream,
  answered: (text: string) => boolean,
): Promise<{ logs: number; answered: boolean }> {
  return within(
    new Promise((resolve) => {
      let text = '';
      let logs = 0;
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        text += chunk;
        const lines = text.split('\n');
        text = lines.pop() ?? '';
        for (const line of lines) {
          if (line.includes('"notifications/message"')) logs++;
          if (answered(line)) resolve({ logs, answered: true });
        }
      });
      stream.once('end', () => resolve({ logs, answered: false }));
      stream.resume();
    }),
    FLOOD_MS,
    'the end of the unread reply',
  );
}

async function slowReaderHttp(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-flood-'));
  const { child, url } = await startHttp(['--http', '127.0.0.1:0', '--', NODE, FLOOD, '--done-dir', dir]);
  try {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const opened = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'slow', version: '1' } },
      }),
    });
    await opened.text();
    const session = opened.headers.get('mcp-session-id') ?? '';
    const sessionHeaders = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': VERSION };
    await fetch(url, {
      method: 'POST',
      headers: sessionHeaders,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    const before = memoryOf(child.pid as number);
    const req = request(url, { method: 'POST', headers: sessionHeaders });
    const reply = within(
      new Promise<IncomingMessage>((resolve) => req.once('response', resolve)),
      START_MS,
      'reply headers',
    );
    req.end(floodCall(2, 'http'));
    const res = await reply;
    res.pause();
    const started = performance.now();
    await floodDone(dir, 'http');
    const seconds = (performance.now() - started) / 1000;
    const during = memoryOf(child.pid as number);
    const read = await drain(res, (line) => line.includes('"id":2'));
    res.destroy();
    console.log(
      `slow reader, HTTP (unread SSE reply, ${FLOOD_COUNT} log messages of ${FLOOD_SIZE / 1024} KiB = ${mib((FLOOD_COUNT * FLOOD_SIZE) / 2 ** 20)} in ${seconds.toFixed(1)} s)`,
    );
    console.log(`  gateway RSS               before ${mib(before.rssMiB)}, peak ${mib(during.peakMiB)}`);
    console.log(
      `  reached the client        ${read.logs} log messages, answer ${read.answered ? 'delivered' : 'missing'}`,
    );
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function slowReaderStdio(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-flood-'));
  const child = spawn(NODE, [BIN, 'proxy', '--', NODE, FLOOD, '--done-dir', dir], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  try {
    const stdout = child.stdout as NodeJS.ReadableStream;
    stdout.setEncoding('utf8');
    const initialized = within(
      new Promise<void>((resolve) => {
        const seen = (text: string) => {
          if (!text.includes('"id":1')) return;
          stdout.off('data', seen);
          stdout.pause();
          resolve();
        };
        stdout.on('data', seen);
      }),
      START_MS,
      'initialize answer',
    );
    child.stdin?.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'slow', version: '1' } },
      })}\n`,
    );
    await initialized;
    child.stdin?.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const before = memoryOf(child.pid as number);
    child.stdin?.write(`${floodCall(2, 'stdio')}\n`);
    const started = performance.now();
    await floodDone(dir, 'stdio');
    const seconds = (performance.now() - started) / 1000;
    const during = memoryOf(child.pid as number);
    const read = await drain(stdout, (line) => line.includes('"id":2'));
    console.log(
      `slow reader, stdio (unread stdout, ${FLOOD_COUNT} log messages of ${FLOOD_SIZE / 1024} KiB in ${seconds.toFixed(1)} s)`,
    );
    console.log(`  gateway RSS               before ${mib(before.rssMiB)}, peak ${mib(during.peakMiB)}`);
    console.log(
      `  reached the client        ${read.logs} log messages, answer ${read.answered ? 'delivered' : 'missing'}`,
    );
  } finally {
    child.stdin?.end();
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

await slowReaderHttp();
await slowReaderStdio();
await soak();
