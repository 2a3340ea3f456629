import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, FIXTURE, NODE, ROOT, type Running, startProxyHttp } from './processes.ts';

const FLAGS = ['--dialect', 'prov-v0.1', '--deterministic-ids', 'gateway-test', '--timeout', '20000'];

async function stdioClient(): Promise<Client> {
  const client = new Client({ name: 'envelope-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: NODE,
      args: [BIN, 'proxy', ...FLAGS, '--', NODE, FIXTURE],
      cwd: ROOT,
    }),
  );
  return client;
}

describe('proxy in envelope mode (prov-v0.1)', () => {
  let client: Client;
  let http: Running;
  let httpClient: Client;

  beforeAll(async () => {
    [client, http] = await Promise.all([stdioClient(), startProxyHttp(FLAGS)]);
    httpClient = new Client({ name: 'envelope-http', version: '1.0.0' });
    await httpClient.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  });

  afterAll(async () => {
    await client?.close();
    await httpClient?.close();
    await http?.stop();
  });

  it('advertises the envelope schema as every tool output schema', async () => {
    const tools = await client.listTools();
    const echo = tools.tools.find((tool) => tool.name === 'echo');
    expect(echo?.outputSchema?.properties).toHaveProperty('schema_version');
  });

  it('wraps a legacy result; with the same seed, stdio and HTTP give byte-identical results', async () => {
    // Deterministic ids follow the call sequence, so compare each process's first call.
    const [first, overHttp] = await Promise.all([
      client.callTool({ name: 'echo', arguments: { text: 'x' } }),
      httpClient.callTool({ name: 'echo', arguments: { text: 'x' } }),
    ]);
    expect(first.structuredContent).toMatchObject({
      schema_version: 'mcp.envelope.v0.1',
      result: { text: 'x' },
    });
    expect(JSON.stringify(overHttp)).toBe(JSON.stringify(first));
  });

  it('answers arguments that break the input schema with an INVALID_INPUT envelope', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 5 } });
    expect(result.isError).toBe(true);
    const envelope = result.structuredContent as { errors: { code: string; details: { pointer: string } }[] };
    expect(envelope.errors[0]?.code).toBe('INVALID_INPUT');
    expect(envelope.errors[0]?.details.pointer).toBe('/text');
  });

  it('turns an upstream crash into ADAPTER.EXECUTION.FAILED with the exit code and stderr', async () => {
    const result = await client.callTool({ name: 'crash', arguments: { code: 9 } });
    expect(result.isError).toBe(true);
    const envelope = result.structuredContent as {
      result: unknown;
      errors: { code: string; details: object }[];
    };
    expect(envelope.result).toBeNull();
    expect(envelope.errors[0]?.code).toBe('ADAPTER.EXECUTION.FAILED');
    expect(envelope.errors[0]?.details).toMatchObject({ exit_code: 9 });
    expect(JSON.stringify(envelope.errors[0]?.details)).toContain('fixture: crashing on request');
    const after = await client.callTool({ name: 'echo', arguments: { text: 'back' } });
    expect(after.structuredContent).toMatchObject({ result: { text: 'back' } });
  });
});

describe('proxy with --invalid-input jsonrpc-error', () => {
  let client: Client;

  beforeAll(async () => {
    client = new Client({ name: 'invalid-input-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: NODE,
        args: [BIN, 'proxy', ...FLAGS, '--invalid-input', 'jsonrpc-error', '--', NODE, FIXTURE],
        cwd: ROOT,
      }),
    );
  });

  afterAll(async () => {
    await client?.close();
  });

  it('answers arguments that break the input schema with JSON-RPC -32602 carrying the canonical code and pointer', async () => {
    const error = await client.callTool({ name: 'echo', arguments: { text: 5 } }).then(
      () => undefined,
      (caught: unknown) => caught as { code?: number; data?: Record<string, unknown> },
    );
    expect(error?.code).toBe(-32602);
    expect(error?.data).toMatchObject({ canonical_code: 'INVALID_INPUT', pointer: '/text' });
  });

  it('still answers valid arguments with an envelope', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'fine' } });
    expect(result.structuredContent).toMatchObject({ result: { text: 'fine' } });
  });
});
