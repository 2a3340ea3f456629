import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, watch } from 'node:fs';
import { type IncomingMessage, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { deferred, printed, within } from './events.ts';
import { BIN, initializeMessage, NODE, ROOT, type Running, startListening, stopChild } from './processes.ts';

/**
 * A client that stops reading must not make the gateway buffer without
 * limit. The flood fixture sends COUNT log messages of SIZE bytes (about
 * 300 MB) to a call whose client reads nothing; the gateway's peak resident
 * memory (VmHWM) must stay under PEAK_MB, where it used to follow the flood.
 */
const FLOOD = fileURLToPath(new URL('../fixtures/servers/flood.ts', import.meta.url));
const COUNT = 30_000;
const SIZE = 10 * 1024;
const PEAK_MB = 400;
const VERSION = '2025-06-18';

/** The process's peak resident set size in MB, from /proc. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
  return kb / 1024;
}

/** Resolves once the fixture has marked the flood tagged `tag` as finished. */
function floodDone(dir: string, tag: string): Promise<void> {
  const file = join(dir, `flood-${tag}.done`);
  const done = deferred();
  const watcher = watch(dir, () => {
    if (existsSync(file)) done.resolve();
  });
  if (existsSync(file)) done.resolve();
  return within(done.promise, 120_000, `end of flood ${tag}`).finally(() => watcher.close());
}

function floodCall(id: number, tag: string, after = false) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'flood', arguments: { count: COUNT, size: SIZE, tag, after } },
  };
}

function bigCall(id: number) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: { size: 1 << 20 } } };
}

/** Everything left on a response the test had paused, to its end. */
function rest(res: IncomingMessage): Promise<string> {
  return within(
    new Promise<string>((resolve, reject) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.once('end', () => resolve(text));
      res.once('error', reject);
      res.resume();
    }),
    60_000,
    'end of the reply stream',
  );
}

function sseMessages(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

describe('a client that stops reading', { timeout: 180_000 }, () => {
  let dir: string;
  const cleanup: (() => Promise<void>)[] = [];

  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function tmp(): string {
    dir = mkdtempSync(join(tmpdir(), 'slow-reader-'));
    return dir;
  }

  describe('over HTTP', () => {
    async function start(): Promise<{ proxy: Running; session: string }> {
      const proxy = await startListening([
        BIN,
        'proxy',
        '--http',
        '127.0.0.1:0',
        '--',
        NODE,
        FLOOD,
        '--done-dir',
        tmp(),
      ]);
      cleanup.push(() => proxy.stop());
      const opened = await fetch(proxy.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(initializeMessage(1, 'slow-reader', VERSION)),
      });
      const session = opened.headers.get('mcp-session-id') ?? '';
      await opened.text();
      await fetch(proxy.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': session,
          'mcp-protocol-version': VERSION,
        },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
      return { proxy, session };
    }

    /** A raw POST (or, without a body, the GET stream) on the session, whose reply the test does not read. */
    async function unread(proxy: Running, session: string, body?: unknown): Promise<IncomingMessage> {
      const req = request(proxy.url, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream, application/json',
          'mcp-session-id': session,
          'mcp-protocol-version': VERSION,
        },
      });
      const response = new Promise<IncomingMessage>((resolve, reject) => {
        req.once('response', (res) => {
          res.pause();
          resolve(res);
        });
        req.once('error', reject);
      });
      req.end(body === undefined ? undefined : JSON.stringify(body));
      const res = await within(response, 15_000, 'reply headers');
      cleanup.push(async () => {
        res.destroy();
      });
      return res;
    }

    async function echoAsAnotherClient(proxy: Running): Promise<string> {
      const client = new Client({ name: 'other', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
      try {
        const result = await client.callTool({ name: 'echo', arguments: { text: 'still served' } });
        return (result.content as { text: string }[])[0]?.text ?? '';
      } finally {
        await client.close();
      }
    }

    it('drops the log messages an unread SSE reply cannot take, and still answers the call', async () => {
      const { proxy, session } = await start();
      const res = await unread(proxy, session, floodCall(2, 'http'));
      await floodDone(dir, 'http');
      const pid = proxy.child.pid as number;
      expect(peakRssMb(pid)).toBeLessThan(PEAK_MB);
      expect(await echoAsAnotherClient(proxy)).toBe('still served');

      // Reading again, the client gets the answer: responses are never dropped.
      const messages = sseMessages(await rest(res));
      const answer = messages.find((message) => message.id === 2) as {
        result?: { content: { text: string }[] };
      };
      expect(answer?.result?.content[0]?.text).toBe(`flooded ${COUNT}`);
      const logs = messages.filter((message) => message.method === 'notifications/message').length;
      expect(logs).toBeLessThan(COUNT);
      await printed(proxy, new RegExp(`dropped ${COUNT - logs} notifications`));
    });

    it('drops the log messages an unread GET stream cannot take', async () => {
      const { proxy, session } = await start();
      const stream = await unread(proxy, session);
      // Answered at once; the messages follow outside any call, so they go to the GET stream.
      const call = await fetch(proxy.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': session,
          'mcp-protocol-version': VERSION,
        },
        body: JSON.stringify(floodCall(2, 'get', true)),
      });
      expect(await call.text()).toContain(`flooding ${COUNT}`);
      await floodDone(dir, 'get');
      expect(peakRssMb(proxy.child.pid as number)).toBeLessThan(PEAK_MB);
      expect(await echoAsAnotherClient(proxy)).toBe('still served');
      // The count is reported when the stream closes.
      stream.destroy();
      await printed(
        proxy,
        /dropped \d+ notifications \(progress, log messages, list changes\) on the GET stream/,
      );
    });

    it('ends an unread SSE reply past the bound, answering its remaining requests with an error', async () => {
      const { proxy, session } = await start();
      const calls = Array.from({ length: 24 }, (_, index) => bigCall(10 + index));
      const res = await unread(proxy, session, calls);
      await printed(
        proxy,
        /ended a reply stream the client stopped reading \(more than 8 MiB waiting\)/,
        30_000,
      );
      expect(peakRssMb(proxy.child.pid as number)).toBeLessThan(PEAK_MB);
      expect(await echoAsAnotherClient(proxy)).toBe('still served');

      const messages = sseMessages(await rest(res));
      const results = messages.filter((message) => 'result' in message);
      const errors = messages.filter((message) => 'error' in message) as {
        error: { message: string; data?: { canonical_code?: string } };
      }[];
      expect(errors.length).toBeGreaterThan(0);
      expect(results.length + errors.length).toBe(calls.length);
      expect(errors[0]?.error.message).toMatch(/not reading/);
      expect(errors[0]?.error.data?.canonical_code).toBe('RESOURCE_EXHAUSTED');
    });
  });

  describe('over stdio', () => {
    interface Proxy {
      child: ChildProcess;
      stderr: () => string;
      /** Resolves with the first message `match` accepts, reading stdout from where it stands. */
      next(
        match: (message: Record<string, unknown>) => boolean,
        ms?: number,
      ): Promise<Record<string, unknown>>;
      /** Every message read so far. */
      seen: Record<string, unknown>[];
      send(message: unknown): void;
    }

    async function start(): Promise<Proxy> {
      const child = spawn(NODE, [BIN, 'proxy', '--', NODE, FLOOD, '--done-dir', tmp()], {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      cleanup.push(() => stopChild(child));
      let err = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (text: string) => {
        err += text;
      });
      const seen: Record<string, unknown>[] = [];
      let waiting: (() => void) | undefined;
      let buffered = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (text: string) => {
        buffered += text;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) if (line) seen.push(JSON.parse(line) as Record<string, unknown>);
        waiting?.();
      });
      const proxy: Proxy = {
        child,
        stderr: () => err,
        seen,
        send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
        next(match, ms = 30_000) {
          const found = deferred<Record<string, unknown>>();
          waiting = () => {
            const hit = seen.find(match);
            if (hit) found.resolve(hit);
          };
          waiting();
          return within(found.promise, ms, 'message on stdout').finally(() => {
            waiting = undefined;
          });
        },
      };
      proxy.send(initializeMessage(1, 'slow-reader', VERSION));
      await proxy.next((message) => message.id === 1);
      proxy.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return proxy;
    }

    function stderrMatching(proxy: Proxy, pattern: RegExp, ms = 30_000): Promise<void> {
      const seen = deferred();
      const check = () => {
        if (pattern.test(proxy.stderr())) seen.resolve();
      };
      proxy.child.stderr?.on('data', check);
      check();
      return within(seen.promise, ms, `stderr matching ${pattern}`).finally(() =>
        proxy.child.stderr?.off('data', check),
      );
    }

    it('drops the log messages an unread stdout cannot take, and still answers the call', async () => {
      const proxy = await start();
      proxy.child.stdout?.pause();
      proxy.send(floodCall(2, 'stdio'));
      await floodDone(dir, 'stdio');
      expect(peakRssMb(proxy.child.pid as number)).toBeLessThan(PEAK_MB);

      proxy.child.stdout?.resume();
      const answer = (await proxy.next((message) => message.id === 2)) as {
        result?: { content: { text: string }[] };
      };
      expect(answer.result?.content[0]?.text).toBe(`flooded ${COUNT}`);
      const logs = proxy.seen.filter((message) => message.method === 'notifications/message').length;
      expect(logs).toBeLessThan(COUNT);
      await stderrMatching(proxy, new RegExp(`dropped ${COUNT - logs} notifications`));
      // The connection is still whole.
      proxy.send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'hi' } },
      });
      const echoed = (await proxy.next((message) => message.id === 3)) as {
        result?: { content: { text: string }[] };
      };
      expect(echoed.result?.content[0]?.text).toBe('hi');
    });

    it('closes its stdio side when answers past the bound are waiting', async () => {
      const proxy = await start();
      proxy.child.stdout?.pause();
      for (let index = 0; index < 24; index++) proxy.send(bigCall(10 + index));
      await stderrMatching(proxy, /not reading stdout: more than 8 MiB .* closing the stdio connection/);
      expect(peakRssMb(proxy.child.pid as number)).toBeLessThan(PEAK_MB);
      const exited = new Promise<number | null>((resolve) => proxy.child.once('exit', resolve));
      proxy.child.stdout?.resume();
      // Whatever was queued is delivered, then the gateway is gone on its own.
      expect(await within(exited, 30_000, 'gateway exit')).toBe(0);
      expect(proxy.seen.filter((message) => 'result' in message).length).toBeLessThan(24);
    });
  });
});
