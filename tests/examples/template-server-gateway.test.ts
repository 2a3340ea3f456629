import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from '../gateway/gateway-process.ts';
import { gatewayStdio, type Running } from '../gateway/processes.ts';
import { firstText } from './spawn.ts';

/**
 * The template server behind a real gateway (bin/mcp-envelope, needs
 * `npm run build`), configured as examples/gateway.config.json configures it:
 * sharing the gateway's artifact store (`"artifacts": "shared"`: a capability
 * to the gateway's put API reaches it in its environment, never a folder, a
 * database or a key), so the documents it fills are kept by the gateway,
 * linked to and served by its own /api/download, on whatever port it took.
 */

type Json = ReturnType<typeof JSON.parse>;

/** examples/gateway.config.json with its templates upstream alone, as the example configures it. */
function templatesOnly(): { dir: string; config: string } {
  return gatewayDir((settings) => {
    const upstreams = settings.upstreams as { name: string }[];
    const templates = upstreams.find((upstream) => upstream.name === 'templates');
    if (!templates) throw new Error('examples/gateway.config.json has no templates upstream');
    // As the example configures it: `"artifacts": "shared"`, nothing else.
    settings.upstreams = [templates];
  });
}

afterAll(() => removeGatewayDirs());

describe('examples/template-server behind the gateway', () => {
  let gateway: Running;
  let client: Client;
  let dir: string;

  beforeAll(async () => {
    const paths = templatesOnly();
    dir = paths.dir;
    gateway = await startGatewayHttp(['--config', paths.config]);
    client = new Client({ name: 'template-gateway-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
  });

  async function call(name: string, args: Record<string, unknown>): Promise<Json> {
    return JSON.parse(firstText(await client.callTool({ name, arguments: args })));
  }

  it('passes the Hosted v2 envelopes through, and the gateway serves the filled document', async () => {
    // A gateway with one upstream lists its tools under their own names.
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'download_filled',
      'fill_template',
      'get_template',
      'list_templates',
    ]);
    const filled = await call('fill_template', {
      template_id: 'meeting-minutes',
      values: { meeting_title: 'Via the gateway', meeting_date: '2026-06-01', attendees: ['Ada'] },
    });
    expect(filled).toMatchObject({ ok: true, tool: 'fill_template', data: { return_mode: 'url' } });
    const id = filled.data.download_id as string;
    expect(filled.data.download_url).toBe(
      `${new URL(gateway.url).origin}/api/download?id=${encodeURIComponent(id)}`,
    );
    const viaTool = await call('download_filled', { download_id: id });
    // The gateway listens on another port here: its own download route, by the same id.
    const download = await fetch(new URL(`/api/download?id=${encodeURIComponent(id)}`, gateway.url));
    expect(download.status, download.headers.get('x-download-error-code') ?? '').toBe(200);
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.toString('base64')).toBe(viaTool.data.docx_base64);
    // The gateway keeps it, in its own artifacts.dir (data/artifacts beside its configuration).
    const digest = createHash('sha256').update(bytes).digest('hex');
    expect(existsSync(join(dir, 'data', 'artifacts', 'blobs', digest.slice(0, 2), digest))).toBe(true);
    // Missing arguments reach the server, which answers with the Hosted v2 code.
    const missing = await call('get_template', {});
    expect(missing.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('examples/template-server behind a gateway serving stdio only', () => {
  let client: Client;

  beforeAll(async () => {
    // The banner's own stdio client configuration: `gateway --config FILE --stdio --no-http`.
    client = new Client({ name: 'template-stdio-gateway-test', version: '1.0.0' });
    await client.connect(gatewayStdio(templatesOnly().config, { args: ['--stdio', '--no-http'] }));
  });

  afterAll(async () => {
    await client?.close();
  });

  async function call(name: string, args: Record<string, unknown>): Promise<Json> {
    return JSON.parse(firstText(await client.callTool({ name, arguments: args })));
  }

  it('hands out no link nobody serves: url is answered as a resource the client reads through the gateway', async () => {
    const filled = await call('fill_template', {
      template_id: 'meeting-minutes',
      values: { meeting_title: 'Over stdio', meeting_date: '2026-06-01', attendees: ['Ada'] },
      return_mode: 'url',
    });
    const id = filled.data?.download_id as string;
    expect(filled).toMatchObject({
      ok: true,
      data: {
        return_mode: 'mcp_resource',
        resource_uri: `templates://filled/${id}`,
        note: expect.stringMatching(/^No download URL: /),
      },
    });
    expect(filled.data).not.toHaveProperty('download_url');
    const read = await client.readResource({ uri: filled.data.resource_uri });
    const [contents] = read.contents as { blob?: string }[];
    const viaTool = await call('download_filled', { download_id: id });
    expect(contents?.blob).toBe(viaTool.data.docx_base64);
  });
});
