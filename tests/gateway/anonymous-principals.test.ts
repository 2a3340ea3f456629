import { request as httpRequest } from 'node:http';
import { Client, StreamableHTTPClientTransport, withInputRequired } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InputRequired, SAMPLED, statelessEraClient, textOf } from './era-2026-07-28.ts';
import { deferred } from './events.ts';
import { type Running, startProxyHttp } from './processes.ts';

/**
 * Anonymous callers over HTTP are principals apart: two anonymous clients of
 * one gateway, from the same address as local clients are, never see nor
 * answer each other's server-to-client requests or input rounds. A 2025-era
 * session is its own principal with upstreams of its own; anonymous
 * 2026-07-28 requests share upstreams that never guess whose a request is,
 * and their requestState is bound to their address.
 */

const NAME = { action: 'accept' as const, content: { name: 'Ada' } };
const ANY = {
  '~standard': { version: 1 as const, vendor: 'tests', validate: (value: unknown) => ({ value }) },
};

let proxy: Running;
const open: Client[] = [];

beforeAll(async () => {
  proxy = await startProxyHttp();
});

afterAll(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => {})));
  await proxy?.stop();
});

/** An anonymous client connected to the gateway; `seen` gets each POST body it sends. */
async function connect(client: Client, seen?: (body: string) => void): Promise<Client> {
  open.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(proxy.url), {
      fetch: (input, init) => {
        if (typeof init?.body === 'string') seen?.(init.body);
        return fetch(input, init);
      },
    }),
  );
  return client;
}

/** A client that records the elicitation requests put to it and answers them with `NAME`. */
function asking(client: Client): string[] {
  const asked: string[] = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return NAME;
  });
  return asked;
}

/** Calls ask_when_released; resolves `started` once the upstream has it (its first progress). */
function askWhenReleased(client: Client, legOnly = false) {
  const started = deferred();
  const options = { onprogress: () => started.resolve(), timeout: 30_000 };
  const params = { name: 'ask_when_released', arguments: {} };
  const done = legOnly
    ? (client.request({ method: 'tools/call', params }, withInputRequired(ANY), {
        ...options,
        allowInputRequired: true,
      }) as Promise<InputRequired>)
    : client.callTool(params, options);
  return { started: started.promise, done: done.then(textOf, (error: unknown) => error) };
}

describe('anonymous 2025-era sessions', () => {
  it('each have their own upstream: one never gets or answers the other’s request', async () => {
    const a = new Client({ name: 'anon-a', version: '1' }, { capabilities: { elicitation: {} } });
    const b = new Client({ name: 'anon-b', version: '1' }, { capabilities: { elicitation: {} } });
    const aAsked = asking(a);
    const bAsked = asking(b);
    await connect(a);
    await connect(b);
    expect(a.getProtocolEra()).toBe('legacy');
    const pidOf = async (client: Client) => textOf(await client.callTool({ name: 'pid', arguments: {} }));
    expect(await pidOf(a)).not.toBe(await pidOf(b));

    // A's call waits first, B's after it (the newest in flight); then A's upstream asks.
    const aCall = askWhenReleased(a);
    await aCall.started;
    const bCall = askWhenReleased(b);
    await bCall.started;
    expect(textOf(await a.callTool({ name: 'release', arguments: {} }))).toBe('released');

    expect(await aCall.done).toBe('name={"name":"Ada"}');
    expect(aAsked).toEqual(['Released: your name?']);
    expect(bAsked).toEqual([]);
    await b.close();
    await bCall.done;
  });
});

describe('anonymous 2026-07-28 requests', () => {
  it('never get another’s server-to-client request as their input round', async () => {
    const a = statelessEraClient({ elicitation: {} });
    const b = statelessEraClient({ elicitation: {} });
    const bAsked = asking(b);
    await connect(a);
    await connect(b);
    // A's call first, B's after it; both wait upstream, then both ask at once.
    const aCall = askWhenReleased(a, true);
    await aCall.started;
    const bCall = askWhenReleased(b);
    await bCall.started;
    expect(textOf(await a.callTool({ name: 'release', arguments: {} }))).toBe('released');

    // Whose request is whose cannot be told between anonymous clients: neither is asked.
    const aDone = (await aCall.done) as { data?: { canonical_code?: string } };
    expect(aDone).toMatchObject({ data: { canonical_code: 'DEPENDENCY_UNAVAILABLE' } });
    expect(await bCall.done).toMatchObject({ data: { canonical_code: 'DEPENDENCY_UNAVAILABLE' } });
    expect(bAsked).toEqual([]);

    // Alone, an anonymous call still gets its own round.
    const alone = askWhenReleased(b);
    await alone.started;
    expect(textOf(await b.callTool({ name: 'release', arguments: {} }))).toBe('released');
    expect(await alone.done).toBe('name={"name":"Ada"}');
    expect(bAsked).toEqual(['Released: your name?']);
  });

  it('refuses A’s requestState presented from another address, and A’s own retry resumes', async () => {
    const a = statelessEraClient({ sampling: {} });
    const bodies: string[] = [];
    await connect(a, (body) => bodies.push(body));
    const params = { name: 'test_sampling', arguments: { prompt: 'p' } };
    const first = (await a.request({ method: 'tools/call', params }, withInputRequired(ANY), {
      allowInputRequired: true,
    })) as InputRequired;
    expect(first.resultType).toBe('input_required');
    const [key] = Object.keys(first.inputRequests ?? {});
    const answers = { inputResponses: { [key as string]: SAMPLED }, requestState: first.requestState };

    // B replays A's request with A's state and answers, from 127.0.0.2 (loopback, another address).
    const sent = JSON.parse(bodies.at(-1) as string) as { params: Record<string, unknown> };
    const stolen = await postFrom(
      '127.0.0.2',
      new URL(proxy.url),
      JSON.stringify({ ...sent, id: 'b-1', params: { ...sent.params, ...answers } }),
    );
    expect(stolen).toMatchObject({ error: { code: -32602, message: 'Invalid or expired requestState' } });

    const resumed = await a.request(
      { method: 'tools/call', params: { ...params, ...answers } },
      withInputRequired(ANY),
      { allowInputRequired: true },
    );
    expect(textOf(resumed as { content?: unknown })).toBe('LLM response: sampled');
  });
});

/** One 2026-07-28 POST sent from `local`; its JSON-RPC answer (the body is JSON or one SSE event). */
function postFrom(local: string, url: URL, body: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: local,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'test_sampling',
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          const data = text.includes('data:')
            ? (text
                .split('\n')
                .find((line) => line.startsWith('data:'))
                ?.slice(5) ?? '')
            : text;
          try {
            resolve(JSON.parse(data));
          } catch (error) {
            reject(new Error(`not JSON (${res.statusCode}): ${text.slice(0, 200)}; ${String(error)}`));
          }
        });
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}
