import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_INBOUND_MEMBERS, readInbound } from '../../src/gateway/jsonrpc/inbound.ts';
import { initializeMessage, type Running, startProxyHttp } from './processes.ts';

const VERSION = '2025-06-18';

/** A ping whose params hold `members` members, the id opening the text. */
function wideMessage(id: number, members: number): string {
  const params = Array.from({ length: members - 1 }, (_, i) => `"k${i}":0`).join(',');
  return `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{${params}}}`;
}

/** Members of wideMessage besides params': jsonrpc, id, method, params. */
const ENVELOPE_MEMBERS = 4;

describe('the member bound of a client message', () => {
  it('refuses a message past the bound before parsing it, under the id its opening names', () => {
    const bytes = Buffer.from(wideMessage(7, MAX_INBOUND_MEMBERS - ENVELOPE_MEMBERS + 2));
    const inbound = readInbound(bytes, 'line');
    expect(inbound).toMatchObject({ kind: 'refused', id: 7 });
    if (inbound.kind !== 'refused') return;
    expect(inbound.error.code).toBe('INPUT_TOO_LARGE');
    expect(inbound.error.details).toEqual({ max_members: MAX_INBOUND_MEMBERS });
    // At the bound a message is read; a colon inside a string is no member.
    const atBound = Buffer.from(wideMessage(8, MAX_INBOUND_MEMBERS - ENVELOPE_MEMBERS + 1));
    expect(readInbound(atBound, 'body').kind).toBe('message');
    const colons = JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'ping',
      params: { s: ':'.repeat(200_000) },
    });
    expect(readInbound(Buffer.from(colons), 'body').kind).toBe('message');
  });
});

describe('the JSON-RPC shape of a client message', () => {
  it('refuses JSON that is not JSON-RPC with -32600 and INVALID_INPUT, under its id, on every transport', () => {
    for (const unit of ['line', 'body'] as const) {
      const cases: [string, number | null][] = [
        ['{"id":7,"method":"ping"}', 7],
        ['[]', null],
        ['"text"', null],
        ['[{"jsonrpc":"2.0","id":1,"method":"ping"},{"foo":1}]', null],
      ];
      for (const [text, id] of cases) {
        const inbound = readInbound(Buffer.from(text), unit);
        expect(inbound, text).toMatchObject({ kind: 'refused', id, jsonRpcCode: -32600 });
        if (inbound.kind === 'refused') expect(inbound.error.code).toBe('INVALID_INPUT');
      }
    }
  });
});

describe('a 2025-era HTTP session refuses hostile bodies and reads on', () => {
  let proxy: Running;
  let session: string;

  function post(body: string, inSession = true): Promise<Response> {
    return fetch(proxy.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': VERSION,
        ...(session && inSession ? { 'mcp-session-id': session } : {}),
      },
      body,
    });
  }

  beforeAll(async () => {
    proxy = await startProxyHttp();
    const opened = await post(JSON.stringify(initializeMessage(1, 'bounds', VERSION)));
    session = opened.headers.get('mcp-session-id') ?? '';
    await opened.text();
    const initialized = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    await initialized.text();
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  it('answers JSON that is not JSON-RPC with -32600 and its canonical code, under its id', async () => {
    for (const inSession of [true, false]) {
      const reply = await post(JSON.stringify({ jsonrpc: '1.0', id: 10, method: 'ping' }), inSession);
      expect(reply.status).toBe(400);
      expect(await reply.json()).toMatchObject({
        jsonrpc: '2.0',
        id: 10,
        error: { code: -32600, data: { canonical_code: 'INVALID_INPUT' } },
      });
    }
  });

  it('answers a body with 320,000 members with 413 INPUT_TOO_LARGE, and the next request normally', async () => {
    const reply = await post(wideMessage(11, 320_000));
    expect(reply.status).toBe(413);
    expect(await reply.json()).toMatchObject({
      id: 11,
      error: { data: { canonical_code: 'INPUT_TOO_LARGE', max_members: MAX_INBOUND_MEMBERS } },
    });
    const next = await post(JSON.stringify({ jsonrpc: '2.0', id: 12, method: 'ping' }));
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ id: 12, result: {} });
  });
});
