import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLatestCallLogs } from '../../src/gateway/operations/call-log.ts';
import { type GatewayDir, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { FIXTURE, type Running } from './processes.ts';

/**
 * What the gateway gives away without being asked properly: enforcement that
 * does not depend on what an upstream declares, an unauthenticated surface
 * that says states and names only, Host and Origin headers read strictly, and
 * a warning when HTTP is open to the network with no token required.
 */

const UNDECLARED = fileURLToPath(new URL('../fixtures/servers/undeclared-tools.ts', import.meta.url));
const LOW = 'community-token-for-exposure-0123';

const running: Running[] = [];

afterAll(async () => {
  await Promise.allSettled(running.map((gateway) => gateway.stop()));
  removeGatewayDirs();
});

interface ProvEnvelope {
  schema_version: string;
  result: unknown;
  errors?: { code: string }[];
}

describe('an upstream that answers tools without declaring the tools capability', () => {
  let gateway: Running;
  let paths: GatewayDir;
  let client: Client;

  beforeAll(async () => {
    paths = gatewayDir((config) => {
      config.upstreams = [
        { name: 'careless', stdio: { command: 'node', args: [UNDECLARED] }, dialect: 'prov-v0.1' },
      ];
      config.tiers = { order: ['community', 'pro'], tools: { admin: 'pro' } };
      config.auth = { required: true, tokens: [{ name: 'low', token: LOW, tier: 'community' }] };
    });
    gateway = await startGatewayHttp(['--config', paths.config, '--no-stdio']);
    running.push(gateway);
    client = new Client({ name: 'exposure', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { Authorization: `Bearer ${LOW}` } },
      }),
    );
  });

  it('advertises the envelope schema as every tool’s output schema', async () => {
    // listTools() asks nothing of a server that declared no tools; the request itself is what a client may send.
    const { tools } = await client.request({ method: 'tools/list' });
    expect(tools.map((tool) => tool.name)).toEqual(['echo', 'admin']);
    for (const tool of tools) expect(tool.outputSchema).toBeDefined();
  });

  it('wraps its results in the envelope', async () => {
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    const envelope = echo.structuredContent as unknown as ProvEnvelope;
    expect(envelope.schema_version).toBe('mcp.envelope.v0.1');
    expect(envelope.result).toBe('hi');
  });

  it('refuses a gated tool to a lower tier, without running it', async () => {
    const admin = await client.callTool({ name: 'admin', arguments: {} });
    expect(admin.isError).toBe(true);
    expect((admin.structuredContent as unknown as ProvEnvelope).errors?.[0]?.code).toBe('UPGRADE_REQUIRED');
    expect(JSON.stringify(admin)).not.toContain('admin ran');
  });

  it('logs every call', async () => {
    await client.close();
    // Stopping the gateway flushes and closes its log.
    await gateway.stop();
    const lines = readLatestCallLogs(join(paths.logs, 'gateway'));
    expect(lines.map((line) => [line.tool, line.tier, line.code])).toEqual([
      ['echo', 'community', null],
      ['admin', 'community', 'UPGRADE_REQUIRED'],
    ]);
  });
});

/** A GET with headers fetch will not send (Host, Origin); resolves with status and body. */
function rawGet(url: string, path: string, headers: Record<string, string> = {}) {
  const target = new URL(url);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname.replace(/^\[|\]$/g, ''),
        port: target.port,
        path,
        headers: { host: target.host, ...headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the unauthenticated HTTP surface', () => {
  let gateway: Running;

  beforeAll(async () => {
    const { config } = gatewayDir((raw) => {
      raw.upstreams = [
        {
          name: 'local',
          stdio: {
            command: 'node',
            args: [FIXTURE, '--marker-arg=hidden-7d1f'],
            env: { MARKER_ENV: 'hidden-env-2c9e' },
          },
          dialect: 'prov-v0.1',
        },
        {
          // Nothing listens there: the upstream stays down, which the page and /healthz may say.
          name: 'remote',
          url: { url: 'http://robot:hidden-pass-5b0a@127.0.0.1:9/private/path?key=hidden-query-3e4d' },
          dialect: 'passthrough',
          restart: { initialDelayMs: 60_000, maxDelayMs: 60_000, factor: 2, maxAttempts: 1 },
        },
      ];
      raw.auth = { required: false, tokens: [] };
    });
    gateway = await startGatewayHttp(['--config', config, '--no-stdio']);
    running.push(gateway);
  });

  it('/healthz says the overall status and each upstream’s state, and nothing else', async () => {
    const health = await rawGet(gateway.url, '/healthz');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({
      status: 'degraded',
      upstreams: { local: 'ready', remote: 'retrying' },
    });
  });

  it('the info page names upstreams and tools, and shows a URL by its origin only', async () => {
    const page = await rawGet(gateway.url, '/mcp', { accept: 'text/html' });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<code>local</code>: a local process (stdio)');
    expect(page.body).toContain('<code>remote</code>: Streamable HTTP at http://127.0.0.1:9');
    expect(page.body).toContain('<code>local__echo</code>');
    for (const hidden of [
      'hidden-7d1f',
      'hidden-env-2c9e',
      'hidden-pass-5b0a',
      'hidden-query-3e4d',
      'robot',
      '/private/path',
      'everything.ts',
    ])
      expect(page.body).not.toContain(hidden);
  });

  it.each<[Record<string, string>, string]>([
    [{ host: 'a@localhost' }, 'user info in Host'],
    [{ host: 'localhost/x' }, 'a path in Host'],
    [{ host: '[::1]evil.com' }, 'text after an IPv6 address in Host'],
    [{ origin: 'javascript://localhost' }, 'a script scheme in Origin'],
    [{ origin: 'http://localhost/x' }, 'a path in Origin'],
  ])('refuses %j with 403 (%s)', async (headers) => {
    const res = await rawGet(gateway.url, '/healthz', headers);
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).error.code).toBe('FORBIDDEN');
  });
});

describe('HTTP bound to every interface', () => {
  it('warns at start when no token is required', async () => {
    const { config } = gatewayDir((raw) => {
      raw.upstreams = [{ name: 'local', stdio: { command: 'node', args: [FIXTURE] }, dialect: 'prov-v0.1' }];
      raw.auth = { required: false, tokens: [] };
    });
    const gateway = await startGatewayHttp(['--config', config, '--no-stdio', '--http', '0.0.0.0:0']);
    running.push(gateway);
    expect(gateway.stderr()).toMatch(
      /WARNING: HTTP at http:\/\/0\.0\.0\.0:[1-9]\d*\/mcp is open to the network and no bearer token is required/,
    );
  });

  it('does not warn when a token is required', async () => {
    const { config } = gatewayDir((raw) => {
      raw.upstreams = [{ name: 'local', stdio: { command: 'node', args: [FIXTURE] }, dialect: 'prov-v0.1' }];
      raw.auth = { required: true, tokens: [{ name: 'low', token: LOW, tier: 'pro' }] };
    });
    const gateway = await startGatewayHttp(['--config', config, '--no-stdio', '--http', '0.0.0.0:0']);
    running.push(gateway);
    expect(gateway.stderr()).not.toContain('WARNING');
  });
});
