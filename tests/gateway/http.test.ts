import { request as httpRequest } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../../src/ledger/web/html.ts';
import { BIN, FIXTURE, initializeMessage, NODE, ROOT, type Running, startProxyHttp } from './processes.ts';

const INIT = initializeMessage();

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw HTTP request with full control of Host and other headers (fetch forbids setting Host). */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method ?? 'GET',
        headers: options.headers,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('proxy over Streamable HTTP', () => {
  let proxy: Running;

  beforeAll(async () => {
    proxy = await startProxyHttp(['--max-body', '2000']);
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  it('serves an SDK client, including server-to-client requests on a stateful session', async () => {
    const client = new Client({ name: 'http-test', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler('sampling/createMessage', async () => ({
      role: 'assistant',
      model: 'm',
      content: { type: 'text', text: 'from the client' },
    }));
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    try {
      expect(client.getServerVersion()?.name).toBe('everything-fixture');
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'over http' } });
      expect(echo.structuredContent).toEqual({ text: 'over http' });
      const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'x' } });
      expect((sampled.content as { text: string }[])[0]?.text).toBe('LLM response: from the client');
    } finally {
      await client.close();
    }
  });

  it('answers GET /healthz', async () => {
    const res = await raw(proxy.url.replace('/mcp', '/healthz'));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).status).toBe('ok');
  });

  it('serves a readable HTML page to browsers, with the tools behind it', async () => {
    const res = await raw(proxy.url, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('<code>echo</code>');
    expect(res.body).toContain('Streamable HTTP');
    expect(res.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
  });

  it('answers other GETs with 405 JSON', async () => {
    const res = await raw(proxy.url, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(405);
    expect(JSON.parse(res.body).error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('rejects a foreign Host or Origin (DNS rebinding) with 403', async () => {
    const badHost = await raw(proxy.url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, host: 'evil.example.com' },
      body: JSON.stringify(INIT),
    });
    expect(badHost.status).toBe(403);
    expect(JSON.parse(badHost.body).error.code).toBe('FORBIDDEN');
    const badOrigin = await raw(proxy.url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, origin: 'http://evil.example.com' },
      body: JSON.stringify(INIT),
    });
    expect(badOrigin.status).toBe(403);
  });

  it('answers a malformed JSON body with a JSON-RPC parse error', async () => {
    const res = await raw(proxy.url, { method: 'POST', headers: JSON_HEADERS, body: '{"jsonrpc": "2.0", ' });
    expect(res.status).toBe(400);
    const body = JSON.parse(res.body);
    expect(body.error.code).toBe(-32700);
    expect(body.error.data.canonical_code).toBe('JSON_MALFORMED');
  });

  it('answers a body that is not UTF-8 with a parse error naming INPUT_INVALID_UTF8', async () => {
    const bytes = Buffer.concat([
      Buffer.from(JSON.stringify(INIT).slice(0, -2)),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('}}'),
    ]);
    const res = await raw(proxy.url, { method: 'POST', headers: JSON_HEADERS, body: bytes });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatchObject({
      code: -32700,
      data: { canonical_code: 'INPUT_INVALID_UTF8' },
    });
  });

  it('answers JSON that is not JSON-RPC with a JSON-RPC error, not a crash', async () => {
    for (const body of ['{"foo":1}', '[]', '"text"']) {
      const res = await raw(proxy.url, { method: 'POST', headers: JSON_HEADERS, body });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).error.code).toBe(-32600);
    }
    const health = await raw(proxy.url.replace('/mcp', '/healthz'));
    expect(health.status).toBe(200);
  });

  it('answers an oversized body with 413 JSON', async () => {
    const big = JSON.stringify({ ...INIT, params: { ...INIT.params, padding: 'x'.repeat(5000) } });
    const res = await raw(proxy.url, { method: 'POST', headers: JSON_HEADERS, body: big });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error.code).toBe('INPUT_TOO_LARGE');
  });

  it('answers an unknown session with 404 and a request without one with 400', async () => {
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const unknown = await raw(proxy.url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, 'mcp-session-id': 'nope', 'mcp-protocol-version': '2025-06-18' },
      body: list,
    });
    expect(unknown.status).toBe(404);
    const missing = await raw(proxy.url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, 'mcp-protocol-version': '2025-06-18' },
      body: list,
    });
    expect(missing.status).toBe(400);
  });

  it('answers unknown paths with 404 JSON', async () => {
    const res = await raw(proxy.url.replace('/mcp', '/nowhere'));
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body).error.code).toBe('NOT_FOUND');
  });
});

describe('proxy over HTTP with bearer tokens', () => {
  let proxy: Running;

  beforeAll(async () => {
    proxy = await startProxyHttp(['--token', 's3cret-token-0123456789=pro']);
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  it('asks for a token, rejects a wrong one, and serves the right one', async () => {
    const none = await raw(proxy.url, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(INIT) });
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body).error.code).toBe('AUTH_REQUIRED');
    expect(none.headers['www-authenticate']).toContain('Bearer');
    const wrong = await raw(proxy.url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: 'Bearer nope' },
      body: JSON.stringify(INIT),
    });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body).error.code).toBe('UNAUTHORIZED');
    expect(wrong.body).not.toContain('s3cret-token-0123456789');

    const client = new Client({ name: 'auth-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url), {
        requestInit: { headers: { authorization: 'Bearer s3cret-token-0123456789' } },
      }),
    );
    try {
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'authorized' } });
      expect(echo.structuredContent).toEqual({ text: 'authorized' });
    } finally {
      await client.close();
    }
  });
});

describe('proxy with --http and --stdio at once', () => {
  it('serves the same upstream on both', async () => {
    const transport = new StdioClientTransport({
      command: NODE,
      args: [BIN, 'proxy', '--stdio', '--http', '127.0.0.1:0', '--', NODE, FIXTURE],
      cwd: ROOT,
      stderr: 'pipe',
    });
    let stderr = '';
    const url = new Promise<string>((resolve) => {
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match?.[1]) resolve(match[1]);
      });
    });
    const overStdio = new Client({ name: 'both-stdio', version: '1.0.0' });
    await overStdio.connect(transport);
    const overHttp = new Client({ name: 'both-http', version: '1.0.0' });
    try {
      await overHttp.connect(new StreamableHTTPClientTransport(new URL(await url)));
      const [a, b] = await Promise.all([
        overStdio.callTool({ name: 'echo', arguments: { text: 'stdio' } }),
        overHttp.callTool({ name: 'echo', arguments: { text: 'http' } }),
      ]);
      expect(a.structuredContent).toEqual({ text: 'stdio' });
      expect(b.structuredContent).toEqual({ text: 'http' });
    } finally {
      await overHttp.close();
      await overStdio.close();
    }
  });
});
