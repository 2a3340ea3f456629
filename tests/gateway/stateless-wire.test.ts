import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, NODE, type Running, startListening } from './processes.ts';

/**
 * What the 2026-07-28 wire says with HTTP statuses, through the gateway as
 * the server behind it says it: a method nobody serves is 404 with -32601, a
 * capability the request's client did not declare is 400 with -32021
 * (`data.requiredCapabilities`), and a result is 200. The relay forwards
 * methods it does not know to an upstream, so these errors reach the SDK as a
 * handler's, which it would send with 200.
 */

const MODERN_ONLY = fileURLToPath(new URL('../fixtures/servers/modern-only.ts', import.meta.url));

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

let gateway: Running;

beforeAll(async () => {
  gateway = await startListening([BIN, 'proxy', '--http', '127.0.0.1:0', '--', NODE, MODERN_ONLY]);
});

afterAll(async () => {
  await gateway?.stop();
});

async function post(method: string, params: Record<string, unknown> = {}, name?: string) {
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: META } }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('HTTP statuses on the 2026-07-28 wire', () => {
  it('a method nobody serves: 404 with -32601', async () => {
    const { status, body } = await post('no/such/method');
    expect(status).toBe(404);
    expect(body).toMatchObject({ id: 7, error: { code: -32601 } });
  });

  it('a capability the client did not declare: 400 with -32021 naming it', async () => {
    const { status, body } = await post(
      'tools/call',
      { name: 'ask_model', arguments: { prompt: 'q' } },
      'ask_model',
    );
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: { code: -32021, data: { requiredCapabilities: { sampling: {} } } } });
  });

  it('a result: 200', async () => {
    const { status, body } = await post('tools/call', { name: 'echo', arguments: { text: 'fine' } }, 'echo');
    expect(status).toBe(200);
    expect(body).toMatchObject({ result: { content: [{ type: 'text', text: 'fine' }] } });
  });
});
