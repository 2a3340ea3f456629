import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from '../gateway/gateway-process.ts';
import type { Running } from '../gateway/processes.ts';
import { firstText } from './spawn.ts';

/**
 * The template server behind a real gateway (bin/mcp-envelope, needs
 * `npm run build`), configured as examples/gateway.config.json configures it:
 * given the gateway's artifact folder and database, so the documents it fills
 * are served by the gateway's own /api/download.
 */

type Json = ReturnType<typeof JSON.parse>;

describe('examples/template-server behind the gateway', () => {
  let gateway: Running;
  let client: Client;

  beforeAll(async () => {
    const { config } = gatewayDir((settings) => {
      const upstreams = settings.upstreams as { name: string; stdio: { env: Record<string, string> } }[];
      const templates = upstreams.find((upstream) => upstream.name === 'templates');
      if (!templates) throw new Error('examples/gateway.config.json has no templates upstream');
      const dir = join(String((settings.ledger as { path: string }).path), '..');
      // The same folder and database for both, as in the example (there relative to examples/).
      templates.stdio.env = {
        ...templates.stdio.env,
        TEMPLATE_SERVER_ARTIFACTS_DIR: join(dir, 'artifacts'),
        TEMPLATE_SERVER_ARTIFACTS_DB: join(dir, 'ledger.sqlite'),
      };
      settings.upstreams = [templates];
      settings.artifacts = { dir: join(dir, 'artifacts') };
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
    expect(filled.data.download_url).toBe(`http://127.0.0.1:8787/api/download?id=${encodeURIComponent(id)}`);
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
