import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { readToolResult } from '../../src/mcp/index.ts';
import { verify } from '../../src/provenance/index.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const open: Client[] = [];

async function spawnExample(env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['examples/envelope-server.ts'],
    cwd: root,
    env: { ...getDefaultEnvironment(), ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  open.push(client);
  await client.connect(transport);
  return client;
}

afterEach(async () => {
  // Closing the client ends the child process.
  for (const client of open.splice(0)) await client.close();
});

const CALLS = [
  { name: 'greet', arguments: { name: 'Ann' } },
  {
    name: 'stats',
    arguments: { numbers: [1, 2, 3] },
    _meta: { capture_provenance: true, provenance_mode: 'full' },
  },
  { name: 'explode', arguments: {} },
  { name: 'area', arguments: { width: -1, height: 2 } },
  { name: 'area', arguments: { width: 1, height: 2, broken: true } },
];

describe('the example server over stdio (real child process)', () => {
  it('answers every tool with an envelope, the same way in every run with the same seed', async () => {
    const runs: string[][] = [];
    for (let run = 0; run < 2; run++) {
      const client = await spawnExample({ MCP_ENVELOPE_SEED: 'stdio-seed' });
      const texts: string[] = [];
      for (const call of CALLS) texts.push(JSON.stringify(await client.callTool(call)));
      runs.push(texts);
      await client.close();
    }
    expect(runs[0]).toEqual(runs[1]);
    const [greet, stats, explode, invalid, broken] = (runs[0] ?? []).map((text) => JSON.parse(text));
    expect(greet.structuredContent.result).toBe('Hello, Ann!');
    expect((await verify(stats.structuredContent)).ok).toBe(true);
    expect(explode.isError).toBe(true);
    expect(explode.structuredContent.errors[0].code).toBe('ADAPTER.EXECUTION.FAILED');
    expect(invalid.structuredContent.errors[0]).toMatchObject({
      code: 'INVALID_INPUT',
      details: { pointer: '/width' },
    });
    expect(broken.structuredContent.errors[0]).toMatchObject({
      code: 'INVALID_OUTPUT',
      details: { pointer: '/area' },
    });
  });
});

describe('the example server over stdio in the hosted-v2 dialect', () => {
  it('carries the envelope as JSON text too, and the record in _meta', async () => {
    const client = await spawnExample({ MCP_ENVELOPE_SEED: 'hosted', MCP_ENVELOPE_DIALECT: 'hosted-v2' });
    const result = await client.callTool({
      name: 'stats',
      arguments: { numbers: [1, 2] },
      _meta: { capture_provenance: true, provenance_mode: 'full' },
    });
    const [block] = result.content as { type: string; text: string }[];
    expect(JSON.parse(block?.text ?? '')).toEqual({
      ok: true,
      tool: 'stats',
      schema_version: '2026-02-19',
      data: { count: 2, sum: 3, mean: 1.5 },
    });
    const read = readToolResult(result);
    expect(read).toMatchObject({ ok: true, dialect: 'hosted-v2', data: { count: 2, sum: 3, mean: 1.5 } });
    expect((await verify(read.provenance)).ok).toBe(true);
    const failed = readToolResult(await client.callTool({ name: 'explode', arguments: {} }));
    expect(failed).toMatchObject({
      ok: false,
      dialect: 'hosted-v2',
      error: { code: 'ADAPTER.EXECUTION.FAILED' },
    });
  });
});
