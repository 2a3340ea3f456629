import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { IMAGE } from '../fixtures/servers/binary-bytes.ts';
import { BIN, NODE } from './processes.ts';

/**
 * `proxy` writes nothing it was not asked to: without `--artifacts` a caller's
 * return_mode leaves files inline and no folder appears; with it, the file is
 * stored in that folder and handed out as a resource the proxy reads back.
 */

const BINARY = fileURLToPath(new URL('../fixtures/servers/binary.ts', import.meta.url));
const folders: string[] = [];
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function proxy(cwd: string, flags: string[]): Promise<Client> {
  const transport = new StdioClientTransport({
    command: NODE,
    args: [BIN, 'proxy', '--dialect', 'prov-v0.1', ...flags, '--', NODE, BINARY],
    cwd,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'proxy-artifacts', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-artifacts-'));
  folders.push(dir);
  return dir;
}

const asked = { return_mode: 'mcp_resource' };

describe('proxy --artifacts', () => {
  it('is off by default: the image stays inline and nothing is written', async () => {
    const cwd = folder();
    const client = await proxy(cwd, []);
    const result = (await client.callTool({ name: 'image', arguments: {}, _meta: asked })) as CallToolResult;
    expect(JSON.stringify(result)).toContain(IMAGE.toString('base64'));
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('stores the file in DIR and serves it back as a resource', async () => {
    const cwd = folder();
    const dir = join(cwd, 'files');
    const client = await proxy(cwd, ['--artifacts', dir]);
    const result = (await client.callTool({ name: 'image', arguments: {}, _meta: asked })) as CallToolResult;
    expect(JSON.stringify(result)).not.toContain(IMAGE.toString('base64'));
    const link = result.content.at(-1) as { type: string; uri: string };
    expect(link.type).toBe('resource_link');
    const read = await client.readResource({ uri: link.uri });
    const [content] = read.contents as { blob: string }[];
    expect(Buffer.from(content?.blob ?? '', 'base64').equals(IMAGE)).toBe(true);
    expect(existsSync(join(dir, 'keys.json'))).toBe(true);
  });
});
