import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import PizZip from 'pizzip';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultRegistry, SCHEMA_IDS } from '../../src/schemas/index.ts';
import { EXAMPLES, firstText } from './spawn.ts';

/**
 * examples/template-server over HTTP: a real process listening on 127.0.0.1,
 * the official SDK client on /api/mcp, plain fetch on the browser page and on
 * /api/download.
 */

const SERVER = `${EXAMPLES}template-server/server.ts`;
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** What JSON.parse gives: the tests read members the envelope schema already checked. */
type Json = ReturnType<typeof JSON.parse>;

interface Envelope {
  ok: boolean;
  tool: string;
  data?: Record<string, Json>;
  error?: { code: string; message: string; retriable: boolean; details?: Record<string, Json> };
}

interface Running {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

const temps: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `template-server-http-${prefix}-`));
  temps.push(dir);
  return dir;
}

/** Starts the server with --http on a free port; resolves once it says where it listens. */
async function startHttp(env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(process.execPath, [SERVER, '--http', '127.0.0.1:0'], {
    env: { PATH: process.env.PATH ?? '', TEMPLATE_SERVER_ARTIFACTS_DIR: tempDir('artifacts'), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const match = /listening on (http:\/\/\S+)\/api\/mcp/.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function connect(url: string, headers?: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'template-http-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(`${url}/api/mcp`),
      headers ? { requestInit: { headers } } : undefined,
    ),
  );
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Envelope> {
  const result = await client.callTool({ name, arguments: args });
  const envelope = JSON.parse(firstText(result)) as Envelope;
  expect(result.structuredContent).toEqual(envelope);
  expect(defaultRegistry().validate(SCHEMA_IDS.hostedEnvelope, envelope).issues).toEqual([]);
  return envelope;
}

const MINUTES = {
  meeting_title: 'Board meeting',
  meeting_date: '2026-03-05',
  attendees: ['Ada Lovelace', 'Grace Hopper'],
};

afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe('examples/template-server over HTTP', () => {
  let server: Running;
  let client: Client;

  beforeAll(async () => {
    server = await startHttp();
    client = await connect(server.url);
  });

  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  it('serves a page to browsers at GET /api/mcp, and 405 JSON to any other GET', async () => {
    const page = await fetch(`${server.url}/api/mcp`, {
      headers: { accept: 'text/html,application/xhtml+xml' },
    });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    for (const tool of ['list_templates', 'get_template', 'fill_template', 'download_filled']) {
      expect(html).toContain(`<code>${tool}</code>`);
    }
    expect(html).toContain(`${server.url}/api/mcp`);
    const other = await fetch(`${server.url}/api/mcp`, { headers: { accept: 'application/json' } });
    expect(other.status).toBe(405);
    expect(other.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await other.json()).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });
    const elsewhere = await fetch(`${server.url}/nothing-here`);
    expect(elsewhere.status).toBe(404);
  });

  it('answers every tool through the SDK client, with pagination', async () => {
    const first = await call(client, 'list_templates', { mode: 'compact', limit: 2 });
    expect(first.data?.templates).toHaveLength(2);
    const rest = await call(client, 'list_templates', { mode: 'compact', cursor: first.data?.next_cursor });
    expect(rest.data).toMatchObject({ templates: [{ template_id: 'mutual-nda-cover' }], next_cursor: null });
    const template = await call(client, 'get_template', { template_id: 'mutual-nda-cover' });
    expect(template.data?.template.fields).toHaveLength(6);
    expect((await call(client, 'get_template', { template_id: 'nope' })).error?.code).toBe(
      'TEMPLATE_NOT_FOUND',
    );
  });

  it('serves a url-mode document at its own /api/download: GET and HEAD, the bytes download_filled gives', async () => {
    const filled = await call(client, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
    const { download_url: downloadUrl, download_id: downloadId } = filled.data as Record<string, string>;
    expect(downloadUrl).toBe(`${server.url}/api/download?id=${encodeURIComponent(downloadId as string)}`);
    const viaTool = await call(client, 'download_filled', { download_id: downloadId });
    const expected = Buffer.from(viaTool.data?.docx_base64, 'base64');

    const got = await fetch(downloadUrl as string);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe(DOCX);
    expect(got.headers.get('content-disposition')).toContain('filename="meeting-minutes.docx"');
    const bytes = Buffer.from(await got.arrayBuffer());
    expect(bytes.equals(expected)).toBe(true);
    expect(new PizZip(bytes).file('word/document.xml')?.asText()).toContain('5 March 2026');

    const head = await fetch(downloadUrl as string, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(expected.length));
    expect(await head.text()).toBe('');
  });

  it('refuses a tampered id at /api/download with DOWNLOAD_SIGNATURE_INVALID, as download_filled does', async () => {
    const filled = await call(client, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
    const id = filled.data?.download_id as string;
    const tampered = `${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`;
    const answer = await fetch(`${server.url}/api/download?id=${encodeURIComponent(tampered)}`);
    expect(answer.status).toBe(403);
    expect(answer.headers.get('x-download-error-code')).toBe('DOWNLOAD_SIGNATURE_INVALID');
    expect(await answer.json()).toMatchObject({ error: { code: 'DOWNLOAD_SIGNATURE_INVALID' } });
    const viaTool = await call(client, 'download_filled', { download_id: tampered });
    expect(viaTool.error?.code).toBe('DOWNLOAD_LINK_INVALID');
  });

  it('answers a client of the 2026-07-28 protocol era the same way', async () => {
    const modern = new Client(
      { name: 'template-http-modern', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await modern.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/api/mcp`)));
    try {
      const filled = await call(modern, 'fill_template', {
        template_id: 'meeting-minutes',
        values: MINUTES,
        return_mode: 'base64_docx',
      });
      expect(filled.data).toMatchObject({ return_mode: 'base64_docx', content_type: DOCX });
      const missing = await call(modern, 'fill_template', { template_id: 'meeting-minutes', values: {} });
      expect(missing.error).toMatchObject({ code: 'MISSING_REQUIRED_FIELDS' });
    } finally {
      await modern.close();
    }
  });

  it('reads an mcp_resource result through resources/read over HTTP', async () => {
    const filled = await call(client, 'fill_template', {
      template_id: 'meeting-minutes',
      values: MINUTES,
      return_mode: 'mcp_resource',
    });
    const read = await client.readResource({ uri: filled.data?.resource_uri });
    const [content] = read.contents as { blob: string; mimeType: string }[];
    expect(content?.mimeType).toBe(DOCX);
    const downloaded = await fetch(filled.data?.download_url);
    expect(Buffer.from(await downloaded.arrayBuffer()).toString('base64')).toBe(content?.blob);
  });
});

describe('examples/template-server over HTTP with a short TTL', () => {
  it('answers DOWNLOAD_EXPIRED at /api/download and DOWNLOAD_LINK_EXPIRED from download_filled once the link expired', async () => {
    const server = await startHttp({ TEMPLATE_SERVER_TTL_MS: '1000' });
    const client = await connect(server.url);
    try {
      const filled = await call(client, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
      const {
        download_url: url,
        download_id: id,
        expires_at: expiresAt,
      } = filled.data as Record<string, string>;
      // Wait for the instant the link names, no guess: from then on it must be expired.
      await delay(Math.max(0, Date.parse(expiresAt as string) - Date.now()) + 50);
      const answer = await fetch(url as string);
      expect(answer.status).toBe(410);
      expect(answer.headers.get('x-download-error-code')).toBe('DOWNLOAD_EXPIRED');
      const viaTool = await call(client, 'download_filled', { download_id: id });
      expect(viaTool.error).toMatchObject({ code: 'DOWNLOAD_LINK_EXPIRED', retriable: false });
    } finally {
      await client.close();
      await server.stop();
    }
  });
});

describe('examples/template-server over HTTP with TEMPLATE_SERVER_TOKEN', () => {
  it('answers AUTH_REQUIRED without the bearer token, and serves the caller who has it', async () => {
    const server = await startHttp({ TEMPLATE_SERVER_TOKEN: 'example-token-0123456789' });
    const anonymous = await connect(server.url);
    const wrong = await connect(server.url, { authorization: 'Bearer not-the-token' });
    const holder = await connect(server.url, { authorization: 'Bearer example-token-0123456789' });
    try {
      for (const client of [anonymous, wrong]) {
        const refused = await call(client, 'list_templates', {});
        expect(refused.error).toMatchObject({ code: 'AUTH_REQUIRED', retriable: false });
        const fill = await call(client, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
        expect(fill.error?.code).toBe('AUTH_REQUIRED');
      }
      const served = await call(holder, 'fill_template', {
        template_id: 'meeting-minutes',
        values: MINUTES,
        return_mode: 'mcp_resource',
      });
      expect(served.ok).toBe(true);
      await expect(anonymous.readResource({ uri: served.data?.resource_uri })).rejects.toThrow(
        /bearer token/,
      );
      // The link itself is the capability: /api/download needs no token.
      expect((await fetch(served.data?.download_url)).status).toBe(200);
    } finally {
      await Promise.all([anonymous.close(), wrong.close(), holder.close()]);
      await server.stop();
    }
  });
});
