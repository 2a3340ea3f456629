import {
  Client,
  InMemoryTransport,
  ProtocolError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import {
  createMcpHandler,
  McpServer,
  ProtocolErrorCode,
  type ServerContext,
  ProtocolError as ServerProtocolError,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import { createExampleServer } from '../../examples/envelope-server.ts';
import { isEnvelopeV01 } from '../../src/envelope/index.ts';
import { createIdSource } from '../../src/ids/index.ts';
import { outputSchemaFor, withEnvelope } from '../../src/mcp/index.ts';
import { verify } from '../../src/provenance/index.ts';

const open: Client[] = [];

async function connect(server: McpServer): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'test', version: '1.0.0' });
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  open.push(client);
  return client;
}

afterEach(async () => {
  for (const client of open.splice(0)) await client.close();
});

function structured(result: { structuredContent?: unknown }): Record<string, unknown> {
  expect(result.structuredContent).toBeTypeOf('object');
  return result.structuredContent as Record<string, unknown>;
}

describe('withEnvelope on an SDK v2 McpServer (in process)', () => {
  it('advertises the envelope schema as every tool outputSchema, before and after withEnvelope', async () => {
    const client = await connect(createExampleServer());
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['greet', 'stats', 'explode', 'area', 'flaky']);
    for (const tool of tools) expect(tool.outputSchema).toEqual(outputSchemaFor('prov-v0.1'));
    const area = tools.find((tool) => tool.name === 'area');
    expect(area?._meta?.['mcp-envelope/result-schema']).toMatchObject({ type: 'object' });
    expect(JSON.stringify(outputSchemaFor('prov-v0.1'))).not.toContain('"$ref":"prov.record.v0.1"');
  });

  it('wraps text and JSON results, and carries the same JSON as text', async () => {
    const client = await connect(createExampleServer());
    const greet = await client.callTool({ name: 'greet', arguments: { name: 'Ann' } });
    const envelope = structured(greet);
    expect(envelope).toMatchObject({ schema_version: 'mcp.envelope.v0.1', result: 'Hello, Ann!' });
    expect(isEnvelopeV01(envelope)).toBe(true);
    expect(greet.isError).toBeUndefined();
    // The envelope leads; the tool's own text follows as it wrote it.
    expect(greet.content).toEqual([
      { type: 'text', text: JSON.stringify(envelope) },
      { type: 'text', text: 'Hello, Ann!' },
    ]);

    const stats = await client.callTool({ name: 'stats', arguments: { numbers: [1, 2, 3] } });
    expect(structured(stats).result).toEqual({ count: 3, sum: 6, mean: 2 });
  });

  it('turns a thrown error into ADAPTER.EXECUTION.FAILED', async () => {
    const client = await connect(createExampleServer());
    const result = await client.callTool({ name: 'explode', arguments: {} });
    expect(result.isError).toBe(true);
    expect(structured(result)).toMatchObject({
      result: null,
      errors: [
        { code: 'ADAPTER.EXECUTION.FAILED', message: 'Tool execution failed: the reactor overheated' },
      ],
    });
  });

  it('rejects invalid arguments with INVALID_INPUT and the pointer of the bad value', async () => {
    const client = await connect(createExampleServer());
    const result = await client.callTool({ name: 'area', arguments: { width: 'wide', height: 1 } });
    expect(result.isError).toBe(true);
    expect(structured(result).errors).toEqual([
      {
        code: 'INVALID_INPUT',
        message: 'Invalid params: /width must be number',
        details: { pointer: '/width', jsonrpc_code: -32602 },
      },
    ]);
  });

  it("checks structured output against the tool's own outputSchema (INVALID_OUTPUT), keeping what it returned", async () => {
    const client = await connect(createExampleServer());
    const good = await client.callTool({ name: 'area', arguments: { width: 2, height: 3 } });
    expect(structured(good).result).toEqual({ area: 6 });
    const bad = await client.callTool({ name: 'area', arguments: { width: 2, height: 3, broken: true } });
    expect(bad.isError).toBe(true);
    expect(structured(bad).errors).toEqual([
      {
        code: 'INVALID_OUTPUT',
        message: 'Invalid tool output: /area must be number',
        details: { pointer: '/area', jsonrpc_code: -32002, tool_ran: true },
      },
    ]);
    // The tool ran: its output is the envelope's result (the policy's partial output), not replaced.
    expect(structured(bad).result).toEqual({ area: '6' });
  });

  it("keeps a tool's own structured error codes", async () => {
    const client = await connect(createExampleServer());
    const result = await client.callTool({ name: 'flaky', arguments: { key: 'k', failures: 1 } });
    expect(result.isError).toBe(true);
    expect(structured(result).errors).toEqual([
      // retryable is written because the schema's readers take a missing flag for false.
      { code: 'RATE_LIMITED', message: 'attempt 1 of 2: slow down', retryable: true },
    ]);
  });

  it('attaches a verifiable provenance record only when the caller opts in', async () => {
    const client = await connect(createExampleServer({ seed: 'prov' }));
    const plain = await client.callTool({ name: 'stats', arguments: { numbers: [4] } });
    expect(structured(plain).provenance).toBeUndefined();
    for (const mode of ['minimal', 'full'] as const) {
      const result = await client.callTool({
        name: 'stats',
        arguments: { numbers: [4, 5] },
        _meta: { capture_provenance: true, provenance_mode: mode },
      });
      const envelope = structured(result);
      expect(envelope.provenance).toMatchObject({
        schema_version: 'prov.record.v0.1',
        tool: { name: 'stats' },
      });
      const report = await verify(envelope);
      expect(report.checks.filter((check) => check.status === 'fail')).toEqual([]);
      expect(report.ok).toBe(true);
    }
  });

  it('answers a malformed provenance control with INVALID_INPUT', async () => {
    const client = await connect(createExampleServer());
    const result = await client.callTool({
      name: 'greet',
      arguments: { name: 'Ann' },
      _meta: { provenance_mode: 'everything' },
    });
    expect(structured(result).errors).toMatchObject([
      { code: 'INVALID_INPUT', details: { pointer: '/_meta/provenance_mode' } },
    ]);
  });

  it('gives byte-identical results for the same calls with deterministic ids', async () => {
    const calls = [
      { name: 'greet', arguments: { name: 'Ann' } },
      {
        name: 'stats',
        arguments: { numbers: [1.5, 2] },
        _meta: { capture_provenance: true, provenance_mode: 'full' },
      },
      { name: 'explode', arguments: {} },
    ];
    const runs: string[][] = [];
    for (let run = 0; run < 2; run++) {
      const client = await connect(createExampleServer({ seed: 'same-seed' }));
      const texts: string[] = [];
      for (const call of calls) texts.push(JSON.stringify(await client.callTool(call)));
      runs.push(texts);
    }
    expect(runs[0]).toEqual(runs[1]);
    const other = await connect(createExampleServer({ seed: 'other-seed' }));
    expect(JSON.stringify(await other.callTool(calls[0] as never))).not.toEqual(runs[0]?.[0]);
  });

  it('covers tools registered without an input schema, updated tools, and refuses a second application', async () => {
    const server = new McpServer({ name: 'bare', version: '0.1.0' });
    withEnvelope(server, { ids: createIdSource('bare') });
    const tool = server.registerTool('count', { description: 'a number' }, async () => ({
      content: [{ type: 'text', text: '42' }],
    }));
    expect(() => withEnvelope(server)).toThrow(/already applied/);
    const client = await connect(server);
    // A text that is a JSON number stays the text the tool wrote.
    expect(structured(await client.callTool({ name: 'count', arguments: {} })).result).toBe('42');
    tool.update({
      callback: async () => ({ content: [{ type: 'text', text: 'not json' }] }),
    });
    expect(structured(await client.callTool({ name: 'count', arguments: {} })).result).toBe('not json');
  });

  it('passes an envelope a tool returns (as an object or as JSON text) through unchanged', async () => {
    const server = new McpServer({ name: 'pass', version: '0.1.0' });
    const own = { schema_version: 'mcp.envelope.v0.1', result: { x: 1 }, meta: { adapter: 'own' } };
    const text = `{ "schema_version": "mcp.envelope.v0.1", "result": [1, 2.50] }`;
    server.registerTool('object', { inputSchema: z.object({}) }, async () => ({
      content: [{ type: 'text', text: JSON.stringify(own) }],
      structuredContent: own,
    }));
    server.registerTool('text', {}, async () => ({ content: [{ type: 'text', text }] }));
    withEnvelope(server);
    const client = await connect(server);
    expect(structured(await client.callTool({ name: 'object', arguments: {} }))).toEqual(own);
    const fromText = await client.callTool({ name: 'text', arguments: {} });
    expect(fromText.content).toEqual([{ type: 'text', text }]);
    // Structured, it is written with the tool's own number spelling (`2.50`), as the text has it.
    expect(JSON.stringify(structured(fromText))).toBe(
      '{"schema_version":"mcp.envelope.v0.1","result":[1,2.50]}',
    );
  });

  it('keeps protocol errors for unknown tools, and can answer invalid input as a JSON-RPC error', async () => {
    const server = new McpServer({ name: 'rpc', version: '0.1.0' });
    server.registerTool('need', { inputSchema: z.object({ n: z.number() }) }, async ({ n }) => ({
      content: [{ type: 'text', text: String(n) }],
    }));
    withEnvelope(server, { invalidInput: 'jsonrpc-error' });
    const client = await connect(server);
    await expect(client.callTool({ name: 'missing', arguments: {} })).rejects.toThrow(/not found/);
    const error = await client.callTool({ name: 'need', arguments: { n: 'x' } }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({
      code: -32602,
      data: { canonical_code: 'INVALID_INPUT', pointer: '/n' },
    });
  });

  it('lets a URL elicitation request through as the protocol error it is', async () => {
    const server = new McpServer({ name: 'elicit', version: '0.1.0' });
    server.registerTool('connect', {}, async () => {
      throw new UrlElicitationRequiredError([
        { mode: 'url', message: 'Sign in', url: 'https://example.com/login', elicitationId: 'e1' },
      ]);
    });
    withEnvelope(server);
    const client = await connect(server);
    const error = await client.callTool({ name: 'connect', arguments: {} }).catch((caught) => caught);
    expect(error).toMatchObject({ code: -32042 });
  });

  it("keeps the server's maxToolInputElements guard", async () => {
    const server = new McpServer({ name: 'guarded', version: '0.1.0' }, { maxToolInputElements: 5 });
    server.registerTool('sum', { inputSchema: z.object({ n: z.array(z.number()) }) }, async ({ n }) => ({
      content: [{ type: 'text', text: String(n.reduce((a, b) => a + b, 0)) }],
    }));
    withEnvelope(server);
    const client = await connect(server);
    expect(structured(await client.callTool({ name: 'sum', arguments: { n: [1, 2, 3] } })).result).toBe('6');
    const big = await client.callTool({ name: 'sum', arguments: { n: [1, 2, 3, 4, 5, 6] } });
    expect(structured(big).errors).toMatchObject([
      { code: 'INVALID_INPUT', message: 'Invalid params: arguments hold more than 5 elements' },
    ]);
  });

  it('works the same in the 2026-07-28 protocol era (in-process Streamable HTTP handler)', async () => {
    const handler = createMcpHandler(() => createExampleServer({ seed: 'modern' }));
    const client = new Client({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL('http://in-process.invalid/mcp'), {
          fetch: (url, init) => handler.fetch(new Request(url, init)),
        }),
      );
      const { tools } = await client.listTools();
      expect(tools.every((tool) => tool.outputSchema !== undefined)).toBe(true);
      const result = await client.callTool({
        name: 'stats',
        arguments: { numbers: [2, 4] },
        _meta: { capture_provenance: true, provenance_mode: 'full' },
      });
      expect(structured(result).result).toEqual({ count: 2, sum: 6, mean: 3 });
      expect((await verify(structured(result))).ok).toBe(true);
      const invalid = await client.callTool({ name: 'area', arguments: { width: 1, height: 'x' } });
      expect(structured(invalid).errors).toMatchObject([
        { code: 'INVALID_INPUT', details: { pointer: '/height' } },
      ]);
    } finally {
      await client.close();
      await handler.close();
    }
  });
});

describe('withEnvelope and the server it wraps', () => {
  it('names the server as it introduced itself in provenance records, without being told again', async () => {
    const client = await connect(createExampleServer({ seed: 'identity' }));
    const result = await client.callTool({
      name: 'stats',
      arguments: { numbers: [1, 2] },
      _meta: { capture_provenance: true },
    });
    expect(structured(result).provenance).toMatchObject({ tool: { name: 'stats', version: '1.0.0' } });
  });
});

describe('withEnvelope and the SDK copy the user has', () => {
  type ToolsCallHandler = (request: unknown, ctx: ServerContext) => Promise<unknown>;

  /**
   * The tools/call handler withEnvelope installed, as the server stores it (the
   * SDK's own accessor for dispatching a request without a transport), and a
   * context the SDK built for a real call, so a failure is seen where it is
   * thrown: on the server, before the SDK serializes it for the wire.
   */
  async function direct(server: McpServer): Promise<(name: string, args: unknown) => Promise<unknown>> {
    let captured: ServerContext | undefined;
    server.registerTool('probe', {}, async (ctx) => {
      captured = ctx;
      return { content: [{ type: 'text', text: 'ok' }] };
    });
    const client = await connect(server);
    await client.callTool({ name: 'probe', arguments: {} });
    const low = server.server as unknown as {
      _getRequestHandler(method: string): ToolsCallHandler | undefined;
    };
    const handler = low._getRequestHandler('tools/call');
    if (!handler || !captured) throw new Error('no tools/call handler, or no context captured');
    const ctx = captured;
    let id = 0;
    return (name, args) =>
      handler(
        { jsonrpc: '2.0', id: `direct-${++id}`, method: 'tools/call', params: { name, arguments: args } },
        ctx,
      );
  }

  it("throws protocol failures as the user's own ProtocolError class (the SDK is a peer, never a second copy)", async () => {
    const server = new McpServer({ name: 'peer', version: '1.0.0' });
    server.registerTool('need', { inputSchema: z.object({ n: z.number() }) }, async ({ n }) => ({
      content: [{ type: 'text', text: String(n) }],
    }));
    server.registerTool('off', {}, async () => ({ content: [{ type: 'text', text: 'never' }] })).disable();
    withEnvelope(server, { invalidInput: 'jsonrpc-error' });
    const call = await direct(server);

    const unknown = await call('missing', {}).catch((caught: unknown) => caught);
    expect(unknown).toBeInstanceOf(ServerProtocolError);
    expect(unknown).toMatchObject({
      code: ProtocolErrorCode.InvalidParams,
      message: 'Tool missing not found',
    });

    const disabled = await call('off', {}).catch((caught: unknown) => caught);
    expect(disabled).toBeInstanceOf(ServerProtocolError);
    expect(disabled).toMatchObject({ code: ProtocolErrorCode.InvalidParams, message: 'Tool off disabled' });

    const invalid = await call('need', { n: 'x' }).catch((caught: unknown) => caught);
    expect(invalid).toBeInstanceOf(ServerProtocolError);
    expect(invalid).toMatchObject({
      code: ProtocolErrorCode.InvalidParams,
      data: { canonical_code: 'INVALID_INPUT', pointer: '/n' },
    });
  });

  it("recognises the user's own ProtocolError thrown by a tool as a protocol signal, not a tool failure", async () => {
    const server = new McpServer({ name: 'peer', version: '1.0.0' });
    server.registerTool('login', {}, async () => {
      throw new ServerProtocolError(ProtocolErrorCode.UrlElicitationRequired, 'Sign in first', {
        elicitations: [
          { mode: 'url', message: 'Sign in', url: 'https://example.com/login', elicitationId: 'e2' },
        ],
      });
    });
    withEnvelope(server);
    const call = await direct(server);
    const error = await call('login', {}).catch((caught: unknown) => caught);
    // Had withEnvelope not recognised it, this would be an ADAPTER.EXECUTION.FAILED envelope, not a rejection.
    expect(error).toBeInstanceOf(ServerProtocolError);
    expect(error).toMatchObject({ code: ProtocolErrorCode.UrlElicitationRequired });
  });

  it('records the version the server was built with, or the one the caller gives, never 0.0.0', async () => {
    const calls = { name: 'lookup', arguments: {}, _meta: { capture_provenance: true } };
    const build = (options: Parameters<typeof withEnvelope>[1] = {}) => {
      const server = new McpServer({ name: 'search-service', version: '3.1.4' });
      server.registerTool('lookup', {}, async () => ({ content: [{ type: 'text', text: '{"hits":2}' }] }));
      withEnvelope(server, options);
      return server;
    };
    const own = structured(await (await connect(build())).callTool(calls));
    expect(own.provenance).toMatchObject({ tool: { name: 'lookup', version: '3.1.4' } });
    const told = structured(
      await (await connect(build({ server: { name: 'search', version: '9.9.9' } }))).callTool(calls),
    );
    expect(told.provenance).toMatchObject({ tool: { name: 'lookup', version: '9.9.9' } });
    expect(JSON.stringify([own, told])).not.toContain('0.0.0');
  });
});
