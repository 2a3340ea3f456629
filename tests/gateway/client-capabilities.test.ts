import { fileURLToPath } from 'node:url';
import type { ClientCapabilities } from '@modelcontextprotocol/client';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { BIN, NODE, ROOT, type Running } from './processes.ts';

/**
 * An upstream is told only what its clients declared. The fixture lists
 * `ask_model` only to a client that declared sampling (as servers that
 * register tools by client capability do) and says what its client told it
 * (`whoami`). Two clients of one principal (one bearer token) with different
 * capabilities are served by different upstream processes, each told its
 * clients' capabilities: the one without sampling never sees the sampling
 * tool, the one with it sees it and answers its requests, in either era. An
 * upstream started for one session alone (`sharing: per-session`) is also told
 * who the client is.
 */

const STRICT_LEGACY = fileURLToPath(new URL('../fixtures/servers/strict-legacy.ts', import.meta.url));
const TOKEN = 'capabilities-token-0123456789';

type Era = '2025-11-25' | '2026-07-28';

let gateway: Running;
const clients: Client[] = [];

beforeAll(async () => {
  const dir = gatewayDir((config) => {
    config.upstreams = [
      { name: 'shared', stdio: { command: NODE, args: [STRICT_LEGACY] }, dialect: 'passthrough' },
      {
        name: 'own',
        stdio: { command: NODE, args: [STRICT_LEGACY] },
        dialect: 'passthrough',
        sharing: 'per-session',
      },
    ];
    config.auth = { tokens: [{ name: 'team', token: TOKEN, tier: 'community' }] };
  });
  gateway = await startGatewayHttp(['--config', dir.config]);
}, 30_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => {})));
  await gateway?.stop();
  removeGatewayDirs();
});

async function connected(era: Era, name: string, capabilities: ClientCapabilities): Promise<Client> {
  const client = new Client(
    { name, version: '3.2.1' },
    { capabilities, ...(era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {}) },
  );
  if (capabilities.sampling) {
    client.setRequestHandler('sampling/createMessage', async () => ({
      role: 'assistant',
      model: 'test',
      content: { type: 'text', text: `sampled by ${name}` },
    }));
  }
  clients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway.url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  );
  return client;
}

function textOf(result: unknown): string {
  return (result as { content: { text?: string }[] }).content[0]?.text ?? '';
}

describe.each<Era>(['2025-11-25', '2026-07-28'])('clients of one principal, %s', (era) => {
  it('a client without sampling sees no sampling tool; one with it sees it and answers its request', async () => {
    const plain = await connected(era, `plain-${era}`, {});
    const sampler = await connected(era, `sampler-${era}`, { sampling: {} });
    const plainTools = (await plain.listTools()).tools.map((tool) => tool.name);
    const samplerTools = (await sampler.listTools()).tools.map((tool) => tool.name);
    expect(plainTools).toEqual(expect.arrayContaining(['shared__echo', 'own__echo']));
    expect(plainTools.filter((name) => name.endsWith('ask_model'))).toEqual([]);
    expect(samplerTools).toEqual(expect.arrayContaining(['shared__ask_model', 'own__ask_model']));

    const told = JSON.parse(textOf(await plain.callTool({ name: 'shared__whoami', arguments: {} })));
    expect(told.capabilities).toEqual({});
    const answer = await sampler.callTool({ name: 'shared__ask_model', arguments: { text: 'hi' } });
    expect(textOf(answer)).toContain(`sampled by sampler-${era}`);
  });
});

describe('an upstream started for one session alone', () => {
  it('is told who the client is and what it declared', async () => {
    const client = await connected('2025-11-25', 'named-client', { roots: { listChanged: true } });
    const told = JSON.parse(textOf(await client.callTool({ name: 'own__whoami', arguments: {} })));
    expect(told.clientInfo).toEqual({ name: 'named-client', version: '3.2.1' });
    expect(told.capabilities).toEqual({ roots: { listChanged: true } });
  });
});

describe.each<Era>(['2025-11-25', '2026-07-28'])('the stdio gateway, %s client', (era) => {
  // Its upstreams start before its client speaks; they are started again told what the
  // client's first message declared and who it is.
  it.each<[string, ClientCapabilities]>([
    ['without sampling', {}],
    ['with sampling', { sampling: {} }],
  ])('tells its upstream what a client %s declared, and its name', async (_label, capabilities) => {
    const client = new Client(
      { name: `stdio-${era}`, version: '4.5.6' },
      { capabilities, ...(era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {}) },
    );
    clients.push(client);
    await client.connect(
      new StdioClientTransport({
        command: NODE,
        args: [BIN, 'proxy', '--', NODE, STRICT_LEGACY],
        cwd: ROOT,
      }),
    );
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools.includes('ask_model')).toBe(capabilities.sampling !== undefined);
    const told = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
    expect(told.capabilities).toEqual(capabilities);
    expect(told.clientInfo).toEqual({ name: `stdio-${era}`, version: '4.5.6' });
  });
});
