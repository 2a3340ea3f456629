import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type HttpGateway,
  type SessionCloseReason,
  startHttpGateway,
} from '../../src/gateway/http/server.ts';
import { UpstreamFleet } from '../../src/gateway/relay/upstream-fleet.ts';
import { FIXTURE, initializeMessage, NODE } from './processes.ts';

/**
 * 2025-era HTTP sessions are handed out fairly: the total cap holds when many
 * initializes arrive at once, one principal cannot hold more than its share,
 * and a session is usable only by the principal that opened it.
 */

const A = 'token-a-0123456789abcdef';
const B = 'token-b-0123456789abcdef';
const C = 'token-c-0123456789abcdef';
let gateway: HttpGateway | undefined;

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

function initialize(url: string, token?: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(initializeMessage(1, 'fairness')),
  });
}

function start(options: { maxSessions: number; maxSessionsPerPrincipal?: number; tokens?: boolean }) {
  return startHttpGateway({
    fleet: new UpstreamFleet({
      upstreams: [{ name: 'fixture', kind: 'stdio', command: NODE, args: [FIXTURE] }],
    }),
    warmSpare: false,
    maxSessions: options.maxSessions,
    ...(options.maxSessionsPerPrincipal ? { maxSessionsPerPrincipal: options.maxSessionsPerPrincipal } : {}),
    ...(options.tokens
      ? {
          tokens: [
            { token: A, tier: 'pro' },
            { token: B, tier: 'pro' },
            { token: C, tier: 'pro' },
          ],
        }
      : {}),
  });
}

describe('2025-era sessions over HTTP', () => {
  it('never opens more than the cap, however many initializes arrive at once', async () => {
    gateway = await start({ maxSessions: 3, maxSessionsPerPrincipal: 10 });
    const url = gateway.url;
    const answers = await Promise.all(Array.from({ length: 8 }, () => initialize(url)));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status === 503)).toHaveLength(5);
    expect(gateway.sessionCount()).toBe(3);
  });

  it("caps each principal's sessions, its oldest idle one making room, and keeps principals apart", async () => {
    gateway = await start({ maxSessions: 8, maxSessionsPerPrincipal: 2, tokens: true });
    const url = gateway.url;
    const use = (id: string, token: string, method = 'POST') =>
      fetch(url, {
        method,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': id,
          'mcp-protocol-version': '2025-06-18',
          authorization: `Bearer ${token}`,
        },
        ...(method === 'POST'
          ? { body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) }
          : {}),
      });
    const idOf = (answer: Response) => answer.headers.get('mcp-session-id') as string;
    const first = idOf(await initialize(url, A));
    const second = idOf(await initialize(url, A));
    const fromB = idOf(await initialize(url, B));
    // A is at its cap: its least recently used session gives way to the new one.
    expect((await use(second, A)).status).toBe(200);
    expect((await initialize(url, A)).status).toBe(200);
    expect((await use(first, A)).status).toBe(404);
    expect((await use(second, A)).status).toBe(200);
    expect(gateway.sessionCount()).toBe(3);
    // B's session is B's alone: A can neither use nor end it.
    expect((await use(fromB, A)).status).toBe(404);
    expect((await use(fromB, A, 'DELETE')).status).toBe(404);
    expect((await use(fromB, B)).status).toBe(200);
  });
});

describe('a full session table', () => {
  it('makes room for a principal holding fewer, from the largest holder’s idle sessions', async () => {
    gateway = await start({ maxSessions: 4, maxSessionsPerPrincipal: 2, tokens: true });
    const url = gateway.url;
    // A and B each at their cap: every session is taken, though only two principals hold them.
    for (const token of [A, A, B, B]) expect((await initialize(url, token)).status).toBe(200);
    expect(gateway.sessionCount()).toBe(4);
    // C holds none: it is not kept out; one of the holders' idle sessions gives way.
    expect((await initialize(url, C)).status).toBe(200);
    expect(gateway.sessionCount()).toBe(4);
    // Now C holds one and nobody more than one beyond it: no room at the others' expense.
    expect((await initialize(url, C)).status).toBe(503);
    expect(gateway.sessionCount()).toBe(4);
  });
});

describe('abandoned 2025-era sessions', () => {
  it('closes a session whose client went away without DELETE', async () => {
    const closed = Promise.withResolvers<SessionCloseReason>();
    gateway = await startHttpGateway({
      fleet: new UpstreamFleet({
        upstreams: [{ name: 'fixture', kind: 'stdio', command: NODE, args: [FIXTURE] }],
      }),
      warmSpare: false,
      abandonedSessionMs: 100,
      onSessionClosed: (_id, reason) => closed.resolve(reason),
    });
    const client = new Client({ name: 'short-lived', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    await client.listTools();
    expect(gateway.sessionCount()).toBe(1);
    // The SDK client's close() ends its GET stream and sends no DELETE.
    await client.close();
    expect(await closed.promise).toBe('abandoned');
    expect(gateway.sessionCount()).toBe(0);
  });
});

describe('idle 2025-era sessions', () => {
  it('closes a session that received nothing for sessionIdleMs', async () => {
    const closed = Promise.withResolvers<SessionCloseReason>();
    gateway = await startHttpGateway({
      fleet: new UpstreamFleet({
        upstreams: [{ name: 'fixture', kind: 'stdio', command: NODE, args: [FIXTURE] }],
      }),
      warmSpare: false,
      sessionIdleMs: 100,
      onSessionClosed: (_id, reason) => closed.resolve(reason),
    });
    // A raw initialize opens no GET stream, so only the idle limit can end the session.
    expect((await initialize(gateway.url)).status).toBe(200);
    expect(await closed.promise).toBe('idle');
    expect(gateway.sessionCount()).toBe(0);
  });
});
