import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLES, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { FIXTURE, NODE, ROOT, type Running, startListening } from './processes.ts';

/**
 * The server card of a real gateway process fronting two upstreams (the
 * fixture as a child process, and the fixture over Streamable HTTP), with
 * bearer tokens required: what it says, that it says nothing secret, who may
 * read how much of it, and that it is behind the same Host and Origin checks as
 * everything else.
 */

const TOKEN = 'card-token-4b1d9e0c7a2f5e83';
const ENV_SECRET = 'env-secret-d41d8cd98f00b204';
const ARG_SECRET = 'arg-secret-e9800998ecf8427e';
const HEADER_SECRET = 'header-secret-5eb63bbbe01eeed0';
const QUERY_SECRET = 'query-secret-7215ee9c7d9dc229';
const SECRETS = [TOKEN, ENV_SECRET, ARG_SECRET, HEADER_SECRET, QUERY_SECRET];

const VERSION = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version;

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A request with exactly these headers (fetch would not send a Host of our choosing). */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: { host: target.host, ...options.headers },
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
    req.end();
  });
}

const bearer = { authorization: `Bearer ${TOKEN}` };

interface Card {
  name: string;
  version: string;
  description: string;
  title: string;
  remotes: {
    type: string;
    url: string;
    headers?: { name: string; isRequired: boolean }[];
    supportedProtocolVersions: string[];
  }[];
  _meta: Record<string, Record<string, unknown>[]>;
}

describe('the server card of a gateway fronting two upstreams, tokens required', () => {
  let remote: Running;
  let gateway: Running;
  let card: string;
  let remotePort: string;

  beforeAll(async () => {
    remote = await startListening([FIXTURE, '--http', '0']);
    remotePort = new URL(remote.url).port;
    const dir = gatewayDir((config) => {
      config.upstreams = [
        {
          name: 'local',
          stdio: {
            command: NODE,
            args: [FIXTURE, `--api-key=${ARG_SECRET}`],
            cwd: EXAMPLES,
            env: { API_KEY: ENV_SECRET },
          },
          dialect: 'passthrough',
        },
        {
          name: 'remote',
          url: { url: `${remote.url}?key=${QUERY_SECRET}`, headers: { 'x-api-key': HEADER_SECRET } },
          dialect: 'passthrough',
        },
      ];
      config.auth = { required: true, tokens: [{ name: 'ops', token: TOKEN, tier: 'pro' }] };
    });
    gateway = await startGatewayHttp(['--config', dir.config, '--no-stdio']);
    card = `${gateway.url}/server-card`;
  });

  afterAll(async () => {
    await gateway?.stop();
    await remote?.stop();
    removeGatewayDirs();
  });

  it('tells a token holder who the gateway is, where to connect, how, and what it fronts', async () => {
    const reply = await raw(card, { headers: bearer });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    const body = JSON.parse(reply.body) as Card;
    expect(body).toMatchObject({
      $schema: 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json',
      name: 'localhost/mcp-envelope-gateway',
      version: VERSION,
      description: 'mcp-envelope gateway in front of 2 MCP servers: local, remote',
    });
    expect(body.remotes).toHaveLength(1);
    expect(body.remotes[0]).toMatchObject({
      type: 'streamable-http',
      url: gateway.url,
      headers: [{ name: 'Authorization', isRequired: true }],
    });
    expect(body.remotes[0]?.supportedProtocolVersions).toEqual(
      expect.arrayContaining(['2026-07-28', '2025-11-25']),
    );
    const declared = {
      state: 'ready',
      serverInfo: { name: 'everything-fixture', version: '1.0.0' },
      capabilities: expect.objectContaining({ tools: { listChanged: true }, logging: {} }),
    };
    expect(body._meta['mcp-envelope/upstreams']).toEqual([
      { name: 'local', transport: 'stdio', namePrefix: 'local__', ...declared },
      { name: 'remote', transport: 'streamable-http', namePrefix: 'remote__', ...declared },
    ]);
  });

  it('agrees with what a connected client is told: the identity and the tool names', async () => {
    const body = JSON.parse((await raw(card, { headers: bearer })).body) as Card;
    const client = new Client({ name: 'card-check', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(body.remotes[0]?.url ?? ''), {
        requestInit: { headers: bearer },
      }),
    );
    try {
      const info = client.getServerVersion();
      expect(body.name.endsWith(`/${info?.name}`)).toBe(true);
      expect(body.version).toBe(info?.version);
      const prefixes =
        body._meta['mcp-envelope/upstreams']?.map((upstream) => upstream.namePrefix as string) ?? [];
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThan(0);
      for (const tool of tools) expect(prefixes.some((prefix) => tool.name.startsWith(prefix))).toBe(true);
      for (const prefix of prefixes) expect(tools.some((tool) => tool.name.startsWith(prefix))).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('says nothing secret and nothing of where an upstream is, at any of its paths, to anyone', async () => {
    const paths = ['/mcp/server-card', '/.well-known/mcp/server-card', '/.well-known/mcp/server-card.json'];
    const origin = new URL(gateway.url).origin;
    const texts: string[] = [];
    for (const path of paths) {
      for (const headers of [bearer, {}]) {
        const reply = await raw(`${origin}${path}`, { headers });
        expect(reply.status).toBe(200);
        texts.push(reply.body);
      }
    }
    // The same card wherever it is asked for.
    expect(new Set(texts.filter((_, i) => i % 2 === 0)).size).toBe(1);
    for (const text of texts) {
      for (const secret of SECRETS) expect(text).not.toContain(secret);
      expect(text).not.toContain(`:${remotePort}`);
      expect(text).not.toContain('--api-key');
      expect(text).not.toContain('everything.ts');
    }
  });

  it('shows a caller without a token that a token is needed, and each upstream’s name and state only', async () => {
    const reply = await raw(card);
    expect(reply.status).toBe(200);
    expect(reply.headers['cache-control']).toBe('public, no-cache');
    const body = JSON.parse(reply.body) as Card;
    expect(body.remotes[0]?.headers).toEqual([
      expect.objectContaining({ name: 'Authorization', isRequired: true }),
    ]);
    expect(body._meta['mcp-envelope/upstreams']).toEqual([
      { name: 'local', state: 'ready' },
      { name: 'remote', state: 'ready' },
    ]);
    expect(reply.body).not.toContain('everything-fixture');
    // A token holder's card is its own to keep.
    expect((await raw(card, { headers: bearer })).headers['cache-control']).toBe('private, no-cache');
  });

  it('refuses a token that is not one of the gateway’s, as the MCP endpoint does', async () => {
    for (const authorization of ['Bearer not-the-token', 'Basic b3BzOnNlY3JldA==']) {
      const reply = await raw(card, { headers: { authorization } });
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(reply.body).not.toContain('mcp-envelope/upstreams');
    }
  });

  it('is refused to a foreign Host or Origin, and readable from an allowed origin', async () => {
    const badHost = await raw(card, { headers: { ...bearer, host: 'evil.example' } });
    expect(badHost.status).toBe(403);
    expect(JSON.parse(badHost.body).error.code).toBe('FORBIDDEN');
    const badOrigin = await raw(card, { headers: { origin: 'http://evil.example' } });
    expect(badOrigin.status).toBe(403);
    expect(badOrigin.body).not.toContain('mcp-envelope/upstreams');
    const preflight = await raw(card, { method: 'OPTIONS', headers: { origin: 'http://evil.example' } });
    expect(preflight.status).toBe(403);
    const allowed = await raw(card, { headers: { origin: 'http://localhost:5173' } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe('*');
    const allowedPreflight = await raw(card, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:5173' },
    });
    expect(allowedPreflight.status).toBe(204);
    expect(allowedPreflight.headers['access-control-allow-headers']).toContain('Authorization');
    // Asked by the name localhost, the card points there.
    const local = await raw(card, {
      headers: { host: new URL(card).host.replace('127.0.0.1', 'localhost') },
    });
    expect((JSON.parse(local.body) as Card).remotes[0]?.url).toBe(
      gateway.url.replace('127.0.0.1', 'localhost'),
    );
  });

  it('answers HEAD, its own media type when asked for, and 304 while it has not changed', async () => {
    const asked = await raw(card, { headers: { accept: 'application/mcp-server-card+json' } });
    expect(asked.status).toBe(200);
    expect(asked.headers['content-type']).toBe('application/mcp-server-card+json');
    const head = await raw(card, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(Number(head.headers['content-length'])).toBeGreaterThan(0);
    const tag = head.headers.etag ?? '';
    expect(tag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(asked.headers.etag).not.toBe(tag);
    const again = await raw(card, { headers: { 'if-none-match': tag } });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    // A token holder's card is another representation: the tag does not match it.
    expect((await raw(card, { headers: { ...bearer, 'if-none-match': tag } })).status).toBe(200);
    const post = await raw(card, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD, OPTIONS');
  });

  it('is listed at the root among the gateway’s routes', async () => {
    const root = await raw(new URL('/', gateway.url).href);
    expect(JSON.parse(root.body)).toMatchObject({ card: '/mcp/server-card' });
  });
});
