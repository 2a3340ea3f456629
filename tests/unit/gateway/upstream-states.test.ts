import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { UpstreamStatusBoard } from '../../../src/gateway/operations/upstream-status.ts';
import { nextRestart, restartsInARow } from '../../../src/gateway/upstreams/restart-policy.ts';
import {
  Upstream,
  type UpstreamOptions,
  type UpstreamSpec,
  type UpstreamStateKind,
} from '../../../src/gateway/upstreams/upstream.ts';
import { FIXTURE, type Running, startListening } from '../../gateway/processes.ts';

/**
 * An upstream's life, state by state, with real child processes and a real
 * HTTP server: each test drives one path through the transitions and checks
 * the states it went through and what calls meet in them.
 */

const LIFECYCLE = fileURLToPath(new URL('../../fixtures/servers/lifecycle.ts', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'mcp-envelope-upstream-states-'));
const opened: Upstream[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((upstream) => upstream.close()));
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

/** The lifecycle fixture, with its flags (`--blocked-by FILE`, `--mute`). */
function stdio(name: string, extra: readonly string[] = []): UpstreamSpec {
  return { name, kind: 'stdio', command: process.execPath, args: [LIFECYCLE, ...extra] };
}

/** A file whose presence keeps the fixture from starting, until the test removes it. */
function blocker(name: string): string {
  const file = join(scratch, name);
  writeFileSync(file, '');
  return file;
}

function upstreamOf(spec: UpstreamSpec, options: UpstreamOptions = {}): Upstream {
  const upstream = new Upstream(spec, options);
  opened.push(upstream);
  return upstream;
}

/** Every state the upstream enters from now on, in order. */
function record(upstream: Upstream): UpstreamStateKind[] {
  const seen: UpstreamStateKind[] = [];
  upstream.onStateChange((state) => seen.push(state));
  return seen;
}

/** Resolves when the upstream next enters `state`. */
function entering(upstream: Upstream, state: UpstreamStateKind): Promise<void> {
  return new Promise((resolve) => {
    const stop = upstream.onStateChange((now) => {
      if (now !== state) return;
      stop();
      resolve();
    });
  });
}

const recovered = (upstream: Upstream) => new Promise<void>((resolve) => upstream.onRecovered(resolve));
const echo = (upstream: Upstream, text: string, timeoutMs?: number) =>
  upstream.request('tools/call', { name: 'echo', arguments: { text } }, { timeoutMs });
const textOf = (result: unknown) => (result as { content: { text: string }[] }).content[0]?.text;

describe('an upstream child that exits', () => {
  it('goes from idle through starting to ready, and restarts through restarting and starting', async () => {
    const upstream = upstreamOf(stdio('alpha'), { restart: { initialDelayMs: 10, maxDelayMs: 10 } });
    const seen = record(upstream);
    expect(upstream.state).toBe('idle');
    expect(upstream.generation).toBe(0);

    const connecting = upstream.connect();
    expect(upstream.state).toBe('starting');
    expect(upstream.available).toBe(false);
    await connecting;
    expect(upstream.state).toBe('ready');
    expect(upstream.available).toBe(true);
    expect(upstream.failure).toBeUndefined();
    expect(upstream.serverInfo?.name).toBe('lifecycle');
    expect(upstream.generation).toBe(1);
    const board = new UpstreamStatusBoard(['alpha']);
    board.observe(upstream);
    expect(board.get('alpha')).toEqual({ state: 'ready' });

    const back = recovered(upstream);
    const crash = await upstream
      .request('tools/call', { name: 'exit', arguments: { code: 7 } })
      .catch((error: unknown) => error);
    expect(crash).toMatchObject({ code: 'ADAPTER.EXECUTION.FAILED', exitCode: 7 });
    expect((crash as Error).message).toBe('upstream alpha exited');
    expect((crash as { stderr?: string }).stderr).toContain('lifecycle: exiting on request');

    await back;
    expect(upstream.state).toBe('ready');
    expect(upstream.failure).toBeUndefined();
    expect(upstream.generation).toBe(2);
    expect(textOf(await echo(upstream, 'again'))).toBe('again');
    expect(seen).toEqual(['starting', 'ready', 'restarting', 'starting', 'ready']);

    await upstream.close();
    expect(upstream.state).toBe('closed');
    expect(seen.at(-1)).toBe('closed');
  });

  it('lets a call made while it restarts wait for the restart', async () => {
    const upstream = upstreamOf(stdio('alpha'), { restart: { initialDelayMs: 20, maxDelayMs: 20 } });
    await upstream.connect();
    const seen = record(upstream);
    upstream.kill();
    await entering(upstream, 'restarting');
    expect(upstream.failure?.message).toBe('upstream alpha exited');
    expect(upstream.failure?.details).toMatchObject({ signal: 'SIGKILL' });

    expect(textOf(await echo(upstream, 'waited'))).toBe('waited');
    expect(seen).toEqual(['restarting', 'starting', 'ready']);
  });

  it('fails a waiting call with why it is down once the call’s own timeout passes', async () => {
    const upstream = upstreamOf(stdio('alpha'), { restart: { initialDelayMs: 60_000 } });
    await upstream.connect();
    upstream.kill();
    await entering(upstream, 'restarting');

    const late = await echo(upstream, 'late', 50).catch((error: unknown) => error);
    expect(late).toBe(upstream.failure);
    expect(upstream.state).toBe('restarting');
  });

  it('closes while waiting to restart: the restart is called off and waiting calls fail at once', async () => {
    const upstream = upstreamOf(stdio('alpha'), { restart: { initialDelayMs: 60_000 } });
    await upstream.connect();
    const seen = record(upstream);
    upstream.kill();
    await entering(upstream, 'restarting');

    // Its own timeout is a minute: only the close can end this wait within the test's.
    const waiting = echo(upstream, 'never', 60_000).catch((error: unknown) => error);
    await upstream.close();
    expect(((await waiting) as Error).message).toBe('upstream alpha is shut down');
    expect(upstream.state).toBe('closed');
    expect(upstream.available).toBe(false);
    expect(seen).toEqual(['restarting', 'closed']);
  });
});

describe('an upstream child that cannot start', () => {
  it('fails calls at once while failed and while retrying, and serves once a retry starts', async () => {
    const file = blocker('retry');
    const upstream = upstreamOf(stdio('beta', ['--blocked-by', file]), {
      restart: { initialDelayMs: 20, maxDelayMs: 20 },
    });
    const seen = record(upstream);
    // A call made in each state but ready; one that waited past a failure would be answered once beta is back.
    const calls: { state: UpstreamStateKind; outcome: Promise<unknown> }[] = [];
    upstream.onStateChange((state) => {
      if (state === 'ready') return;
      calls.push({ state, outcome: echo(upstream, state, 60_000).catch((error: unknown) => error) });
      // The dependency shows up while the first retry is waiting.
      if (state === 'failed') rmSync(file, { force: true });
    });
    const back = recovered(upstream);

    const refused = await upstream.connect().catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'ADAPTER.EXECUTION.FAILED', exitCode: 3 });
    // The caller's message quotes what the process said; the operator's surfaces list its lines instead.
    expect((refused as Error).message).toBe(
      `upstream beta did not start: exited with code 3 (stderr: not ready: ${file} exists)`,
    );
    expect((refused as { stderr?: string }).stderr).toContain('not ready:');

    await back;
    expect(seen).toEqual(['starting', 'failed', 'starting', 'ready']);
    // The call made during the first start waited for its outcome; the later ones failed at once.
    expect(calls.map((call) => call.state)).toEqual(['starting', 'failed', 'starting']);
    for (const call of calls) expect(await call.outcome).toBe(refused);
    expect(textOf(await echo(upstream, 'back'))).toBe('back');
  });

  it('gives up once the restart budget is spent, and stays down', async () => {
    const file = blocker('never');
    const upstream = upstreamOf(stdio('gamma', ['--blocked-by', file]), {
      restart: { initialDelayMs: 5, maxDelayMs: 5, maxRestarts: 2 },
    });
    const seen = record(upstream);
    const board = new UpstreamStatusBoard(['gamma']);
    expect(board.get('gamma').state).toBe('starting');
    const gaveUp = new Promise<number>((resolve) => upstream.onGaveUp(resolve));
    upstream.onStateChange((state) => {
      if (state === 'failed') board.observe(upstream);
    });
    await expect(upstream.connect()).rejects.toMatchObject({ code: 'ADAPTER.EXECUTION.FAILED' });
    expect(board.get('gamma')).toEqual({
      state: 'retrying',
      reason: 'upstream gamma did not start: exited with code 3',
      stderr: [expect.stringMatching(/^not ready: /)],
    });

    expect(await gaveUp).toBe(2);
    expect(upstream.state).toBe('gave-up');
    // The board reads the give-up from the upstream itself.
    board.observe(upstream);
    expect(board.get('gamma').state).toBe('gave_up');
    expect(board.summary()).toBe('degraded');
    expect(seen).toEqual(['starting', 'failed', 'starting', 'failed', 'starting', 'gave-up']);
    expect(upstream.failure?.message).toBe(
      `upstream gamma did not start: exited with code 3 (stderr: not ready: ${file} exists)`,
    );
    // One who listens only now still hears it.
    expect(await new Promise<number>((resolve) => upstream.onGaveUp(resolve))).toBe(2);
    await expect(echo(upstream, 'x', 60_000)).rejects.toBe(upstream.failure);

    await upstream.close();
    expect(seen.at(-1)).toBe('closed');
  });

  it('is ended, and stays closed, when closed before it answered initialize', async () => {
    const upstream = upstreamOf(stdio('mute', ['--mute']), { startTimeoutMs: 60_000 });
    const seen = record(upstream);
    const connecting = upstream.connect().catch((error: unknown) => error);
    expect(upstream.state).toBe('starting');
    const pid = upstream.pid;
    await upstream.close();
    expect(await connecting).toMatchObject({ code: 'ADAPTER.EXECUTION.FAILED' });
    expect(upstream.state).toBe('closed');
    expect(seen).toEqual(['starting', 'closed']);
    expect(() => process.kill(pid ?? 0, 0)).toThrow();
  });

  it.skipIf(process.platform === 'win32')(
    'says what the process wrote on stderr when initialize is not answered within the start timeout',
    async () => {
      // A shell prints at once, well inside the start timeout, then waits forever without answering.
      const said = 'licence server 10.0.0.1:7070: connection refused';
      const upstream = upstreamOf(
        {
          name: 'licensed',
          kind: 'stdio',
          command: 'sh',
          args: ['-c', `echo "${said}" >&2; exec sleep 600`],
        },
        { startTimeoutMs: 1000, restart: { initialDelayMs: 60_000 } },
      );
      const refused = await upstream.connect().catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'ADAPTER.EXECUTION.FAILED', stderr: `${said}\n` });
      expect((refused as Error).message).toBe(
        `upstream licensed did not start: no answer to initialize within 1000 ms (stderr: ${said})`,
      );
    },
  );

  it('fails the start, and ends the process, when initialize is not answered within the start timeout', async () => {
    const upstream = upstreamOf(stdio('mute', ['--mute']), {
      startTimeoutMs: 100,
      restart: { initialDelayMs: 60_000 },
    });
    const refused = await upstream.connect().catch((error: unknown) => error);
    expect((refused as Error).message).toMatch(/^upstream mute did not start: /);
    expect(upstream.state).toBe('failed');
    expect(() => process.kill(upstream.pid ?? 0, 0)).toThrow();
  });
});

/**
 * A plain HTTP relay in front of the fixture server, so a test can point it at
 * a new server (on a new port), break the SSE streams it carries while the
 * server stays up, and see which JSON-RPC methods went through.
 */
interface Relay {
  url: string;
  target: string;
  methods: string[];
  /** Resolves when a request with this JSON-RPC method has been answered. */
  answered(method: string): Promise<void>;
  /** Resolves once a GET (SSE) stream is open. */
  streaming(): Promise<void>;
  /** Cuts the GET (SSE) streams open now, as a network failure would. */
  breakStreams(): void;
  close(): Promise<void>;
}

async function startRelay(target: string): Promise<Relay> {
  const streams = new Set<ServerResponse>();
  const waiters: { method: string; resolve: () => void }[] = [];
  let opened = Promise.withResolvers<void>();
  const relay: Relay = {
    url: '',
    target,
    methods: [],
    answered: (method) => new Promise((resolve) => waiters.push({ method, resolve })),
    streaming: () => opened.promise,
    breakStreams() {
      for (const stream of streams) stream.socket?.destroy();
      streams.clear();
      opened = Promise.withResolvers<void>();
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = req.method === 'POST' ? methodOf(body) : undefined;
      if (method) relay.methods.push(method);
      const to = new URL(relay.target);
      const forward = httpRequest(
        to,
        { method: req.method, headers: { ...req.headers, host: to.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          if (req.method === 'GET' && answer.statusCode === 200) {
            // A stream's headers go out at once, as a server's do.
            res.flushHeaders();
            streams.add(res);
            opened.resolve();
          }
          answer.pipe(res);
          // A server connection that breaks breaks the client's too, as it would without the relay.
          answer.on('close', () => {
            if (!answer.complete) res.socket?.destroy();
          });
          answer.on('end', () => {
            for (const waiter of waiters.splice(0)) {
              if (waiter.method === method) waiter.resolve();
              else waiters.push(waiter);
            }
          });
        },
      );
      forward.on('error', () => res.socket?.destroy());
      res.on('close', () => forward.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  relay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return relay;
}

function methodOf(body: Buffer): string | undefined {
  try {
    const method = (JSON.parse(body.toString('utf8')) as { method?: unknown }).method;
    return typeof method === 'string' ? method : undefined;
  } catch {
    return undefined;
  }
}

describe('a remote upstream', () => {
  const servers: Running[] = [];
  const relays: Relay[] = [];

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((upstream) => upstream.close()));
    await Promise.all(relays.splice(0).map((relay) => relay.close()));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  async function remoteUpstream(): Promise<{ upstream: Upstream; relay: Relay; server: Running }> {
    const server = await startListening([FIXTURE, '--http', '0']);
    servers.push(server);
    const relay = await startRelay(server.url);
    relays.push(relay);
    const upstream = upstreamOf(
      { name: 'remote', kind: 'http', url: relay.url },
      { restart: { initialDelayMs: 20, maxDelayMs: 100, maxRestarts: 1000 } },
    );
    await upstream.connect();
    return { upstream, relay, server };
  }

  it('keeps serving when only a stream broke: a ping tells the server is still there', async () => {
    const { upstream, relay } = await remoteUpstream();
    const seen = record(upstream);
    await relay.streaming();
    // One round trip later the client is reading the stream (its headers went out first).
    expect(textOf(await echo(upstream, 'before'))).toBe('before');
    const pinged = relay.answered('ping');
    relay.breakStreams();
    await pinged;
    expect(textOf(await echo(upstream, 'still'))).toBe('still');
    expect(upstream.state).toBe('ready');
    expect(seen).toEqual([]);
  });

  it('notices by itself that the server went away, reconnects to the one that replaced it, and serves again', async () => {
    const { upstream, relay, server } = await remoteUpstream();
    const seen = record(upstream);
    const dropped = entering(upstream, 'restarting');
    await server.stop();
    await dropped;
    expect(upstream.failure?.message).toMatch(/^upstream remote connection lost: /);

    const back = recovered(upstream);
    const replacement = await startListening([FIXTURE, '--http', '0']);
    servers.push(replacement);
    relay.target = replacement.url;
    await back;
    expect(upstream.state).toBe('ready');
    expect(upstream.generation).toBeGreaterThan(1);
    expect(seen[0]).toBe('restarting');
    expect(seen.at(-1)).toBe('ready');
    expect(seen.slice(1, -1).every((state) => state === 'starting' || state === 'failed')).toBe(true);
    expect(textOf(await echo(upstream, 'back'))).toBe('back');
  });
});

describe('describing tools', () => {
  it('reads every page of tools/list', async () => {
    const upstream = upstreamOf(stdio('paged'), { restart: { initialDelayMs: 10, maxDelayMs: 10 } });
    await upstream.connect();
    expect((await upstream.describeTool('echo'))?.name).toBe('echo');
    expect((await upstream.describeTool('exit'))?.name).toBe('exit');
    expect(await upstream.describeTool('missing')).toBeUndefined();
  });
});

describe('the restart budget', () => {
  const policy = { maxRestarts: 2, initialDelayMs: 100, maxDelayMs: 300, factor: 2, stableAfterMs: 1000 };

  it('numbers each restart and backs off, until the budget is spent', () => {
    expect(nextRestart(policy, 0)).toEqual({ attempt: 1, delayMs: 100 });
    expect(nextRestart(policy, 1)).toEqual({ attempt: 2, delayMs: 200 });
    expect(nextRestart(policy, 2)).toBeUndefined();
    expect(nextRestart({ ...policy, maxRestarts: 5 }, 4)).toEqual({ attempt: 5, delayMs: 300 });
  });

  it('is earned back by staying up', () => {
    expect(restartsInARow(policy, 2, 1000)).toBe(2);
    expect(restartsInARow(policy, 2, 1001)).toBe(0);
  });
});
