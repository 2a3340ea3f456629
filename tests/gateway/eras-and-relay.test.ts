import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpGateway } from '../../src/gateway/http/server.ts';
import { type ClientSession, openClientSession } from '../../src/gateway/relay/client-session.ts';
import { UpstreamFleet } from '../../src/gateway/relay/upstream-fleet.ts';
import {
  BIN,
  FIXTURE,
  NODE,
  postInitialize,
  ROOT,
  type Running,
  startListening,
  startProxyHttp,
} from './processes.ts';

function textOf(result: { content?: unknown }): string {
  return (result.content as { text?: string }[] | undefined)?.[0]?.text ?? '';
}

describe('the 2026-07-28 era through the gateway', () => {
  let proxy: Running;

  beforeAll(async () => {
    proxy = await startProxyHttp();
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  it('serves a pinned 2026-07-28 client statelessly over HTTP', async () => {
    const client = new Client(
      { name: 'modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    try {
      expect(client.getProtocolEra()).toBe('modern');
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'modern http' } });
      expect(echo.structuredContent).toEqual({ text: 'modern http' });
      const read = await client.readResource({ uri: 'test://static-text' });
      expect((read.contents[0] as { text: string }).text).toContain('static text resource');
    } finally {
      await client.close();
    }
  });

  it('serves a 2026-07-28 client over stdio', async () => {
    const client = new Client(
      { name: 'modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StdioClientTransport({ command: NODE, args: [BIN, 'proxy', '--', NODE, FIXTURE], cwd: ROOT }),
    );
    try {
      expect(client.getProtocolEra()).toBe('modern');
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'modern stdio' } });
      expect(textOf(echo)).toBe('modern stdio');
    } finally {
      await client.close();
    }
  });
});

describe('a relay over several upstreams', () => {
  let session: ClientSession;
  let client: Client;

  beforeAll(async () => {
    session = await openClientSession(
      new UpstreamFleet({
        upstreams: [
          { name: 'alpha', kind: 'stdio', command: NODE, args: [FIXTURE] },
          { name: 'beta', kind: 'stdio', command: NODE, args: [FIXTURE] },
        ],
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await session.relay.server.connect(serverSide);
    client = new Client({ name: 'multi', version: '1.0.0' });
    await client.connect(clientSide);
  });

  afterAll(async () => {
    await client?.close();
    await session?.close();
  });

  it('namespaces tools and prompts as <upstream>__<name> and routes calls by the prefix', async () => {
    const tools = await client.listTools();
    const names = tools.tools.map((tool) => tool.name);
    expect(names).toContain('alpha__echo');
    expect(names).toContain('beta__echo');
    expect(names).not.toContain('echo');
    const [alphaPid, betaPid] = await Promise.all([
      client.callTool({ name: 'alpha__pid', arguments: {} }),
      client.callTool({ name: 'beta__pid', arguments: {} }),
    ]);
    expect(textOf(alphaPid)).toBe(String(session.upstreams[0]?.pid));
    expect(textOf(betaPid)).toBe(String(session.upstreams[1]?.pid));
    const prompts = await client.listPrompts();
    expect(prompts.prompts.map((prompt) => prompt.name)).toContain('beta__test_simple_prompt');
    const prompt = await client.getPrompt({ name: 'beta__test_simple_prompt' });
    expect(prompt.messages).toHaveLength(1);
  });

  it('answers an unknown namespace with NOT_FOUND', async () => {
    const error = await client.callTool({ name: 'gamma__echo', arguments: {} }).catch((e: unknown) => e);
    expect((error as { data?: { canonical_code?: string } }).data?.canonical_code).toBe('NOT_FOUND');
  });

  it('passes a downstream cancellation on to the upstream', async () => {
    const controller = new AbortController();
    // The upstream reports progress once the call has reached it: only then is there something to cancel.
    const call = client
      .callTool(
        { name: 'alpha__slow', arguments: { ms: 5000 } },
        { signal: controller.signal, onprogress: () => controller.abort() },
      )
      .catch((e: unknown) => e);
    expect(await call).toBeInstanceOf(Error);
    // The client sent the cancellation before giving up on the call, and the gateway passes it
    // upstream as it takes it in: ahead of this next call on the same upstream.
    expect(textOf(await client.callTool({ name: 'alpha__cancellations', arguments: {} }))).toBe('1');
  });
});

describe('a relay over upstreams that offer different things', () => {
  it('lists prompts and resources from the upstreams that have them, and skips the others', async () => {
    const session = await openClientSession(
      new UpstreamFleet({
        upstreams: [
          { name: 'full', kind: 'stdio', command: NODE, args: [FIXTURE] },
          {
            name: 'tools',
            kind: 'stdio',
            command: NODE,
            args: [join(ROOT, 'examples/prov-envelope-server.ts')],
          },
        ],
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await session.relay.server.connect(serverSide);
    const client = new Client({ name: 'mixed', version: '1.0.0' });
    try {
      await client.connect(clientSide);
      expect(session.upstreams[1]?.capabilities.prompts).toBeUndefined();
      const prompts = await client.listPrompts();
      expect(prompts.prompts.map((prompt) => prompt.name)).toContain('full__test_simple_prompt');
      const resources = await client.listResources();
      // Namespaced by its upstream, as every URI of several upstreams (relay/namespace.ts).
      expect(resources.resources.map((resource) => resource.uri)).toContain('test://full/static-text');
      await client.setLoggingLevel('info');
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      expect(tools.some((name) => name.startsWith('tools__'))).toBe(true);
    } finally {
      await client.close();
      await session.close();
    }
  });
});

describe('a relay in front of a remote Streamable HTTP upstream', () => {
  let remote: Running;
  let session: ClientSession;
  let client: Client;

  beforeAll(async () => {
    remote = await startListening([FIXTURE, '--http', '0']);
    session = await openClientSession(
      new UpstreamFleet({ upstreams: [{ name: 'remote', kind: 'http', url: remote.url }] }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await session.relay.server.connect(serverSide);
    client = new Client({ name: 'remote-test', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler('sampling/createMessage', async () => ({
      role: 'assistant',
      model: 'm',
      content: { type: 'text', text: 'sampled downstream' },
    }));
    await client.connect(clientSide);
  });

  afterAll(async () => {
    await client?.close();
    await session?.close();
    await remote?.stop();
  });

  it('relays calls, progress and server-to-client requests over HTTP', async () => {
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'remote' } });
    expect(echo.structuredContent).toEqual({ text: 'remote' });
    const seen: number[] = [];
    await client.callTool(
      { name: 'test_tool_with_progress', arguments: {} },
      { onprogress: (progress) => seen.push(progress.progress) },
    );
    expect(seen.slice(0, 2)).toEqual([0, 50]);
    const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'p' } });
    expect(textOf(sampled)).toBe('LLM response: sampled downstream');
  });

  it('fails calls promptly once the remote is gone', async () => {
    await remote.stop();
    const error = await client.callTool({ name: 'echo', arguments: { text: 'x' } }).catch((e: unknown) => e);
    expect((error as { data?: { canonical_code?: string } }).data?.canonical_code).toBe(
      'ADAPTER.EXECUTION.FAILED',
    );
  });
});

describe('an upstream that never answers initialize', () => {
  // The test's own timeout is below the 15 s default, so it passes only if startTimeoutMs is honoured.
  it('fails the session within the start timeout', { timeout: 8000 }, async () => {
    const error = await openClientSession(
      new UpstreamFleet({
        upstreams: [{ name: 'stuck', kind: 'stdio', command: NODE, args: [FIXTURE, '--hang'] }],
        upstream: { startTimeoutMs: 500 },
      }),
    ).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('ADAPTER.EXECUTION.FAILED');
  });
});

describe('HTTP sessions with resumable streams', () => {
  it('stamps SSE events with ids for Last-Event-ID, and still serves calls', async () => {
    const gateway = await startHttpGateway({
      fleet: new UpstreamFleet({
        upstreams: [{ name: 'fixture', kind: 'stdio', command: NODE, args: [FIXTURE] }],
      }),
      resumable: true,
      retryIntervalMs: 750,
      warmSpare: false,
    });
    try {
      const response = await postInitialize(gateway.url, 'r');
      const body = await response.text();
      expect(body).toMatch(/^id: \S+/m);
      const client = new Client({ name: 'resumable', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'resumable' } });
      expect(echo.structuredContent).toEqual({ text: 'resumable' });
      await client.close();
    } finally {
      await gateway.close();
    }
  });
});
