import type { ServerCapabilities } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { advertisedCapabilities, rememberCapabilities } from '../../../src/gateway/relay/availability.ts';
import type { Upstream } from '../../../src/gateway/upstreams/upstream.ts';

/** Only what availability.ts reads of an upstream. */
function upstream(name: string, available: boolean, capabilities: ServerCapabilities): Upstream {
  return { name, available, capabilities } as unknown as Upstream;
}

describe('what a session advertises', () => {
  const plain: ServerCapabilities = { tools: {}, prompts: {}, logging: {} };

  it('is the upstreams’ own when all are up', () => {
    const gateway = {};
    expect(
      advertisedCapabilities(gateway, [upstream('a', true, plain), upstream('b', true, { tools: {} })]),
    ).toEqual(plain);
  });

  it('stands in tools for a down upstream never seen, and promises list_changed on every list', () => {
    const gateway = {};
    expect(advertisedCapabilities(gateway, [upstream('a', true, plain), upstream('b', false, {})])).toEqual({
      tools: { listChanged: true },
      prompts: { listChanged: true },
      logging: {},
    });
  });

  it('stands in what a down upstream last declared in this gateway', () => {
    const gateway = {};
    rememberCapabilities(gateway, upstream('b', true, { resources: { subscribe: true } }));
    // Down now: its capabilities read empty, and an empty report must not replace what was known.
    rememberCapabilities(gateway, upstream('b', false, {}));
    expect(
      advertisedCapabilities(gateway, [upstream('a', true, { tools: {} }), upstream('b', false, {})]),
    ).toEqual({
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
    });
    // Another gateway has its own memory.
    expect(
      advertisedCapabilities({}, [upstream('a', true, { tools: {} }), upstream('b', false, {})]),
    ).toEqual({
      tools: { listChanged: true },
    });
  });
});
