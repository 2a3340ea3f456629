import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statelessEraClient } from './era-2026-07-28.ts';
import { EXAMPLES, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { FIXTURE, NODE, type Running } from './processes.ts';

/**
 * Resources across several upstreams over HTTP, for both eras: a read goes to
 * the upstream that has the resource, whether or not a list named it first.
 * For 2026-07-28 each request has a relay of its own, so what a list found
 * must outlive the request that listed it.
 */

const README = { uri: 'legacy://readme', text: 'A legacy MCP server.' };

describe.each([
  { era: '2026-07-28', client: () => statelessEraClient() },
  { era: '2025-11-25', client: () => new Client({ name: 'resources-2025', version: '1.0.0' }) },
])('resources of the second of two upstreams, $era', ({ client: makeClient }) => {
  let gateway: Running;
  const clients: Client[] = [];

  beforeAll(async () => {
    // The fixture first: it serves resources too, so nothing lands on the legacy server by default.
    const dir = gatewayDir((config) => {
      const legacy = (config.upstreams as { name: string }[]).find((upstream) => upstream.name === 'legacy');
      config.upstreams = [
        { name: 'fixture', stdio: { command: NODE, args: [FIXTURE], cwd: EXAMPLES }, dialect: 'passthrough' },
        legacy,
      ];
    });
    gateway = await startGatewayHttp(['--config', dir.config]);
  });

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    await gateway?.stop();
    removeGatewayDirs();
  });

  async function connected(): Promise<Client> {
    const client = makeClient();
    clients.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    return client;
  }

  it('reads a resource no list has named yet from the upstream that has it', async () => {
    const client = await connected();
    const read = await client.readResource({ uri: README.uri });
    expect(read.contents).toMatchObject([{ uri: README.uri, text: README.text }]);
    const fixture = await client.readResource({ uri: 'test://static-text' });
    expect(fixture.contents[0]).toMatchObject({ uri: 'test://static-text' });
  });

  it('reads what a list named from its upstream, in a later request', async () => {
    const client = await connected();
    const listed = (await client.listResources()).resources.map((resource) => resource.uri);
    // Listed namespaced by upstream; read by that name, and by the URI the upstream gave it.
    expect(listed).toEqual(expect.arrayContaining(['legacy://legacy/readme', 'test://fixture/static-text']));
    const read = await client.readResource({ uri: 'legacy://legacy/readme' });
    expect(read.contents).toMatchObject([{ uri: 'legacy://legacy/readme', text: README.text }]);
    const raw = await client.readResource({ uri: README.uri });
    expect(raw.contents).toMatchObject([{ uri: README.uri, text: README.text }]);
  });

  it('answers a resource no upstream has with the first upstream’s error', async () => {
    const client = await connected();
    const error = await client.readResource({ uri: 'nowhere://at-all' }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ message: expect.stringContaining('nowhere://at-all') });
  });
});
