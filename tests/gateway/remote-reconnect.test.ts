import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClientSession, openClientSession } from '../../src/gateway/relay/client-session.ts';
import { UpstreamFleet } from '../../src/gateway/relay/upstream-fleet.ts';
import { deferred, within } from './events.ts';
import { FIXTURE, type Running, startListening } from './processes.ts';

/**
 * A remote Streamable HTTP upstream whose server goes away and comes back on
 * the same port: the calls in flight at the drop fail with
 * ADAPTER.EXECUTION.FAILED, and the upstream reconnects with the restart
 * backoff instead of staying broken.
 */

const codeOf = (error: unknown) => (error as { data?: { canonical_code?: string } }).data?.canonical_code;

describe('a remote Streamable HTTP upstream that drops and comes back', () => {
  let remote: Running;
  let port: string;
  let session: ClientSession;
  let client: Client;

  beforeAll(async () => {
    remote = await startListening([FIXTURE, '--http', '0']);
    port = new URL(remote.url).port;
    session = await openClientSession(
      new UpstreamFleet({
        upstreams: [{ name: 'remote', kind: 'http', url: remote.url }],
        upstream: { restart: { initialDelayMs: 50, maxDelayMs: 200, maxRestarts: 200 } },
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await session.relay.server.connect(serverSide);
    client = new Client({ name: 'reconnect-test', version: '1.0.0' });
    await client.connect(clientSide);
  });

  afterAll(async () => {
    await client?.close();
    await session?.close();
    await remote?.stop();
  });

  // Well below the call's own 60 s timeout: only a drop that is noticed can pass.
  it('fails the call in flight at the drop with ADAPTER.EXECUTION.FAILED', { timeout: 10_000 }, async () => {
    let reached: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const inFlight = client
      .callTool({ name: 'slow', arguments: { ms: 30_000 } }, { onprogress: () => reached(), timeout: 60_000 })
      .catch((error: unknown) => error);
    await started;
    await remote.stop();
    const error = await inFlight;
    expect(codeOf(error)).toBe('ADAPTER.EXECUTION.FAILED');
    expect((error as Error).message).toMatch(/upstream remote/);
  });

  it('reconnects once the server is back on the same port, and serves again', {
    timeout: 15_000,
  }, async () => {
    const down = await client
      .callTool({ name: 'echo', arguments: { text: 'gone' } })
      .catch((e: unknown) => e);
    expect(codeOf(down)).toBe('ADAPTER.EXECUTION.FAILED');

    const upstream = session.upstreams[0];
    const generation = upstream?.generation ?? 0;
    const recovered = deferred();
    const unsubscribe = upstream?.onRecovered(() => recovered.resolve());
    try {
      remote = await startListening([FIXTURE, '--http', port]);
      // Bounded: the backoff tops out at 200 ms here, so a few seconds is ample.
      await within(recovered.promise, 5_000, 'reconnection to the remote upstream');
    } finally {
      unsubscribe?.();
    }
    const answer = await client.callTool({ name: 'echo', arguments: { text: 'back' } });
    expect(answer).toMatchObject({ structuredContent: { text: 'back' } });
    expect(session.upstreams[0]?.generation).toBeGreaterThan(generation);
  });
});
