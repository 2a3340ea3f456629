import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Connected, connectExample, EXAMPLES, firstText } from './spawn.ts';

describe('examples/python-legacy-server.py with the SDK client', () => {
  let server: Connected;

  beforeAll(async () => {
    server = await connectExample({ command: 'python3', args: ['python-legacy-server.py'] });
  });

  afterAll(async () => {
    await server?.client.close();
  });

  it('initializes and reports its name', () => {
    expect(server.client.getServerVersion()?.name).toBe('python-legacy-server');
  });

  it('answers ping', async () => {
    await expect(server.client.ping()).resolves.toBeDefined();
  });

  it('lists its tools with input schemas', async () => {
    const { tools } = await server.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['add', 'upper', 'fail']);
    expect(tools[0]?.inputSchema.required).toEqual(['a', 'b']);
  });

  it('calls tools: a number as text, JSON text, an isError result', async () => {
    expect(firstText(await server.client.callTool({ name: 'add', arguments: { a: 2, b: 40 } }))).toBe('42');
    expect(firstText(await server.client.callTool({ name: 'add', arguments: { a: 0.5, b: 1 } }))).toBe('1.5');
    const upper = await server.client.callTool({ name: 'upper', arguments: { text: 'straße' } });
    expect(JSON.parse(firstText(upper))).toEqual({ text: 'STRASSE' });
    const failed = await server.client.callTool({ name: 'fail', arguments: {} });
    expect(failed.isError).toBe(true);
  });

  it('rejects an unknown tool with a JSON-RPC error', async () => {
    await expect(server.client.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/Unknown tool/);
  });
});

describe('examples/python-legacy-server.py on the wire', () => {
  it('answers requests in order, never answers notifications, and reports malformed lines', async () => {
    const child = spawn('python3', [`${EXAMPLES}python-legacy-server.py`], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    try {
      const lines = [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '1999-01-01', capabilities: {} },
        },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } },
        '{"jsonrpc": "2.0", "id": 2, "method": "ping"',
        { jsonrpc: '2.0', id: 3, method: 'resources/list' },
        { jsonrpc: '2.0', id: 4, method: 'ping' },
      ];
      for (const line of lines)
        child.stdin.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
      child.stdin.end();
      let out = '';
      for await (const chunk of child.stdout) out += String(chunk);
      const responses = out
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(responses.map((response) => [response.id, response.error?.code ?? 'ok'])).toEqual([
        [1, 'ok'],
        [null, -32700],
        [3, -32601],
        [4, 'ok'],
      ]);
      // An unsupported version is answered with the newest one the server speaks.
      expect(responses[0].result.protocolVersion).toBe('2025-11-25');
    } finally {
      child.kill();
    }
  });
});
