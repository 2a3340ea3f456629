import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prefersEventStream } from '../../src/gateway/transports/2025-11-25/session-transport.ts';
import { deferred } from './events.ts';
import { initializeMessage, type Running, startProxyHttp } from './processes.ts';

const VERSION = '2025-06-18';
const JSON_FIRST = 'application/json, text/event-stream';
const SSE_FIRST = 'text/event-stream, application/json';

interface Posted {
  status: number;
  type: string;
  session: string | null;
  text: string;
}

/** The JSON-RPC messages of a reply, whichever form the gateway chose. */
function messagesOf(reply: Posted): Record<string, unknown>[] {
  if (reply.type.startsWith('application/json')) {
    const value = JSON.parse(reply.text) as unknown;
    return (Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
  }
  return reply.text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

describe('a 2025-era HTTP session answers each POST as JSON or as a stream', () => {
  let proxy: Running;
  let session: string;

  /** POSTs on the session; resolves with the response as soon as its headers are in. */
  function send(
    body: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Response> {
    return fetch(proxy.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: JSON_FIRST,
        'mcp-protocol-version': VERSION,
        ...(session ? { 'mcp-session-id': session } : {}),
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  }

  async function read(response: Response): Promise<Posted> {
    return {
      status: response.status,
      type: response.headers.get('content-type') ?? '',
      session: response.headers.get('mcp-session-id'),
      text: await response.text(),
    };
  }

  async function post(body: unknown, headers: Record<string, string> = {}): Promise<Posted> {
    return read(await send(body, headers));
  }

  const call = (id: number, name: string, args: Record<string, unknown> = {}, meta?: object) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
  });

  beforeAll(async () => {
    proxy = await startProxyHttp();
    const init = await post(initializeMessage(0, 'raw', VERSION));
    expect(init.status).toBe(200);
    session = init.session ?? '';
    expect(session).not.toBe('');
    const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(initialized.status).toBe(202);
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  it('answers a call that sends nothing along the way with one JSON object', async () => {
    const reply = await post(call(1, 'echo', { text: 'plain' }));
    expect(reply.status).toBe(200);
    expect(reply.type).toMatch(/^application\/json/);
    expect(reply.session).toBe(session);
    expect(JSON.parse(reply.text)).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { structuredContent: { text: 'plain' } },
    });
  });

  it('switches to a stream when progress comes before the result, keeping their order', async () => {
    const reply = await post(call(2, 'test_tool_with_progress', {}, { progressToken: 'p-2' }));
    expect(reply.status).toBe(200);
    expect(reply.type).toMatch(/^text\/event-stream/);
    const messages = messagesOf(reply);
    const last = messages.at(-1);
    expect(last).toMatchObject({ id: 2 });
    const progress = messages.slice(0, -1);
    expect(progress.length).toBeGreaterThan(0);
    for (const message of progress) {
      expect(message).toMatchObject({ method: 'notifications/progress', params: { progressToken: 'p-2' } });
    }
  });

  it('streams from the start for a client that ranks the event stream first', async () => {
    const reply = await post(call(3, 'echo', { text: 'streamed' }), { accept: SSE_FIRST });
    expect(reply.type).toMatch(/^text\/event-stream/);
    expect(messagesOf(reply)).toEqual([expect.objectContaining({ id: 3 })]);
  });

  it('answers a batch with an array holding every response', async () => {
    const reply = await post([call(4, 'echo', { text: 'a' }), call(5, 'echo', { text: 'b' })]);
    expect(reply.type).toMatch(/^application\/json/);
    const ids = messagesOf(reply)
      .map((message) => message.id)
      .sort();
    expect(ids).toEqual([4, 5]);
  });

  it('answers a POST of notifications only with 202 and no body', async () => {
    const reply = await post({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    expect(reply.status).toBe(202);
    expect(reply.text).toBe('');
  });

  it('refuses what the transport cannot take, with the JSON-RPC error of each case', async () => {
    const cases: [Promise<Posted>, number, number][] = [
      [post(call(6, 'echo', { text: 'x' }), { accept: 'application/json' }), 406, -32000],
      [post(call(7, 'echo', { text: 'x' }), { 'content-type': 'text/plain' }), 415, -32000],
      [post(call(8, 'echo', { text: 'x' }), { 'mcp-protocol-version': '1999-01-01' }), 400, -32000],
      [post(initializeMessage(9, 'again', VERSION)), 400, -32600],
      [post({ jsonrpc: '1.0', id: 10, method: 'ping' }), 400, -32600],
      [post([]), 400, -32600],
    ];
    for (const [reply, status, code] of cases) {
      const answered = await reply;
      expect(answered.status).toBe(status);
      expect(JSON.parse(answered.text)).toMatchObject({ jsonrpc: '2.0', error: { code } });
    }
    // The session survives all of them.
    expect((await post(call(11, 'echo', { text: 'still here' }))).status).toBe(200);
  });

  it('refuses a message nested past 1,000 levels with JSON_TOO_DEEP under its id, in either era', async () => {
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    const deep = (id: number, levels: number) =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","d":${nested(levels)}}}}`;
    // At the limit (the array 1,000 levels under the message's root) the call goes through.
    const atLimit = await post(deep(12, 996));
    expect(JSON.parse(atLimit.text)).toMatchObject({ id: 12, result: { structuredContent: { text: 'x' } } });
    // 2026-07-28: no session, the era in the headers. Without the check, serializing the body
    // again on its way to the SDK's handler overflowed the stack: an internal error.
    const modern = await fetch(proxy.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: JSON_FIRST,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'echo',
      },
      body: deep(14, 5000),
    });
    const legacy = await post(deep(13, 5000));
    const refusals: [{ status: number; text: string }, number][] = [
      [legacy, 13],
      [{ status: modern.status, text: await modern.text() }, 14],
    ];
    for (const [refused, id] of refusals) {
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.text)).toMatchObject({
        id,
        error: { code: -32602, data: { canonical_code: 'JSON_TOO_DEEP', max_depth: 1000 } },
      });
    }
  });

  it('keeps one GET stream per session and refuses a second with 409', async () => {
    const headers = {
      accept: 'text/event-stream',
      'mcp-session-id': session,
      'mcp-protocol-version': VERSION,
    };
    const controller = new AbortController();
    const first = await fetch(proxy.url, { headers, signal: controller.signal });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const second = await fetch(proxy.url, { headers });
    expect(second.status).toBe(409);
    controller.abort();
    await first.body?.cancel().catch(() => {});
  });

  it('survives a client that leaves in the middle of a call, and serves the next one', async () => {
    const controller = new AbortController();
    // With a progress token the upstream reports as soon as the call reaches it, which switches
    // the reply to a stream: its headers arriving mean the call is under way.
    const leaving = await send(
      call(12, 'slow', { ms: 1000 }, { progressToken: 'leaving' }),
      {},
      controller.signal,
    );
    expect(leaving.headers.get('content-type')).toMatch(/^text\/event-stream/);
    controller.abort();
    await expect(leaving.text()).rejects.toThrow();
    const next = await post(call(13, 'echo', { text: 'after' }));
    expect(JSON.parse(next.text)).toMatchObject({ id: 13, result: { structuredContent: { text: 'after' } } });
  });

  it('passes a cancellation POSTed by the SDK client on to the upstream', async () => {
    const client = new Client({ name: 'cancelling', version: '1.0.0' });
    // The cancellation is a POST of its own; once it is answered the gateway has passed it upstream,
    // ahead of any call sent after it.
    const cancelled = deferred<Response>();
    const transport = new StreamableHTTPClientTransport(new URL(proxy.url), {
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        if (typeof init?.body === 'string' && init.body.includes('"notifications/cancelled"')) {
          cancelled.resolve(response);
        }
        return response;
      },
    });
    await client.connect(transport);
    try {
      const controller = new AbortController();
      // The upstream reports progress once the call has reached it: only then is there something to cancel.
      const call = client
        .callTool(
          { name: 'slow', arguments: { ms: 5000 } },
          { signal: controller.signal, onprogress: () => controller.abort() },
        )
        .catch((error: unknown) => error);
      expect(await call).toBeInstanceOf(Error);
      expect((await cancelled.promise).status).toBe(202);
      const counted = await client.callTool({ name: 'cancellations', arguments: {} });
      expect(Number((counted.content as { text: string }[])[0]?.text)).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('refuses a request whose id is still waiting for its answer, and answers the first one', async () => {
    // The upstream's progress switches the reply to a stream: its headers arriving mean id 20 is
    // in flight, and it stays so for the second the tool takes.
    const first = await send(call(20, 'slow', { ms: 1000 }, { progressToken: 'p-20' }));
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const again = await post(call(20, 'echo', { text: 'same id' }));
    expect(again.status).toBe(400);
    expect(JSON.parse(again.text)).toMatchObject({ error: { code: -32600 } });
    const twice = await post([call(21, 'echo', { text: 'a' }), call(21, 'echo', { text: 'b' })]);
    expect(twice.status).toBe(400);
    expect(messagesOf(await read(first)).at(-1)).toMatchObject({
      id: 20,
      result: { content: [{ text: 'slow done' }] },
    });
  });

  it('ends the session on DELETE; the id is unknown afterwards', async () => {
    const client = new Client({ name: 'deleting', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(proxy.url));
    await client.connect(transport);
    const id = transport.sessionId ?? '';
    await transport.terminateSession();
    const after = await fetch(proxy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: JSON_FIRST, 'mcp-session-id': id },
      body: JSON.stringify(call(14, 'echo', { text: 'gone' })),
    });
    expect(after.status).toBe(404);
    await client.close();
  });
});

describe('prefersEventStream', () => {
  it('reads the client’s ranking by q-value, then by order', () => {
    expect(prefersEventStream('application/json, text/event-stream')).toBe(false);
    expect(prefersEventStream('text/event-stream, application/json')).toBe(true);
    expect(prefersEventStream('application/json;q=0.5, text/event-stream')).toBe(true);
    expect(prefersEventStream('text/event-stream;q=0.2, application/json;q=0.9')).toBe(false);
    expect(prefersEventStream('text/event-stream;q=0, application/json')).toBe(false);
    expect(prefersEventStream('*/*')).toBe(false);
  });
});
