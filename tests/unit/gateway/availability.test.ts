import type { ServerCapabilities } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { advertisedCapabilities } from '../../../src/gateway/relay/availability.ts';
import type { Upstream } from '../../../src/gateway/upstreams/upstream.ts';

/** Only what availability.ts reads of an upstream. */
function upstream(name: string, available: boolean, capabilities: ServerCapabilities): Upstream {
  return { name, available, capabilities } as unknown as Upstream;
}

describe('what a session advertises', () => {
  const plain: ServerCapabilities = { tools: {}, prompts: {}, logging: {} };

  it('is the upstreams’ own when all are up', () => {
    expect(
      advertisedCapabilities(new Map(), [upstream('a', true, plain), upstream('b', true, { tools: {} })]),
    ).toEqual(plain);
  });

  it('stands in tools for a down upstream never seen, and promises list_changed on every list', () => {
    expect(advertisedCapabilities(new Map(), [upstream('a', true, plain), upstream('b', false, {})])).toEqual(
      {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        logging: {},
      },
    );
  });

  it('stands in what a down upstream last declared', () => {
    const lastKnown = new Map([['b', { resources: { subscribe: true } }]]);
    expect(
      advertisedCapabilities(lastKnown, [upstream('a', true, { tools: {} }), upstream('b', false, {})]),
    ).toEqual({
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
    });
  });
});
