import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, FIXTURE, NODE, ROOT, type Running, startListening } from './processes.ts';

/**
 * Servers such as server-filesystem ask the client for its roots as soon as
 * they are initialized, and keep their command-line folders when no answer
 * comes. Behind the gateway that happens before any client is connected; the
 * gateway then tells the upstream the roots changed once a client that has
 * roots arrives, so the upstream asks again and works in the client's roots,
 * as it does when the client talks to it directly.
 */

const CLIENT_ROOT = { uri: 'file:///srv/client-project', name: 'project' };

type Era = '2025-11-25' | '2026-07-28';

function rootedClient(era: Era = '2025-11-25'): { client: Client; asked: Promise<void> } {
  const client = new Client(
    { name: 'rooted', version: '1.0.0' },
    {
      capabilities: { roots: { listChanged: true } },
      ...(era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {}),
    },
  );
  let answered: () => void = () => {};
  const asked = new Promise<void>((resolve) => {
    answered = resolve;
  });
  client.setRequestHandler('roots/list', async () => {
    answered();
    return { roots: [CLIENT_ROOT] };
  });
  return { client, asked };
}

/** The roots the upstream holds, once the answer it asked for has reached it (each try awaits a call). */
async function heldRoots(client: Client): Promise<{ held: unknown; calls: number }> {
  let held: unknown;
  let calls = 0;
  while (calls < 50) {
    calls++;
    const result = await client.callTool({ name: 'startup_roots', arguments: {} });
    // The tool's own text: the last block (an envelope's own text leads in envelope modes).
    held = JSON.parse((result.content as { text: string }[]).at(-1)?.text ?? 'null');
    if (JSON.stringify(held).includes(CLIENT_ROOT.uri)) break;
  }
  return { held, calls };
}

/** The upstream holds the client's roots; a 2026-07-28 client's first call already runs in them (asked before it went upstream). */
async function expectClientRoots(client: Client, era: Era): Promise<void> {
  const { held, calls } = await heldRoots(client);
  expect(held).toEqual([CLIENT_ROOT]);
  if (era === '2026-07-28') expect(calls).toBe(1);
}

const CASES = [
  ['passthrough', '2025-11-25'],
  ['prov-v0.1', '2025-11-25'],
  // A 2026-07-28 client can be asked only inside a call: the gateway asks in a round of its own first.
  ['passthrough', '2026-07-28'],
  ['prov-v0.1', '2026-07-28'],
] as const;

describe.each(CASES)('an upstream that asks for roots at start, in %s, %s client', (dialect, era) => {
  let http: Running | undefined;
  let open: Client | undefined;

  afterEach(async () => {
    await open?.close();
    await http?.stop();
  });

  it('works in the roots of the client that connects, over stdio', async () => {
    const { client, asked } = rootedClient(era);
    open = client;
    const args = [BIN, 'proxy', '--dialect', dialect, '--', NODE, FIXTURE, '--roots-at-start'];
    await client.connect(new StdioClientTransport({ command: NODE, args, cwd: ROOT }));
    await expectClientRoots(client, era);
    await asked;
  });

  it('works in the roots of the client that connects, over HTTP', async () => {
    http = await startListening([
      BIN,
      'proxy',
      '--dialect',
      dialect,
      '--http',
      '127.0.0.1:0',
      '--',
      NODE,
      FIXTURE,
      '--roots-at-start',
    ]);
    const { client, asked } = rootedClient(era);
    open = client;
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    await expectClientRoots(client, era);
    await asked;
  });
});
