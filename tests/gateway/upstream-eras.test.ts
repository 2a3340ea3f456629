import { fileURLToPath } from 'node:url';
import type { ClientCapabilities } from '@modelcontextprotocol/client';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callLeg } from './era-2026-07-28.ts';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { BIN, NODE, ROOT, type Running, startListening } from './processes.ts';

/**
 * The gateway speaks to each upstream in the newest revision it supports: a
 * server that speaks only 2026-07-28 (the SDK's `legacy: 'reject'`) is
 * fronted for clients of either era, over stdio and as a URL; each request
 * tells it the real client's identity and capabilities; its input rounds
 * reach a 2025-era client as server-to-client requests and a 2026-07-28
 * client as rounds of its own; a capability the client did not declare is
 * refused -32021 by the server, and the gateway passes that on. A 2025-era
 * server that ends on, or ignores, the probe is started again and spoken to
 * in the 2025 handshake.
 */

const MODERN_ONLY = fileURLToPath(new URL('../fixtures/servers/modern-only.ts', import.meta.url));
const STRICT_LEGACY = fileURLToPath(new URL('../fixtures/servers/strict-legacy.ts', import.meta.url));

type Era = '2025-11-25' | '2026-07-28';

function clientOf(era: Era, capabilities: ClientCapabilities): Client {
  const client = new Client(
    { name: 'era-test-client', version: '7.1.0' },
    {
      capabilities,
      ...(era === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
    },
  );
  if (capabilities.sampling) {
    client.setRequestHandler('sampling/createMessage', async (request) => {
      const [message] = request.params.messages;
      const asked = message?.content && 'text' in message.content ? message.content.text : '';
      return { role: 'assistant', model: 'test', content: { type: 'text', text: `an answer to ${asked}` } };
    });
  }
  return client;
}

function textOf(result: unknown): string {
  const [block] = (result as { content: { type: string; text?: string }[] }).content;
  return block?.text ?? '';
}

interface Front {
  name: string;
  start(): Promise<void>;
  connect(client: Client): Promise<void>;
  stop(): Promise<void>;
}

const stdioFront: Front = {
  name: 'stdio upstream, clients over stdio',
  async start() {},
  connect(client) {
    return client.connect(
      new StdioClientTransport({
        command: NODE,
        args: [BIN, 'proxy', '--', NODE, MODERN_ONLY],
        cwd: ROOT,
      }),
    );
  },
  async stop() {},
};

function urlFront(): Front {
  let upstream: Running | undefined;
  let gateway: Running | undefined;
  return {
    name: 'URL upstream, clients over HTTP',
    async start() {
      upstream = await startListening([MODERN_ONLY, '--http', '0']);
      const url = upstream.url;
      const dir = gatewayDir((config) => {
        config.upstreams = [{ name: 'modern', url: { url }, dialect: 'passthrough' }];
      });
      gateway = await startGatewayHttp(['--config', dir.config]);
    },
    connect(client) {
      if (!gateway) throw new Error('not started');
      return client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    },
    async stop() {
      await gateway?.stop();
      await upstream?.stop();
      removeGatewayDirs();
    },
  };
}

describe.each([stdioFront, urlFront()])('a 2026-07-28-only upstream: $name', (front) => {
  const clients: Client[] = [];

  beforeAll(() => front.start(), 30_000);
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    await front.stop();
  });

  async function connected(era: Era, capabilities: ClientCapabilities = {}): Promise<Client> {
    const client = clientOf(era, capabilities);
    clients.push(client);
    await front.connect(client);
    return client;
  }

  describe.each<Era>(['2025-11-25', '2026-07-28'])('a %s client', (era) => {
    it('lists and calls its tools and reads its resources', async () => {
      const client = await connected(era);
      const tools = (await client.listTools()).tools.map((tool) => tool.name);
      expect(tools).toEqual(expect.arrayContaining(['echo', 'whoami', 'ask_model']));
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'über 🌍' } }))).toBe('über 🌍');
      const read = await client.readResource({ uri: 'note://greeting' });
      expect(read.contents[0]).toMatchObject({ text: 'hello from a 2026 server' });
    });

    it("tells the upstream the client's own identity and capabilities", async () => {
      const client = await connected(era, { sampling: {} });
      const seen = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
      expect(seen.clientInfo).toMatchObject({ name: 'era-test-client', version: '7.1.0' });
      expect(seen.clientCapabilities).toEqual({ sampling: {} });
    });

    it("bridges the upstream's input round to the client that declared sampling", async () => {
      const client = await connected(era, { sampling: {} });
      const result = await client.callTool({ name: 'ask_model', arguments: { prompt: 'six times seven' } });
      expect(textOf(result)).toBe('model said: an answer to six times seven');
    });

    if (era === '2026-07-28') {
      it("relays the upstream's own round: its request keys, its state carried inside the gateway's", async () => {
        const client = await connected(era, { sampling: {} });
        const call = { name: 'ask_model', arguments: { prompt: 'by hand' } };
        const round = await callLeg(client, call);
        expect(round.resultType).toBe('input_required');
        expect(Object.keys(round.inputRequests ?? {})).toEqual(['reply']);
        const answer = { role: 'assistant', model: 'hand', content: { type: 'text', text: 'manual answer' } };
        const done = await callLeg(client, {
          ...call,
          inputResponses: { reply: answer },
          requestState: round.requestState,
        });
        expect(textOf(done as never)).toBe('model said: manual answer');
        // A state is bound to its call: another call cannot redeem it.
        const other = { name: 'ask_model', arguments: { prompt: 'something else' } };
        const refused = await callLeg(client, {
          ...other,
          inputResponses: { reply: answer },
          requestState: round.requestState,
        }).catch((error: unknown) => error);
        expect(refused).toMatchObject({ code: -32602 });
      });
    }

    it('passes on -32021 for a client that did not declare sampling, naming the capability', async () => {
      const client = await connected(era, {});
      const seen = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
      expect(seen.clientCapabilities).toEqual({});
      const error = await client
        .callTool({ name: 'ask_model', arguments: { prompt: 'q' } })
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
    });
  });
});

describe('2025-era stdio servers that do not answer the probe', () => {
  it.each([
    ['ends on it', []],
    ['leaves it unanswered', ['--ignore']],
  ])(
    'one that %s is started again and spoken to in the 2025 handshake',
    async (_how, flags) => {
      const client = new Client({ name: 'probe-test', version: '1.0.0' });
      try {
        await client.connect(
          new StdioClientTransport({
            command: NODE,
            args: [BIN, 'proxy', '--', NODE, STRICT_LEGACY, ...flags],
            cwd: ROOT,
            stderr: 'pipe',
          }),
        );
        expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'still here' } }))).toBe(
          'still here',
        );
      } finally {
        await client.close();
      }
    },
    30_000,
  );

  it('a pinned revision the server does not speak fails the start, saying so', async () => {
    const client = new Client({ name: 'pin-test', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: NODE,
      args: [BIN, 'proxy', '--protocol', '2026-07-28', '--', NODE, STRICT_LEGACY],
      cwd: ROOT,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const error = await client.connect(transport).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(stderr).toMatch(/2026-07-28/);
    await client.close().catch(() => {});
  }, 30_000);
});
