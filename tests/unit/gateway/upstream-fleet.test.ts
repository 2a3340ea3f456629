import type { ServerCapabilities } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { UpstreamFleet } from '../../../src/gateway/relay/upstream-fleet.ts';
import type { Upstream } from '../../../src/gateway/upstreams/upstream.ts';

/** Only what the fleet reads of an upstream: whether it is up, what it declared, its events. */
function upstream(name: string, available: boolean, capabilities: ServerCapabilities) {
  const recovered = new Set<() => void>();
  const fake = {
    name,
    available,
    capabilities,
    connect: async () => {},
    onGaveUp: () => () => {},
    onRecovered(listener: () => void) {
      recovered.add(listener);
      return () => recovered.delete(listener);
    },
  };
  return {
    upstream: fake as unknown as Upstream,
    /** Comes up, declaring `now`. */
    recover(now: ServerCapabilities) {
      fake.available = true;
      fake.capabilities = now;
      for (const listener of recovered) listener();
    },
    goDown() {
      fake.available = false;
      fake.capabilities = {};
    },
  };
}

/** A fleet over two configured upstreams, and what it told the operator. */
function fleet() {
  const said: string[] = [];
  const configured = ['a', 'b'].map((name) => ({ name, kind: 'stdio' as const, command: 'true' }));
  return { fleet: new UpstreamFleet({ upstreams: configured, report: (line) => said.push(line) }), said };
}

describe('an upstream fleet', () => {
  it('advertises for a down upstream what it last declared to this fleet', async () => {
    const { fleet: first } = fleet();
    const b = upstream('b', true, { resources: { subscribe: true } });
    await first.start([b.upstream]);
    b.goDown();
    // Down now: its capabilities read empty, and an empty report must not replace what was known.
    await first.start([b.upstream]);
    const a = upstream('a', true, { tools: {} }).upstream;
    expect(first.advertisedCapabilities([a, b.upstream])).toEqual({
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
    });
  });

  it('keeps apart from another fleet in the same process: capability memory and reported-down state', async () => {
    const { fleet: first, said: firstSaid } = fleet();
    const { fleet: second, said: secondSaid } = fleet();
    const a = upstream('a', true, { tools: {} }).upstream;
    const b = upstream('b', true, { prompts: {} });
    await first.start([b.upstream]);
    b.goDown();
    // What the first fleet saw of b is its own: the second never saw it up, so stands in tools.
    expect(first.advertisedCapabilities([a, b.upstream])).toEqual({
      tools: { listChanged: true },
      prompts: { listChanged: true },
    });
    expect(second.advertisedCapabilities([a, b.upstream])).toEqual({ tools: { listChanged: true } });

    // Each fleet reports a down upstream once, whatever the other did.
    first.reportDown([b.upstream]);
    first.reportDown([b.upstream]);
    expect(firstSaid).toEqual(['upstream b is down; serving without it and retrying in the background']);
    expect(secondSaid).toEqual([]);
    second.reportDown([b.upstream]);
    expect(secondSaid).toEqual(['upstream b is down; serving without it and retrying in the background']);

    // Its return is told by each fleet that reported it down, and remembered by the fleet watching it.
    const stop = first.watch(b.upstream);
    b.recover({ resources: {} });
    stop();
    expect(firstSaid.at(-1)).toBe('upstream b is back');
    expect(secondSaid).toHaveLength(1);
    b.goDown();
    expect(first.advertisedCapabilities([a, b.upstream])).toEqual({
      tools: { listChanged: true },
      resources: { listChanged: true },
    });
    expect(second.advertisedCapabilities([a, b.upstream])).toEqual({ tools: { listChanged: true } });
  });

  it('keeps one era memory for every upstream it instantiates', () => {
    const { fleet: first } = fleet();
    const { fleet: second } = fleet();
    expect(first.eras).not.toBe(second.eras);
    first.eras.remember('a', 'modern', undefined);
    first.eras.remember('b', 'modern', undefined);
    expect(first.sharedSpeakModern()).toBe(true);
    expect(second.sharedSpeakModern()).toBe(false);
  });
});
