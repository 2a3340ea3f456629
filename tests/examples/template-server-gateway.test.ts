import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from '../gateway/gateway-process.ts';
import type { Running } from '../gateway/processes.ts';
import { firstText } from './spawn.ts';

/**
 * The template server behind a real gateway (bin/mcp-envelope, needs
 * `npm run build`), configured as examples/gateway.config.json configures it:
 * sharing the gateway's artifact store (`"artifacts": "shared"`: the folder,
 * the database and the download route reach it in its environment), so the
 * documents it fills are linked to and served by the gateway's own
 * /api/download, on whatever port the gateway took.
 */

type Json = ReturnType<typeof JSON.parse>;

describe('examples/template-server behind the gateway', () => {
  let gateway: Running;
  let client: Client;

  beforeAll(async () => {
    const { config } = gatewayDir((settings) => {
      const upstreams = settings.upstreams as { name: string }[];
      const templates = upstreams.find((upstream) => upstream.name === 'templates');
      if (!templates) throw new Error('examples/gateway.config.json has no templates upstream');
      // As the example configures it: `"artifacts": "shared"`, nothing else.
      settings.upstreams = [templates];
    });
    gateway = await startGatewayHttp(['--config', config]);
    client = new Client({ name: 'template-gateway-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
    removeGatewayDirs();
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
    // Missing arguments reach the server, which answers with the Hosted v2 code.
    const missing = await call('get_template', {});
    expect(missing.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
