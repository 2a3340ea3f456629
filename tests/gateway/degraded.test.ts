import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { afterAll, describe, expect, it } from 'vitest';
import { startHttpGateway } from '../../src/gateway/http/server.ts';
import { readLatestCallLogs } from '../../src/gateway/operations/call-log.ts';
import { openClientSession } from '../../src/gateway/relay/client-session.ts';
import { UpstreamFleet } from '../../src/gateway/relay/upstream-fleet.ts';
import { printed, within } from './events.ts';
import { type GatewayDir, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { FIXTURE, gatewayStdio, NODE, postInitialize, type Running } from './processes.ts';

/**
 * Several upstreams, some of which cannot start: sessions open with the ones
 * that did, the others are retried in the background, left out of lists, and
 * calls to them fail with the reason; when they come back they serve again and
 * the client is told its lists changed. With none started, sessions still fail.
 */

interface ProvEnvelope {
  result: unknown;
  errors?: { code: string; message: string; details?: Record<string, unknown> }[];
}
const envelopeOf = (result: unknown) => (result as { structuredContent: ProvEnvelope }).structuredContent;

/** Holds the files whose presence keeps the fixture from starting. */
const scratch = mkdtempSync(join(tmpdir(), 'mcp-envelope-degraded-'));

/** A blocking file for one test, present until the test removes it. */
function blockerFile(name: string): string {
  const file = join(scratch, name);
  writeFileSync(file, '');
  return file;
}

/**
 * The fixture server behind a guard that exits 3 while `blocker` exists: a server
 * whose dependency is not there yet. The guard is a shell, so a refused start
 * costs no Node process and the retries stay cheap.
 */
function guarded(blocker: string): { command: string; args: string[] } {
  const script = 'if [ -e "$1" ]; then echo "not ready: $1 exists" >&2; exit 3; fi; exec "$2" "$3"';
  return { command: 'sh', args: ['-c', script, 'guard', blocker, NODE, FIXTURE] };
}

/**
 * A gateway configuration: alpha starts; beta (envelope mode) and gamma
 * (passthrough) fail while `blocker` exists, and retry every 200 ms at most.
 */
function degradedConfig(blocker: string, count = 3): GatewayDir {
  const fast = { initialDelayMs: 50, maxDelayMs: 200, factor: 2, maxAttempts: 1000 };
  return gatewayDir((config) => {
    config.upstreams = [
      { name: 'alpha', stdio: { command: 'node', args: [FIXTURE] }, dialect: 'prov-v0.1' },
      { name: 'beta', stdio: guarded(blocker), dialect: 'prov-v0.1', restart: fast },
      { name: 'gamma', stdio: guarded(blocker), dialect: 'passthrough', restart: fast },
    ].slice(0, count);
    config.auth = { required: false, tokens: [] };
  });
}

/**
 * Counts the client's tools/list_changed notifications. The gateway sends one
 * for each upstream that comes back; `reached(n)` waits (bounded) for the n-th.
 */
function listChanges(client: Client): { reached(count: number): Promise<void> } {
  let seen = 0;
  const waiting = new Set<() => void>();
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    seen++;
    for (const wake of waiting) wake();
  });
  return {
    reached(count) {
      const arrived = new Promise<void>((resolve) => {
        const wake = () => {
          if (seen < count) return;
          waiting.delete(wake);
          resolve();
        };
        waiting.add(wake);
        wake();
      });
      return within(arrived, 10_000, `tools/list_changed number ${count}`);
    },
  };
}

afterAll(() => {
  removeGatewayDirs();
  rmSync(scratch, { recursive: true, force: true });
});

describe('over HTTP, with two of three upstreams unable to start', () => {
  let gateway: Running | undefined;
  let client: Client | undefined;

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
  });

  it('serves the one that started, fails calls to the others with the reason, and takes them back', async () => {
    const blocker = blockerFile('http');
    const paths = degradedConfig(blocker);
    gateway = await startGatewayHttp(['--config', paths.config, '--no-stdio']);
    client = new Client({ name: 'degraded', version: '1.0.0' });
    const changes = listChanges(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));

    const before = (await client.listTools()).tools.map((tool) => tool.name);
    expect(before).toContain('alpha__echo');
    expect(before.filter((name) => !name.startsWith('alpha__'))).toEqual([]);

    const alpha = await client.callTool({ name: 'alpha__echo', arguments: { text: 'up' } });
    expect(envelopeOf(alpha).result).toEqual({ text: 'up' });

    // Envelope mode: an error envelope naming the upstream and why it did not start.
    const beta = await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } });
    expect(beta.isError).toBe(true);
    const failure = envelopeOf(beta).errors?.[0];
    expect(failure?.code).toBe('ADAPTER.EXECUTION.FAILED');
    expect(failure?.message).toMatch(/upstream beta did not start: exited with code 3/);
    expect(failure?.details).toMatchObject({ exit_code: 3 });
    expect(String(failure?.details?.stderr_excerpt)).toContain('not ready');

    // Passthrough: a JSON-RPC error carrying the canonical code.
    const gamma = await client
      .callTool({ name: 'gamma__echo', arguments: { text: 'x' } })
      .catch((e: unknown) => e);
    expect(gamma).toBeInstanceOf(ProtocolError);
    expect((gamma as ProtocolError).message).toMatch(/upstream gamma did not start/);
    expect((gamma as ProtocolError).data).toMatchObject({
      canonical_code: 'ADAPTER.EXECUTION.FAILED',
      upstream: 'gamma',
    });

    const running = gateway;
    await printed(running, /upstream beta did not start.*serving without it/);
    expect(running.stderr()).toMatch(/upstream beta did not start: exited with code 3 \(stderr: not ready: /);

    rmSync(blocker);
    // One notification for beta coming back, one for gamma.
    await changes.reached(2);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['beta__echo', 'gamma__echo']));
    const back = await client.callTool({ name: 'beta__echo', arguments: { text: 'back' } });
    expect(envelopeOf(back).result).toEqual({ text: 'back' });
    const passed = await client.callTool({ name: 'gamma__echo', arguments: { text: 'back' } });
    expect(passed.structuredContent).toEqual({ text: 'back' });
    // stderr is a pipe of its own, which need not have caught up with the notifications.
    await printed(running, /upstream beta is back/);

    await client.close();
    await gateway.stop();
    const log = readLatestCallLogs(join(paths.logs, 'gateway'));
    expect(log.map((line) => [line.upstream, line.tool, line.code])).toEqual([
      ['alpha', 'echo', null],
      ['beta', 'echo', 'ADAPTER.EXECUTION.FAILED'],
      ['gamma', 'echo', 'ADAPTER.EXECUTION.FAILED'],
      ['beta', 'echo', null],
      ['gamma', 'echo', null],
    ]);
  });
});

describe('over stateless HTTP (2026-07-28), with one of two upstreams unable to start', () => {
  let gateway: Running | undefined;
  let client: Client | undefined;

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
  });

  it('serves the one that started and tells listen streams when the other is back', async () => {
    const blocker = blockerFile('modern');
    gateway = await startGatewayHttp(['--config', degradedConfig(blocker, 2).config, '--no-stdio']);
    client = new Client(
      { name: 'degraded-modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    const changes = listChanges(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    expect(client.getProtocolEra()).toBe('modern');
    const listening = await client.listen({ toolsListChanged: true });
    const before = (await client.listTools()).tools.map((tool) => tool.name);
    expect(before).toContain('alpha__echo');
    expect(before.filter((name) => !name.startsWith('alpha__'))).toEqual([]);
    const beta = await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } });
    expect(envelopeOf(beta).errors?.[0]?.code).toBe('ADAPTER.EXECUTION.FAILED');

    rmSync(blocker);
    // On the listen stream.
    await changes.reached(1);
    const back = await client.callTool({ name: 'beta__echo', arguments: { text: 'back' } });
    expect(envelopeOf(back).result).toEqual({ text: 'back' });
    await listening.close();
  });
});

describe('over stdio, with one of two upstreams unable to start', () => {
  it('starts, serves the upstream that did, and announces the other when it is back', async () => {
    const blocker = blockerFile('stdio');
    const paths = degradedConfig(blocker, 2);
    const client = new Client({ name: 'degraded-stdio', version: '1.0.0' });
    const changes = listChanges(client);
    await client.connect(gatewayStdio(paths.config, { args: ['--stdio', '--no-http'] }));
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain('alpha__echo');
      expect(names.some((name) => name.startsWith('beta__'))).toBe(false);
      const beta = await client.callTool({ name: 'beta__echo', arguments: { text: 'x' } });
      expect(envelopeOf(beta).errors?.[0]?.code).toBe('ADAPTER.EXECUTION.FAILED');

      rmSync(blocker);
      await changes.reached(1);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('beta__echo');
      const back = await client.callTool({ name: 'beta__echo', arguments: { text: 'back' } });
      expect(envelopeOf(back).result).toEqual({ text: 'back' });
    } finally {
      await client.close();
    }
  });
});

describe('an upstream waiting out a long backoff', () => {
  // The test's own timeout is far below the backoff: only a call that fails at once can pass.
  it('fails calls to it at once, not after the next attempt', { timeout: 5000 }, async () => {
    const session = await openClientSession(
      new UpstreamFleet({
        upstreams: [
          { name: 'alpha', kind: 'stdio', command: NODE, args: [FIXTURE] },
          {
            name: 'beta',
            kind: 'stdio',
            ...guarded(blockerFile('slow')),
            options: { restart: { initialDelayMs: 60_000 } },
          },
        ],
      }),
    );
    const client = new Client({ name: 'backoff', version: '1.0.0' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await session.relay.server.connect(serverSide);
    await client.connect(clientSide);
    try {
      const error = await client
        .callTool({ name: 'beta__echo', arguments: { text: 'x' } })
        .catch((e: unknown) => e);
      expect((error as ProtocolError).data).toMatchObject({ canonical_code: 'ADAPTER.EXECUTION.FAILED' });
      expect(
        (await client.callTool({ name: 'alpha__echo', arguments: { text: 'ok' } })).structuredContent,
      ).toEqual({
        text: 'ok',
      });
    } finally {
      await client.close();
      await session.close();
    }
  });
});

describe('an upstream that never comes back', () => {
  let gateway: Running | undefined;

  afterAll(async () => {
    await gateway?.stop();
  });

  it('says when its restart budget is spent, and keeps serving the others', async () => {
    const blocker = blockerFile('never');
    const paths = gatewayDir((config) => {
      config.upstreams = [
        { name: 'alpha', stdio: { command: 'node', args: [FIXTURE] }, dialect: 'prov-v0.1' },
        {
          name: 'beta',
          stdio: guarded(blocker),
          dialect: 'prov-v0.1',
          restart: { initialDelayMs: 20, maxDelayMs: 40, factor: 2, maxAttempts: 2 },
        },
      ];
      config.auth = { required: false, tokens: [] };
    });
    gateway = await startGatewayHttp(['--config', paths.config, '--no-stdio']);
    await printed(gateway, /upstream beta gave up after 2 restart attempts/);
    const client = new Client({ name: 'after-give-up', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    try {
      const alpha = await client.callTool({ name: 'alpha__echo', arguments: { text: 'still' } });
      expect(envelopeOf(alpha).result).toEqual({ text: 'still' });
    } finally {
      await client.close();
    }
  });
});

describe('with every upstream unable to start', () => {
  const blocker = blockerFile('forever');
  const failing = (name: string) => ({
    name,
    kind: 'stdio' as const,
    ...guarded(blocker),
    options: { restart: { initialDelayMs: 10_000 } },
  });

  it('fails the session, naming the first upstream', async () => {
    const error = await openClientSession(
      new UpstreamFleet({ upstreams: [failing('one'), failing('two')] }),
    ).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('ADAPTER.EXECUTION.FAILED');
    expect((error as Error).message).toMatch(/upstream one did not start/);
  });

  it('answers an HTTP initialize with 502 ADAPTER.EXECUTION.FAILED', async () => {
    const gateway = await startHttpGateway({
      fleet: new UpstreamFleet({ upstreams: [failing('one'), failing('two')] }),
      warmSpare: false,
    });
    try {
      const response = await postInitialize(gateway.url, 'x');
      expect(response.status).toBe(502);
      const body = (await response.json()) as { error: { data: { canonical_code: string } } };
      expect(body.error.data.canonical_code).toBe('ADAPTER.EXECUTION.FAILED');
    } finally {
      await gateway.close();
    }
  });
});
