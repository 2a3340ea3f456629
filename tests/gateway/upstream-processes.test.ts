import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Upstream } from '../../src/gateway/upstreams/upstream.ts';
import { startGatewayHttp } from './gateway-process.ts';
import { BIN, gatewayStdio, NODE, ROOT } from './processes.ts';

/**
 * The processes behind stdio upstreams: what they inherit, that they end as a
 * group (wrappers and what they started included), that a start that runs out
 * of time ends at its deadline, and that the gateway's own end, by signal or
 * by losing its client, takes them along.
 */

const PROCESSES = fileURLToPath(new URL('../fixtures/servers/processes.ts', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'mcp-envelope-upstream-processes-'));
const pids: number[] = [];
const children: ChildProcess[] = [];
const upstreams: Upstream[] = [];
let files = 0;

afterEach(async () => {
  await Promise.all(upstreams.splice(0).map((upstream) => upstream.close()));
  // Whatever a failed test left behind.
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function scratchFile(name: string): string {
  return join(scratch, `${++files}-${name}`);
}

/** The state field of /proc/<pid>/stat, undefined once the process is gone. */
function procState(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state = '', , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state, pgrp: Number(pgrp) };
  } catch {
    return undefined;
  }
}

/** Gone, or a zombie no one will reap (this container's init does not): either way, not running. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = procState(pid)?.state;
  return state !== 'Z' && state !== 'X';
}

/** The running members of a process group. */
function groupMembers(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => procState(pid)?.pgrp === pgid && running(pid));
}

/**
 * Whether `done` comes true within `ms`. Processes that are not this test's
 * children cannot be awaited, so they are looked at until then.
 */
async function until(done: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return true;
}

/** The fixture's pids, once it has written them. */
async function pidsIn(file: string): Promise<{ pid: number; grandchild?: number }> {
  expect(await until(() => existsSync(file))).toBe(true);
  const found = JSON.parse(readFileSync(file, 'utf8')) as { pid: number; grandchild?: number };
  pids.push(found.pid, ...(found.grandchild ? [found.grandchild] : []));
  return found;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

/** The fixture behind `sh -c`, as a launcher script runs a server: sh stays its parent. */
function wrapped(...flags: string[]): { command: string; args: string[] } {
  return { command: '/bin/sh', args: ['-c', '"$@"; echo wrapper done >&2', 'sh', NODE, PROCESSES, ...flags] };
}

/** A gateway configuration with one stdio upstream. */
function configWith(stdio: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const file = scratchFile('gateway.config.json');
  writeFileSync(
    file,
    JSON.stringify({
      upstreams: [{ name: 'proc', stdio, dialect: 'passthrough', ...extra }],
      listen: { stdio: false },
      ledger: { enabled: false },
      logs: { enabled: false },
    }),
  );
  return file;
}

const textOf = (result: unknown) => (result as { content: { text: string }[] }).content[0]?.text ?? '';

describe('the environment of an upstream', () => {
  it('holds its configured env and the safe base, never the gateway’s tokens', async () => {
    const config = JSON.parse(readFileSync(configWith({ command: NODE, args: [PROCESSES] }), 'utf8'));
    config.upstreams[0].stdio.env = { CONFIGURED: 'from-config' };
    config.auth = { tokens: [{ name: 'ci', tokenEnv: 'MCP_ENVELOPE_TEST_CI_TOKEN', tier: 'pro' }] };
    const file = scratchFile('env.config.json');
    writeFileSync(file, JSON.stringify(config));
    const client = new Client({ name: 'env-test', version: '1.0.0' });
    await client.connect(
      gatewayStdio(file, {
        args: ['--stdio', '--no-http'],
        env: {
          ...process.env,
          MCP_ENVELOPE_TEST_CI_TOKEN: 'a-bearer-token-that-must-not-leak',
          UNRELATED_API_KEY: 'neither-this',
        } as Record<string, string>,
      }),
    );
    try {
      const env = JSON.parse(textOf(await client.callTool({ name: 'env', arguments: {} }))) as Record<
        string,
        string
      >;
      expect(env.CONFIGURED).toBe('from-config');
      expect(env.PATH).toBe(process.env.PATH);
      expect(env).not.toHaveProperty('MCP_ENVELOPE_TEST_CI_TOKEN');
      expect(env).not.toHaveProperty('UNRELATED_API_KEY');
      expect(Object.values(env)).not.toContain('a-bearer-token-that-must-not-leak');
    } finally {
      await client.close();
    }
  });
});

describe.skipIf(process.platform === 'win32')('the processes of an upstream', () => {
  it('are ended at the start deadline, wrapper and all, and the start fails then', async () => {
    const pidFile = scratchFile('pids.json');
    const upstream = new Upstream(
      { name: 'stuck', kind: 'stdio', ...wrapped('--mute', '--stubborn', '--pid-file', pidFile) },
      { startTimeoutMs: 1000, restart: { initialDelayMs: 60_000 } },
    );
    upstreams.push(upstream);
    const refused = await upstream.connect().catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'ADAPTER.EXECUTION.FAILED' });
    expect((refused as Error).message).toMatch(/^upstream stuck did not start: /);
    expect(upstream.state).toBe('failed');
    // sh led the group; nothing of it is left, the server that ignores SIGTERM included.
    expect(groupMembers(upstream.pid ?? 0)).toEqual([]);
    if (existsSync(pidFile)) expect(running((await pidsIn(pidFile)).pid)).toBe(false);
  }, 20_000);

  it('go with the gateway when it is stopped while an upstream is still starting', async () => {
    const pidFile = scratchFile('pids.json');
    const stdio = wrapped('--mute', '--stubborn', '--pid-file', pidFile);
    const config = configWith(stdio, { timeouts: { startMs: 600_000 } });
    const gateway = spawn(NODE, [BIN, 'gateway', '--config', config, '--http', '127.0.0.1:0'], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(gateway);
    const { pid } = await pidsIn(pidFile);
    gateway.kill('SIGTERM');
    await exited(gateway);
    expect(await until(() => !running(pid))).toBe(true);
  }, 20_000);

  it('go with the gateway on SIGTERM even when the server ignores SIGTERM and the end of stdin', async () => {
    const pidFile = scratchFile('pids.json');
    const config = configWith(wrapped('--stubborn', '--pid-file', pidFile));
    const gateway = await startGatewayHttp(['--config', config]);
    children.push(gateway.child);
    const { pid } = await pidsIn(pidFile);
    gateway.child.kill('SIGTERM');
    await exited(gateway.child);
    expect(await until(() => !running(pid))).toBe(true);
  }, 20_000);
});

/** `proxy [PROXY FLAGS] -- node processes.ts FLAGS` on stdio, spoken to line by line. */
async function proxyOn(
  flags: string[] = [],
  proxyFlags: string[] = [],
  env: NodeJS.ProcessEnv = process.env,
) {
  const proxy = spawn(NODE, [BIN, 'proxy', ...proxyFlags, '--', NODE, PROCESSES, ...flags], {
    cwd: ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(proxy);
  // Writes after the client is gone fail; that is the point of these tests.
  proxy.stdin.on('error', () => {});
  const waiting = new Map<number, (message: { result?: unknown }) => void>();
  let buffer = '';
  proxy.stdout.setEncoding('utf8');
  proxy.stdout.on('data', (text: string) => {
    buffer += text;
    for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
      const message = JSON.parse(buffer.slice(0, at)) as { id?: number; result?: unknown };
      buffer = buffer.slice(at + 1);
      if (message.id !== undefined) waiting.get(message.id)?.(message);
    }
  });
  const send = (message: Record<string, unknown>) =>
    proxy.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  const request = (id: number, method: string, params: Record<string, unknown> = {}) => {
    const answer = new Promise<{ result?: unknown }>((resolve) => waiting.set(id, resolve));
    send({ id, method, params });
    return answer;
  };
  await request(1, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'dying-client', version: '1' },
  });
  send({ method: 'notifications/initialized' });
  const upstream = JSON.parse(
    textOf((await request(2, 'tools/call', { name: 'pids', arguments: {} })).result),
  ) as { pid: number; grandchild?: number };
  pids.push(upstream.pid, ...(upstream.grandchild ? [upstream.grandchild] : []));
  return { proxy, upstream, send, request };
}

describe('the environment of a proxied upstream', () => {
  it('holds what --env names, from the proxy’s environment or given, and not the rest', async () => {
    const { proxy, request } = await proxyOn(
      ['--pid-file', scratchFile('pids.json')],
      ['--env', 'PASSED', '--env', 'GIVEN=here'],
      {
        ...process.env,
        PASSED: 'from-the-proxy',
        NOT_PASSED: 'stays-with-the-proxy',
      },
    );
    const env = JSON.parse(
      textOf((await request(3, 'tools/call', { name: 'env', arguments: {} })).result),
    ) as Record<string, string>;
    proxy.stdin.end();
    await exited(proxy);
    expect(env.PASSED).toBe('from-the-proxy');
    expect(env.GIVEN).toBe('here');
    expect(env).not.toHaveProperty('NOT_PASSED');
  }, 20_000);
});

describe.skipIf(process.platform === 'win32')('the stdio proxy whose client goes away', () => {
  it('shuts down with its upstream’s group when both pipes close during a call', async () => {
    const { proxy, upstream, send } = await proxyOn(['--grandchild']);
    send({ id: 3, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    proxy.stdin.destroy();
    proxy.stdout.destroy();
    await exited(proxy);
    expect(await until(() => !running(upstream.pid))).toBe(true);
    expect(await until(() => !running(upstream.grandchild ?? 0))).toBe(true);
  }, 20_000);

  it('shuts down when its client stops reading: the next answer meets a broken pipe', async () => {
    const { proxy, upstream, send } = await proxyOn();
    send({ id: 3, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    proxy.stdout.destroy();
    send({ id: 4, method: 'ping' });
    await exited(proxy);
    expect(await until(() => !running(upstream.pid))).toBe(true);
  }, 20_000);
});
