import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Connected, connectExample, firstText } from './spawn.ts';

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
