import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import {
  Client,
  type ClientCapabilities,
  ProtocolError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpGateway, startHttpGateway } from '../../src/gateway/http/server.ts';
import { UpstreamFleet } from '../../src/gateway/relay/upstream-fleet.ts';
import { UpstreamPool } from '../../src/gateway/relay/upstream-pool.ts';
import type { ConfiguredUpstream, UpstreamSharing } from '../../src/gateway/upstreams/upstream.ts';
import { FIXTURE, NODE } from './processes.ts';

/**
 * 2025-era HTTP sessions of one principal share one upstream process: what
 * the upstream sends on its own goes back to the session it concerns,
 * subscriptions and log levels are merged and kept per session, and another
 * principal never shares it. `sharing: 'per-session'` keeps a process per session.
 */

const A = 'token-a-0123456789abcdef';
const B = 'token-b-0123456789abcdef';
const WATCHED = 'test://watched-resource';

let gateway: HttpGateway | undefined;
const clients: Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => {})));
  await gateway?.close();
  gateway = undefined;
});

/** The fixture, tagged so that its processes can be counted: the tag is an argument it ignores. */
function fixture(name: string, tag: string, sharing?: UpstreamSharing): ConfiguredUpstream {
  return {
    name,
    kind: 'stdio',
    command: NODE,
    args: [FIXTURE, tag],
    ...(sharing ? { sharing } : {}),
  };
}

/** The live processes whose command line carries the tag. */
function processesTagged(tag: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(tag)) found.push(Number(entry));
    } catch {
      // It exited while we looked.
    }
  }
  return found;
}

/** A gateway with two bearer tokens: sessions share upstreams within a principal, and an anonymous session is a principal of its own. */
function start(upstreams: ConfiguredUpstream[]): Promise<HttpGateway> {
  return startHttpGateway({
    fleet: new UpstreamFleet({ upstreams }),
    warmSpare: false,
    tokens: [
      { token: A, tier: 'pro' },
      { token: B, tier: 'pro' },
    ],
  });
}

interface Opened {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

/** An official SDK client on a 2025-era session of its own. */
async function session(
  options: {
    token?: string;
    capabilities?: ClientCapabilities;
    pinModern?: boolean;
    setup?: (client: Client) => void;
  } = {},
): Promise<Opened> {
  if (!gateway) throw new Error('no gateway');
  const client = new Client(
    { name: 'shared-test', version: '1.0.0' },
    {
      capabilities: options.capabilities ?? {},
      ...(options.pinModern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
    },
  );
  options.setup?.(client);
  // Token A unless told: the sessions of one principal are what shares upstreams.
  const transport = new StreamableHTTPClientTransport(new URL(gateway.url), {
    requestInit: { headers: { authorization: `Bearer ${options.token ?? A}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

function textOf(result: { content?: unknown }): string {
  return (result.content as { text?: string }[] | undefined)?.[0]?.text ?? '';
}

async function pidOf(client: Client, tool = 'pid'): Promise<string> {
  return textOf(await client.callTool({ name: tool, arguments: {} }));
}

/** Starts a slow call and resolves once it is running upstream (it reports progress 0 first). */
async function slowCall(client: Client, signal?: AbortSignal): Promise<{ done: Promise<unknown> }> {
  const running = Promise.withResolvers<void>();
  const done = client
    .callTool(
      { name: 'slow', arguments: { ms: 20_000 } },
      { onprogress: () => running.resolve(), ...(signal ? { signal } : {}) },
    )
    .catch((error: unknown) => error);
  await Promise.race([running.promise, done]);
  return { done };
}

const sampled = (text: string) => async () => ({
  role: 'assistant' as const,
  model: 'm',
  content: { type: 'text' as const, text },
});

describe('one upstream process per principal', () => {
  it('serves every session of a principal from one process, and its 2026-07-28 requests from one more', async () => {
    const tag = `shared-${randomUUID()}`;
    gateway = await start([fixture('fixture', tag)]);
    const fromA = await Promise.all(Array.from({ length: 5 }, () => session()));
    const fromB = await Promise.all(Array.from({ length: 2 }, () => session({ token: B })));
    const pidsA = await Promise.all(fromA.map(({ client }) => pidOf(client)));
    const pidsB = await Promise.all(fromB.map(({ client }) => pidOf(client)));
    expect(new Set(pidsA).size).toBe(1);
    expect(new Set(pidsB).size).toBe(1);
    // Two tokens never share a process.
    expect(pidsA[0]).not.toBe(pidsB[0]);
    expect(processesTagged(tag).sort()).toEqual([Number(pidsA[0]), Number(pidsB[0])].sort());
    expect(gateway.sessionCount()).toBe(7);

    // The client's era is part of what its upstreams are told (an upstream that speaks both is
    // spoken to in the client's): a principal's 2026-07-28 requests share a process of their own.
    const modern = await session({ token: A, pinModern: true });
    const again = await session({ token: A, pinModern: true });
    expect(modern.client.getProtocolEra()).toBe('modern');
    const modernPid = await pidOf(modern.client);
    expect(modernPid).not.toBe(pidsA[0]);
    expect(await pidOf(again.client)).toBe(modernPid);
    expect(processesTagged(tag)).toHaveLength(3);
  });

  it('keeps the others working when one session ends, and keeps the process for the next session', async () => {
    const tag = `ending-${randomUUID()}`;
    gateway = await start([fixture('fixture', tag)]);
    const first = await session();
    const second = await session();
    const pid = await pidOf(first.client);
    await first.transport.terminateSession();
    expect(gateway.sessionCount()).toBe(1);
    const echo = await second.client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    expect(echo.structuredContent).toEqual({ text: 'still here' });
    expect(await pidOf(second.client)).toBe(pid);
    await second.transport.terminateSession();
    expect(gateway.sessionCount()).toBe(0);
    // No session left: the principal's upstream stays for the session idle time.
    const third = await session();
    expect(await pidOf(third.client)).toBe(pid);
    expect(processesTagged(tag)).toEqual([Number(pid)]);
  });

  it("with sharing 'per-session', gives each session its own process, next to a shared one", async () => {
    const tag = `mixed-${randomUUID()}`;
    gateway = await start([fixture('alpha', tag), fixture('beta', tag, 'per-session')]);
    const sessions = await Promise.all(Array.from({ length: 3 }, () => session()));
    const [first, second] = sessions as [Opened, Opened];
    const alpha = await Promise.all(sessions.map(({ client }) => pidOf(client, 'alpha__pid')));
    const beta = await Promise.all(sessions.map(({ client }) => pidOf(client, 'beta__pid')));
    expect(new Set(alpha).size).toBe(1);
    expect(new Set(beta).size).toBe(3);
    // One more beta: the spare that each new session starts for the next one.
    expect(processesTagged(tag).sort()).toEqual(expect.arrayContaining([alpha[0], ...beta].map(Number)));
    expect(processesTagged(tag)).toHaveLength(5);
    // Closing a session leaves the shared process to the others.
    await first.transport.terminateSession();
    expect(await pidOf(second.client, 'alpha__pid')).toBe(alpha[0]);
    expect(processesTagged(tag)).toContain(Number(alpha[0]));
  });
});

describe('what a shared upstream sends on its own', () => {
  it("sends a sampling request during A's call to A's client, even with B's older call in flight", async () => {
    gateway = await start([fixture('fixture', `sampling-${randomUUID()}`)]);
    const asked: string[] = [];
    const a = await session({
      capabilities: { sampling: {}, elicitation: {} },
      setup: (client) => {
        client.setRequestHandler('sampling/createMessage', sampled('from A'));
        client.setRequestHandler('elicitation/create', async () => ({
          action: 'accept' as const,
          content: { username: 'a', email: 'a@example.com' },
        }));
      },
    });
    const b = await session({
      capabilities: { sampling: {}, elicitation: {} },
      setup: (client) => {
        client.setRequestHandler('sampling/createMessage', async () => {
          asked.push('sampling');
          return sampled('from B')();
        });
        client.setRequestHandler('elicitation/create', async () => {
          asked.push('elicitation');
          return { action: 'decline' as const };
        });
      },
    });
    const stop = new AbortController();
    const older = await slowCall(b.client, stop.signal);
    const result = await a.client.callTool({ name: 'test_sampling', arguments: { prompt: 'p' } });
    expect(textOf(result)).toBe('LLM response: from A');
    const elicited = await a.client.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } });
    expect(textOf(elicited)).toContain('action=accept');
    stop.abort();
    await older.done;
    expect(asked).toEqual([]);
  });

  it('fans resources/updated out to the subscribed sessions, and unsubscribes upstream after the last', async () => {
    gateway = await start([fixture('fixture', `subscribe-${randomUUID()}`)]);
    const updates = new Map<string, number>();
    const arrived = new Map<string, () => void>();
    const counting = (name: string) => (client: Client) =>
      client.setNotificationHandler('notifications/resources/updated', async () => {
        updates.set(name, (updates.get(name) ?? 0) + 1);
        arrived.get(name)?.();
      });
    const next = (name: string) =>
      new Promise<void>((resolve) => {
        arrived.set(name, resolve);
      });
    const a = await session({ setup: counting('a') });
    const b = await session({ setup: counting('b') });
    const c = await session({ setup: counting('c') });
    const subscribedUpstream = async () =>
      JSON.parse(textOf(await c.client.callTool({ name: 'subscribed', arguments: {} }))) as string[];

    // The fixture announces a change soon after the upstream is subscribed.
    const first = next('a');
    await a.client.subscribeResource({ uri: WATCHED });
    await first;
    await b.client.subscribeResource({ uri: WATCHED });
    const [toA, toB] = [next('a'), next('b')];
    expect(textOf(await c.client.callTool({ name: 'touch_resource', arguments: { uri: WATCHED } }))).toBe(
      'touched',
    );
    await Promise.all([toA, toB]);
    // C did not subscribe: a round trip later, it still has nothing.
    await c.client.ping();
    expect(updates.get('c')).toBeUndefined();

    await a.client.unsubscribeResource({ uri: WATCHED });
    expect(await subscribedUpstream()).toEqual([WATCHED]);
    // B leaves without unsubscribing: its subscription goes with its session.
    await b.transport.terminateSession();
    expect(await subscribedUpstream()).toEqual([]);
  });

  it("counts a 2026-07-28 listen stream's subscription with the sessions' own", async () => {
    gateway = await start([fixture('fixture', `listen-${randomUUID()}`)]);
    const modern = await session({ pinModern: true });
    const legacy = await session();
    const subscribedUpstream = async () =>
      JSON.parse(textOf(await legacy.client.callTool({ name: 'subscribed', arguments: {} }))) as string[];
    const stream = await modern.client.listen({ resourceSubscriptions: [WATCHED] });
    await legacy.client.subscribeResource({ uri: WATCHED });
    // Once close() resolves, the gateway has let the stream's resources go.
    await stream.close();
    expect(await subscribedUpstream()).toEqual([WATCHED]);
    await legacy.client.unsubscribeResource({ uri: WATCHED });
    expect(await subscribedUpstream()).toEqual([]);
  });

  it("keeps each session's log level, with the upstream at the most verbose one", async () => {
    gateway = await start([fixture('fixture', `levels-${randomUUID()}`)]);
    const received = new Map<string, number>();
    const counting = (name: string) => (client: Client) =>
      client.setNotificationHandler('notifications/message', async () => {
        received.set(name, (received.get(name) ?? 0) + 1);
      });
    const verbose = await session({ setup: counting('verbose') });
    const quiet = await session({ setup: counting('quiet') });
    await verbose.client.setLoggingLevel('info');
    // Set last: had it reached the upstream as it is, the verbose session would hear nothing.
    await quiet.client.setLoggingLevel('error');
    await verbose.client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    await quiet.client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    expect(received.get('verbose')).toBe(3);
    expect(received.get('quiet')).toBeUndefined();
  });

  it("tells every session of the principal that the lists changed, and no other principal's", async () => {
    gateway = await start([fixture('fixture', `announce-${randomUUID()}`)]);
    const told = (client: Client) => {
      const changed = Promise.withResolvers<void>();
      client.setNotificationHandler('notifications/tools/list_changed', async () => changed.resolve());
      return changed.promise;
    };
    let outsider = 0;
    const a1 = await session();
    const a2 = await session();
    const b = await session({
      token: B,
      setup: (client) =>
        client.setNotificationHandler('notifications/tools/list_changed', async () => {
          outsider++;
        }),
    });
    const [first, second] = [told(a1.client), told(a2.client)];
    expect(textOf(await a1.client.callTool({ name: 'announce', arguments: {} }))).toBe('announced');
    await Promise.all([first, second]);
    await b.client.ping();
    expect(outsider).toBe(0);
  });
});

describe('a shared upstream that crashes', () => {
  it('fails the calls in flight of every session with ADAPTER.EXECUTION.FAILED, then serves again', async () => {
    gateway = await start([fixture('fixture', `crash-${randomUUID()}`)]);
    const [a, b, c] = await Promise.all([session(), session(), session()]);
    const before = await pidOf(a.client);
    const inFlight = await Promise.all([slowCall(a.client), slowCall(b.client)]);
    await c.client.callTool({ name: 'crash', arguments: { code: 5 } }).catch(() => {});
    for (const { done } of inFlight) {
      const error = await done;
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).data).toMatchObject({
        canonical_code: 'ADAPTER.EXECUTION.FAILED',
        exit_code: 5,
      });
    }
    const after = await pidOf(b.client);
    expect(after).not.toBe(before);
    expect(await pidOf(a.client)).toBe(after);
  });
});

describe('a shared upstream that gave up', () => {
  it('is started afresh for the next session, so one client cannot keep the others out', async () => {
    const tag = `gave-up-${randomUUID()}`;
    gateway = await start([{ ...fixture('fixture', tag), options: { restart: { maxRestarts: 0 } } }]);
    const crasher = await session();
    const before = await pidOf(crasher.client);
    await crasher.client.callTool({ name: 'crash', arguments: { code: 7 } }).catch(() => {});
    // No restart budget: the crasher's set stays down, and says so.
    const failed = await crasher.client
      .callTool({ name: 'pid', arguments: {} })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ProtocolError);
    expect((failed as ProtocolError).data).toMatchObject({ canonical_code: 'ADAPTER.EXECUTION.FAILED' });
    // A client arriving afterwards is served by a fresh process.
    const next = await session();
    const after = await pidOf(next.client);
    expect(after).not.toBe(before);
    expect(processesTagged(tag)).toEqual([Number(after)]);
  });
});

describe('the pool', () => {
  it("closes a principal's set once it has gone unused for the idle time", async () => {
    const tag = `idle-${randomUUID()}`;
    const pool = new UpstreamPool(new UpstreamFleet({ upstreams: [fixture('fixture', tag)] }), {
      idleMs: 50,
    });
    try {
      const lease = await pool.acquire('someone');
      expect(processesTagged(tag)).toHaveLength(1);
      const again = await pool.acquire('someone');
      expect(again.set).toBe(lease.set);
      const closed = Promise.withResolvers<void>();
      lease.set.onClosed(() => closed.resolve());
      lease.release();
      again.release();
      await closed.promise;
      expect(pool.principals).toBe(0);
      const fresh = await pool.acquire('someone');
      expect(fresh.set).not.toBe(lease.set);
      fresh.release();
    } finally {
      await pool.close();
    }
  });
});
