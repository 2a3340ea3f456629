import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callToolWithRetry, readToolResult } from '../../src/mcp/read-tool-result.ts';
import { statelessEraClient } from './era-2026-07-28.ts';
import { startGatewayHttp } from './gateway-process.ts';
import { gatewayStdio, type Running } from './processes.ts';

/**
 * The gateway's `rateLimits`, end to end: real gateway processes (stdio and
 * HTTP), real upstream processes that count the calls they get, the official
 * SDK client. A denied call is answered RATE_LIMITED (retriable, with
 * `reset_at`) in the upstream's dialect and never reaches the upstream; every
 * answer carries the binding bucket's metadata where its dialect puts it.
 */

const META_KEY = 'mcp-envelope/rate_limit';
const LONG = 600_000;
const A_TOKEN = 'a-token-0123456789abcdef';
const B_TOKEN = 'b-token-0123456789abcdef';

const dir = mkdtempSync(join(tmpdir(), 'rate-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An upstream that counts the calls it gets: every tool answers `{tool, calls}` (calls so far, this one included). */
const COUNTER = join(dir, 'counter.mjs');
writeFileSync(
  COUNTER,
  `import { Server } from ${JSON.stringify(import.meta.resolve('@modelcontextprotocol/server'))};
import { StdioServerTransport } from ${JSON.stringify(import.meta.resolve('@modelcontextprotocol/server/stdio'))};
let calls = 0;
const tool = (name) => ({ name, inputSchema: { type: 'object' } });
const server = new Server({ name: 'counter', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler('tools/list', async () => ({ tools: ['count', 'fill', 'other'].map(tool) }));
server.setRequestHandler('tools/call', async (request) => {
  calls += 1;
  const answer = { tool: request.params.name, calls };
  return { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer };
});
await server.connect(new StdioServerTransport());
`,
);

const counter = (name: string, dialect: string) => ({
  name,
  stdio: { command: 'node', args: [COUNTER] },
  dialect,
});

function writeConfig(name: string, config: Record<string, unknown>): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({ ledger: { enabled: false }, logs: { enabled: false }, ...config }, null, 2),
  );
  return file;
}

interface HostedEnvelope {
  ok: boolean;
  data?: { tool: string; calls: number };
  error?: { code: string; retriable: boolean; details?: { rate_limit?: Record<string, unknown> } };
  rate_limit?: Record<string, unknown>;
}

interface ProvEnvelope {
  result: { tool: string; calls: number } | null;
  errors?: { code: string; retryable?: boolean; details?: Record<string, unknown> }[];
}

const hosted = (result: CallToolResult) => JSON.parse(textOf(result)) as HostedEnvelope;
const prov = (result: CallToolResult) => result.structuredContent as unknown as ProvEnvelope;

function textOf(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

describe('rate limits over stdio', () => {
  let client: Client;

  beforeAll(async () => {
    const config = writeConfig('stdio', {
      upstreams: [
        counter('hosted', 'hosted-v2'),
        counter('prov', 'prov-v0.1'),
        counter('open', 'hosted-v2'),
        counter('relay', 'passthrough'),
      ],
      rateLimits: [
        { bucket: 'hosted:fill', limit: 2, windowMs: LONG, upstream: 'hosted', tool: 'fill' },
        { bucket: 'prov:all', limit: 1, windowMs: LONG, upstream: 'prov' },
        { bucket: 'relay:all', limit: 1, windowMs: LONG, upstream: 'relay' },
      ],
    });
    client = new Client({ name: 'rate-limits', version: '1.0.0' });
    await client.connect(gatewayStdio(config));
  }, 30_000);

  afterAll(async () => {
    await client?.close();
  });

  const call = (name: string) => client.callTool({ name, arguments: {} }) as Promise<CallToolResult>;

  it('a per-tool rule of one upstream: hosted-v2 metadata on success, RATE_LIMITED past the burst, the upstream never called', async () => {
    const first = hosted(await call('hosted__fill'));
    expect(first).toMatchObject({ ok: true, data: { tool: 'fill', calls: 1 } });
    // The tool's payload is never altered: the gateway's metadata is a top-level member.
    expect(first.rate_limit).toEqual({ limit: 2, remaining: 1, reset_at: ISO, bucket: 'hosted:fill' });
    expect(hosted(await call('hosted__fill')).rate_limit).toMatchObject({ remaining: 0 });

    const denied = await call('hosted__fill');
    expect(denied.isError).toBe(true);
    const envelope = hosted(denied);
    expect(envelope).toMatchObject({ ok: false, error: { code: 'RATE_LIMITED', retriable: true } });
    expect(envelope.error?.details?.rate_limit).toEqual({
      limit: 2,
      remaining: 0,
      reset_at: ISO,
      bucket: 'hosted:fill',
    });
    expect(Date.parse(envelope.error?.details?.rate_limit?.reset_at as string)).toBeGreaterThan(Date.now());
    const read = readToolResult(denied);
    expect(read.ok).toBe(false);
    expect(read.meta?.rate_limit?.bucket).toBe('hosted:fill');

    // Another tool of the same upstream: no rule applies (the null placeholder), and the
    // upstream counts two calls before this one: the denied call never reached it.
    const count = hosted(await call('hosted__count'));
    expect(count.data).toEqual({ tool: 'count', calls: 3 });
    expect(count.rate_limit).toEqual({ limit: null, remaining: null, reset_at: null });
  });

  it('no rule: hosted-v2 answers carry the null placeholder', async () => {
    const answer = await call('open__other');
    expect(hosted(answer).rate_limit).toEqual({ limit: null, remaining: null, reset_at: null });
    expect(answer._meta?.[META_KEY]).toBeUndefined();
  });

  it('a per-upstream rule in prov-v0.1: _meta on success, the error entry on a denial', async () => {
    const first = await call('prov__count');
    expect(prov(first).result).toEqual({ tool: 'count', calls: 1 });
    // mcp.envelope.v0.1 has no place for it on a success: the result's _meta carries it.
    expect(first._meta?.[META_KEY]).toEqual({ limit: 1, remaining: 0, reset_at: ISO, bucket: 'prov:all' });

    const denied = await call('prov__other');
    expect(denied.isError).toBe(true);
    const [error] = prov(denied).errors ?? [];
    expect(error).toMatchObject({
      code: 'RATE_LIMITED',
      retryable: true,
      details: { limit: 1, remaining: 0, reset_at: ISO, bucket: 'prov:all' },
    });
    const read = readToolResult(denied);
    expect(read.ok ? undefined : read.error).toMatchObject({ code: 'RATE_LIMITED', retriable: true });
    expect(read.meta?.rate_limit?.reset_at).toBe(error?.details?.reset_at);
  });

  it('a passthrough upstream: the result untouched but for _meta; a denial in mcp.envelope.v0.1', async () => {
    const first = await call('relay__count');
    expect(first.structuredContent).toEqual({ tool: 'count', calls: 1 });
    expect(first._meta?.[META_KEY]).toMatchObject({ limit: 1, remaining: 0, bucket: 'relay:all' });
    const denied = await call('relay__count');
    expect(denied.isError).toBe(true);
    const read = readToolResult(denied);
    expect(read.ok ? undefined : read.error).toMatchObject({ code: 'RATE_LIMITED', retriable: true });
    expect(read.meta?.rate_limit).toMatchObject({ bucket: 'relay:all', reset_at: ISO });
    expect(denied._meta?.[META_KEY]).toMatchObject({ bucket: 'relay:all' });
  });
});

describe('rate limits over HTTP', () => {
  let gateway: Running;
  const clients: Client[] = [];

  beforeAll(async () => {
    const config = writeConfig('http', {
      upstreams: [counter('counter', 'hosted-v2')],
      listen: { stdio: false },
      auth: {
        required: false,
        tokens: [
          { name: 'a', token: A_TOKEN, tier: 'community' },
          { name: 'b', token: B_TOKEN, tier: 'community' },
        ],
      },
      rateLimits: [
        { bucket: 'caller:fill', limit: 1, windowMs: LONG, tool: 'fill' },
        { bucket: 'everyone:count', limit: 3, windowMs: LONG, tool: 'count', per: 'global' },
        { bucket: 'quick', limit: 1, windowMs: 2000, tool: 'other' },
      ],
    });
    gateway = await startGatewayHttp(['--config', config]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await gateway?.stop();
  });

  /** The Retry-After header of each response a client got, in order (null: none). */
  const retryAfters = new Map<Client, (string | null)[]>();

  async function connect(
    token?: string,
    client = new Client({ name: 'rate-limits', version: '1.0.0' }),
  ): Promise<Client> {
    const seen: (string | null)[] = [];
    retryAfters.set(client, seen);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        ...(token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {}),
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          if ((init?.method ?? 'GET') === 'POST') seen.push(response.headers.get('retry-after'));
          return response;
        },
      }),
    );
    clients.push(client);
    return client;
  }

  const call = (client: Client, name: string) =>
    client.callTool({ name, arguments: {} }) as Promise<CallToolResult>;

  it('keeps one bucket per bearer token, and anonymous callers apart from both', async () => {
    const [a, b, anonymous] = await Promise.all([connect(A_TOKEN), connect(B_TOKEN), connect()]);
    expect(hosted(await call(a, 'fill')).rate_limit).toMatchObject({ bucket: 'caller:fill', remaining: 0 });
    expect(hosted(await call(a, 'fill')).error?.code).toBe('RATE_LIMITED');
    // B's bucket is its own, and so is the anonymous caller's (its session).
    expect(hosted(await call(b, 'fill')).ok).toBe(true);
    expect(hosted(await call(anonymous, 'fill')).ok).toBe(true);
    expect(hosted(await call(b, 'fill')).error?.code).toBe('RATE_LIMITED');
    // A response whose one answer is a denial says when to come back in its Retry-After header.
    const headers = retryAfters.get(a) as (string | null)[];
    const [admitted, denied] = headers.slice(-2);
    expect(admitted).toBeNull();
    expect(Number(denied)).toBeGreaterThan(60);
  });

  it('keys anonymous callers by their principal: a 2025-era session its own, 2026-07-28 requests their address', async () => {
    // Two anonymous sessions from one address are two principals, each with its own bucket.
    const [first, second] = await Promise.all([connect(), connect()]);
    expect(hosted(await call(first, 'fill')).ok).toBe(true);
    expect(hosted(await call(first, 'fill')).error?.code).toBe('RATE_LIMITED');
    expect(hosted(await call(second, 'fill')).ok).toBe(true);
    // Anonymous 2026-07-28 requests carry nothing to tell clients apart: their address is the principal.
    const modern = [statelessEraClient(), statelessEraClient()];
    for (const client of modern) {
      await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
      clients.push(client);
    }
    expect(hosted(await call(modern[0] as Client, 'fill')).ok).toBe(true);
    expect(hosted(await call(modern[1] as Client, 'fill')).error?.code).toBe('RATE_LIMITED');
  });

  it('says Retry-After on a 2026-07-28 response whose one answer is a denial', async () => {
    const client = await connect(B_TOKEN, statelessEraClient());
    expect(hosted(await call(client, 'other')).ok).toBe(true);
    expect(hosted(await call(client, 'other')).error?.code).toBe('RATE_LIMITED');
    const [admitted, denied] = (retryAfters.get(client) as (string | null)[]).slice(-2);
    expect(admitted).toBeNull();
    expect(Number(denied)).toBeGreaterThanOrEqual(1);
  });

  it('shares a global bucket among every caller', async () => {
    const [a, b] = await Promise.all([connect(A_TOKEN), connect(B_TOKEN)]);
    const remaining = [];
    for (const client of [a, b, a]) remaining.push(hosted(await call(client, 'count')).rate_limit?.remaining);
    expect(remaining).toEqual([2, 1, 0]);
    const denied = hosted(await call(b, 'count'));
    expect(denied.error).toMatchObject({
      code: 'RATE_LIMITED',
      details: { rate_limit: { bucket: 'everyone:count' } },
    });
  });

  it('callToolWithRetry waits until reset_at and then gets in', async () => {
    const client = await connect(A_TOKEN);
    expect(hosted(await call(client, 'other')).ok).toBe(true);
    const retried = await callToolWithRetry(client, { name: 'other', arguments: {} }, { retries: 3 });
    expect(retried.ok).toBe(true);
    // The first attempt was denied (the bucket holds one call per 2 s), the second admitted.
    expect(retried.attempts).toBe(2);
    expect(retried.data).toMatchObject({ tool: 'other' });
  });
});
