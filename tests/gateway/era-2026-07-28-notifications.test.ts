import type { Client } from '@modelcontextprotocol/client';
import { LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpTarget, statelessEraClient, stdioTarget, textOf } from './era-2026-07-28.ts';
import { within } from './events.ts';

/**
 * Upstream notifications for 2026-07-28 clients: listen streams, per-request log levels, progress.
 *
 * The gateway lets a listen stream's resources go once it learns the stream
 * closed: on stdio from the notifications/cancelled that close() writes, over
 * HTTP from the stream's connection, which close() drops before it POSTs that
 * notification and awaits the answer. Either way that is before any request
 * made after close() resolves, so the upstream's unsubscribe goes out first.
 */

function signal(): { promise: Promise<void>; fire: () => void } {
  let fire: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

describe.each([httpTarget(), stdioTarget()])('2026-07-28 notifications over $name', (target) => {
  let client: Client;
  const logs: string[] = [];

  beforeAll(async () => {
    await target.start();
    client = statelessEraClient();
    client.setNotificationHandler('notifications/message', async (notification) => {
      logs.push(`${notification.params.level}: ${String(notification.params.data)}`);
    });
    await target.connect(client);
  });

  afterAll(async () => {
    await client?.close();
    await target.stop();
  });

  it('delivers the upstream’s list_changed notifications on a listen stream', async () => {
    const tools = signal();
    const prompts = signal();
    const resources = signal();
    client.setNotificationHandler('notifications/tools/list_changed', async () => tools.fire());
    client.setNotificationHandler('notifications/prompts/list_changed', async () => prompts.fire());
    client.setNotificationHandler('notifications/resources/list_changed', async () => resources.fire());
    const listening = await client.listen({
      toolsListChanged: true,
      promptsListChanged: true,
      resourcesListChanged: true,
    });
    try {
      expect(listening.honoredFilter).toEqual({
        toolsListChanged: true,
        promptsListChanged: true,
        resourcesListChanged: true,
      });
      await client.callTool({ name: 'announce', arguments: {} });
      await Promise.all([tools.promise, prompts.promise, resources.promise]);
    } finally {
      await listening.close();
    }
  });

  it('keeps the upstream subscribed to the resources a listen stream names while it is open', async () => {
    const uri = `test://template/${target.name}-listen/data`;
    const updated = signal();
    client.setNotificationHandler('notifications/resources/updated', async (notification) => {
      if (notification.params.uri === uri) updated.fire();
    });
    expect(JSON.parse(textOf(await client.callTool({ name: 'subscribed', arguments: {} })))).not.toContain(
      uri,
    );
    const listening = await client.listen({ resourceSubscriptions: [uri] });
    expect(listening.honoredFilter).toEqual({ resourceSubscriptions: [uri] });
    // The stream is acknowledged only once the upstream is subscribed.
    expect(JSON.parse(textOf(await client.callTool({ name: 'subscribed', arguments: {} })))).toContain(uri);
    expect(textOf(await client.callTool({ name: 'touch_resource', arguments: { uri } }))).toBe('touched');
    await updated.promise;
    await listening.close();
    expect(JSON.parse(textOf(await client.callTool({ name: 'subscribed', arguments: {} })))).not.toContain(
      uri,
    );
  });

  it('subscribes a restarted upstream again to what open listen streams name', async () => {
    const uri = `test://template/${target.name}-restart/data`;
    // The fixture reports a resource as updated just after each subscription to it: first the
    // gateway's own, then, after the restart, the one it makes again.
    const subscribed = signal();
    const resubscribed = signal();
    let updates = 0;
    client.setNotificationHandler('notifications/resources/updated', async (notification) => {
      if (notification.params.uri !== uri) return;
      updates++;
      (updates === 1 ? subscribed : resubscribed).fire();
    });
    const listening = await client.listen({ resourceSubscriptions: [uri] });
    // Crashing before the first report went out would lose it with the process.
    await within(subscribed.promise, 10_000, 'resources/updated after subscribing');
    const before = textOf(await client.callTool({ name: 'pid', arguments: {} }));
    await client.callTool({ name: 'crash', arguments: {} }).catch(() => {});
    await within(resubscribed.promise, 10_000, 'resources/updated after the restart');
    // A new process, which has never heard of the URI unless the gateway subscribed it again.
    expect(textOf(await client.callTool({ name: 'pid', arguments: {} }))).not.toBe(before);
    expect(JSON.parse(textOf(await client.callTool({ name: 'subscribed', arguments: {} })))).toContain(uri);
    await listening.close();
  });

  it('refuses a listen stream naming more than 100 resources with INPUT_TOO_LARGE', async () => {
    const uris = Array.from({ length: 101 }, (_, index) => `test://template/${index}/data`);
    const error = await client.listen({ resourceSubscriptions: uris }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ data: { canonical_code: 'INPUT_TOO_LARGE' } });
    expect(JSON.parse(textOf(await client.callTool({ name: 'subscribed', arguments: {} })))).toEqual([]);
  });

  it('refuses a listen stream past 1,000 listened resources in all with RESOURCE_EXHAUSTED', async () => {
    const streams = [];
    for (let stream = 0; stream < 10; stream++) {
      const uris = Array.from({ length: 100 }, (_, index) => `test://template/${stream}-${index}/data`);
      streams.push(await client.listen({ resourceSubscriptions: uris }));
    }
    const error = await client
      .listen({ resourceSubscriptions: ['test://template/one-more/data'] })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ data: { canonical_code: 'RESOURCE_EXHAUSTED', max: 1000 } });
    // A resource already listened for costs nothing more.
    const again = await client.listen({ resourceSubscriptions: ['test://template/0-0/data'] });
    await again.close();
    await Promise.all(streams.map((stream) => stream.close()));
    expect(JSON.parse(textOf(await client.callTool({ name: 'subscribed', arguments: {} })))).toEqual([]);
    const after = await client.listen({ resourceSubscriptions: ['test://template/one-more/data'] });
    await after.close();
  });

  it('sends the upstream’s log messages at the level the request’s _meta asks for, and none without one', async () => {
    logs.length = 0;
    const call = (meta?: Record<string, unknown>) =>
      client.callTool({ name: 'test_tool_with_logging', arguments: {}, ...(meta ? { _meta: meta } : {}) });
    expect(textOf(await call({ [LOG_LEVEL_META_KEY]: 'info' }))).toBe('Logging completed');
    expect(logs).toEqual([
      'info: Tool execution started',
      'info: Tool processing data',
      'info: Tool execution completed',
    ]);
    logs.length = 0;
    await call({ [LOG_LEVEL_META_KEY]: 'error' });
    await call();
    // Log messages travel ahead of their call's result, so none can still be on the way.
    expect(logs).toEqual([]);
  });

  it('relays the upstream’s progress with the caller’s token', async () => {
    const seen: number[] = [];
    const result = await client.callTool(
      { name: 'test_tool_with_progress', arguments: {} },
      { onprogress: (progress) => seen.push(progress.progress) },
    );
    expect(textOf(result)).toBe('Progress completed');
    // The fixture's last notification leaves together with its result and may trail it, as in 2025.
    expect(seen.slice(0, 2)).toEqual([0, 50]);
  });
});

describe.each([httpTarget(), stdioTarget()])(
  '2026-07-28 listen streams of one client over $name',
  (target) => {
    const client = statelessEraClient();

    beforeAll(async () => {
      await target.start();
      await target.connect(client);
    });

    afterAll(async () => {
      await client.close();
      await target.stop();
    });

    it('keeps at most 1,024 open, and takes a new one once another closed', async () => {
      const uri = 'test://template/many-streams/data';
      const streams = await Promise.all(
        Array.from({ length: 1024 }, () => client.listen({ resourceSubscriptions: [uri] })),
      );
      const error = await client.listen({ resourceSubscriptions: [uri] }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ data: { canonical_code: 'RESOURCE_EXHAUSTED', max: 1024 } });
      // Once close() resolves the gateway has counted the stream out (see the top of this file).
      await streams.pop()?.close();
      const replacement = await client.listen({ resourceSubscriptions: [uri] });
      await Promise.all([...streams, replacement].map((stream) => stream.close()));
    });
  },
);
