import { describe, expect, it } from 'vitest';
import {
  buildServerCard,
  type CardInput,
  type CardUpstream,
  cardName,
  SERVER_CARD_SCHEMA,
  type ServerCard,
  serverCardPaths,
  UPSTREAMS_META_KEY,
} from '../../../src/gateway/http/server-card.ts';
import { PACKAGE_VERSION } from '../../../src/version.ts';

/**
 * The server card as the builder makes it: who the gateway says it is (as the
 * relay chooses), where to connect, which revisions, whether a token is wanted,
 * and what it fronts, shown in full only to a caller who may see the info page.
 */

const FIXTURE: CardUpstream = {
  name: 'fixture',
  transport: 'stdio',
  state: 'ready',
  declared: {
    serverInfo: { name: 'everything-fixture', version: '1.0.0' },
    capabilities: { tools: { listChanged: true }, resources: { subscribe: true }, logging: {} },
  },
};
const REMOTE: CardUpstream = {
  name: 'remote',
  transport: 'streamable-http',
  state: 'retrying',
  declared: { serverInfo: { name: 'io.example/remote', version: '2.3.4' }, capabilities: { prompts: {} } },
};
const GATEWAY = { name: 'mcp-envelope-gateway', version: PACKAGE_VERSION };

function card(overrides: Partial<CardInput> = {}): ServerCard {
  return buildServerCard({
    endpoint: 'http://127.0.0.1:8931/mcp',
    serverInfo: GATEWAY,
    upstreams: [FIXTURE, REMOTE],
    auth: 'none',
    detailed: true,
    ...overrides,
  });
}

/** What the v1 Server Card schema asks of the fields it bounds. */
function expectSchemaShape(value: ServerCard): void {
  expect(value.$schema).toBe(SERVER_CARD_SCHEMA);
  expect(value.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
  expect(value.name.length).toBeGreaterThanOrEqual(3);
  expect(value.name.length).toBeLessThanOrEqual(200);
  expect(value.version.length).toBeLessThanOrEqual(255);
  expect(value.description.length).toBeGreaterThanOrEqual(1);
  expect(value.description.length).toBeLessThanOrEqual(100);
  expect(value.title?.length ?? 1).toBeLessThanOrEqual(100);
  for (const remote of value.remotes) expect(remote.url).toMatch(/^https?:\/\/\S+$/);
}

describe('the server card', () => {
  it('names the gateway, its endpoint, the revisions it speaks and what it fronts', () => {
    const built = card();
    expectSchemaShape(built);
    expect(built).toMatchObject({
      name: 'localhost/mcp-envelope-gateway',
      version: PACKAGE_VERSION,
      title: 'mcp-envelope-gateway',
      remotes: [{ type: 'streamable-http', url: 'http://127.0.0.1:8931/mcp' }],
    });
    expect(built.description).toBe('mcp-envelope gateway in front of 2 MCP servers: fixture, remote');
    const [remote] = built.remotes;
    expect(remote?.supportedProtocolVersions).toEqual(expect.arrayContaining(['2026-07-28', '2025-11-25']));
    expect(remote?.supportedProtocolVersions[0]).toBe('2026-07-28');
    expect(remote).not.toHaveProperty('headers');
    expect(built._meta[UPSTREAMS_META_KEY]).toEqual([
      {
        name: 'fixture',
        state: 'ready',
        transport: 'stdio',
        namePrefix: 'fixture__',
        serverInfo: { name: 'everything-fixture', version: '1.0.0' },
        capabilities: { tools: { listChanged: true }, resources: { subscribe: true }, logging: {} },
      },
      {
        name: 'remote',
        state: 'retrying',
        transport: 'streamable-http',
        namePrefix: 'remote__',
        serverInfo: { name: 'io.example/remote', version: '2.3.4' },
        capabilities: { prompts: {} },
      },
    ]);
  });

  it('carries no tools, resources or prompts: the runtime lists have them', () => {
    const built = card() as unknown as Record<string, unknown>;
    for (const member of ['tools', 'resources', 'prompts', 'capabilities'])
      expect(built).not.toHaveProperty(member);
  });

  it('is its one upstream, as the relay is, once that upstream has said who it is', () => {
    const single = card({ serverInfo: undefined, upstreams: [FIXTURE] });
    expectSchemaShape(single);
    expect(single).toMatchObject({
      name: 'localhost/everything-fixture',
      version: '1.0.0',
      title: 'everything-fixture',
      description: 'everything-fixture, served through the mcp-envelope gateway',
    });
    // No namespacing with one upstream.
    expect(single._meta[UPSTREAMS_META_KEY][0]).not.toHaveProperty('namePrefix');
    // A name already in reverse-DNS form is kept as the upstream gave it.
    const named = card({ serverInfo: undefined, upstreams: [REMOTE] });
    expect(named.name).toBe('io.example/remote');
    expect(named.version).toBe('2.3.4');
    // Its own description and title, when it declared them.
    const described = card({
      serverInfo: undefined,
      upstreams: [
        {
          ...FIXTURE,
          declared: {
            capabilities: {},
            serverInfo: { name: 'x', title: 'Weather', description: 'Forecasts', version: '1' },
          },
        },
      ],
    });
    expect(described).toMatchObject({ title: 'Weather', description: 'Forecasts' });
  });

  it('is the gateway while its one upstream has never been ready', () => {
    const starting = card({
      serverInfo: undefined,
      upstreams: [{ name: 'slow', transport: 'stdio', state: 'starting' }],
    });
    expect(starting).toMatchObject({ name: 'localhost/mcp-envelope-gateway', version: PACKAGE_VERSION });
    expect(starting.description).toBe('mcp-envelope gateway in front of 1 MCP server: slow');
    expect(starting._meta[UPSTREAMS_META_KEY]).toEqual([
      { name: 'slow', state: 'starting', transport: 'stdio' },
    ]);
  });

  it('shows a caller who may not see the info page each upstream’s name and state only', () => {
    const brief = card({ auth: 'required', detailed: false });
    expect(brief._meta[UPSTREAMS_META_KEY]).toEqual([
      { name: 'fixture', state: 'ready' },
      { name: 'remote', state: 'retrying' },
    ]);
    const text = JSON.stringify(brief);
    for (const hidden of [
      'everything-fixture',
      'io.example/remote',
      'listChanged',
      'transport',
      'namePrefix',
    ])
      expect(text).not.toContain(hidden);
  });

  it('says whether a bearer token is required, optional, or not asked for', () => {
    expect(card({ auth: 'required' }).remotes[0]?.headers).toEqual([
      expect.objectContaining({
        name: 'Authorization',
        isRequired: true,
        isSecret: true,
        value: 'Bearer {token}',
      }),
    ]);
    expect(card({ auth: 'optional' }).remotes[0]?.headers).toEqual([
      expect.objectContaining({ name: 'Authorization', isRequired: false, isSecret: true }),
    ]);
    expect(card({ auth: 'none' }).remotes[0]?.headers).toBeUndefined();
  });

  it('keeps what an upstream declared within bounds, and no URL that is not a plain web address', () => {
    const deep: Record<string, unknown> = {};
    let level = deep;
    for (let i = 0; i < 20; i++) {
      const next: Record<string, unknown> = {};
      level[`l${i}`] = next;
      level = next;
    }
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, true]));
    const built = card({
      serverInfo: undefined,
      upstreams: [
        {
          name: 'hostile',
          transport: 'stdio',
          state: 'ready',
          declared: {
            serverInfo: {
              name: `evil/${'x'.repeat(1000)}`,
              version: 'v'.repeat(10_000),
              title: 't'.repeat(1000),
              description: 'd'.repeat(1000),
              websiteUrl: 'https://user:pass@example.com/',
            },
            capabilities: { experimental: { deep, many, long: 's'.repeat(10_000) } } as never,
          },
        },
      ],
    });
    expectSchemaShape(built);
    expect(built.websiteUrl).toBeUndefined();
    expect(JSON.stringify(built)).not.toContain('user:pass');
    expect(JSON.stringify(built).length).toBeLessThan(8000);
    const experimental = built._meta[UPSTREAMS_META_KEY][0]?.capabilities?.experimental as Record<
      string,
      unknown
    >;
    expect(Object.keys(experimental.many as object)).toHaveLength(32);
    expect((experimental.long as string).length).toBe(200);
    expect(JSON.stringify(experimental.deep).match(/l\d+/g)?.length).toBeLessThan(5);
    const website = card({
      serverInfo: { name: 'g', version: '1', websiteUrl: 'javascript:alert(1)' },
    });
    expect(website.websiteUrl).toBeUndefined();
    expect(
      card({ serverInfo: { name: 'g', version: '1', websiteUrl: 'https://example.com/docs' } }).websiteUrl,
    ).toBe('https://example.com/docs');
  });
});

describe('the card’s name', () => {
  it('is namespaced under the host the card was asked at, reversed', () => {
    expect(cardName('mcp-envelope-gateway', 'tools.example.com')).toBe(
      'com.example.tools/mcp-envelope-gateway',
    );
    expect(cardName('mcp-envelope-gateway', 'localhost')).toBe('localhost/mcp-envelope-gateway');
    expect(cardName('mcp-envelope-gateway', '127.0.0.1')).toBe('localhost/mcp-envelope-gateway');
    expect(cardName('mcp-envelope-gateway', '[::1]')).toBe('localhost/mcp-envelope-gateway');
    expect(cardName('mcp-envelope-gateway', '10.0.0.7')).toBe('10.0.0.7/mcp-envelope-gateway');
    expect(cardName('mcp-envelope-gateway', '[fd00::7]')).toBe('fd00-7/mcp-envelope-gateway');
  });

  it('keeps a name already in reverse-DNS form and makes any other one fit the pattern', () => {
    expect(cardName('io.github.someone/weather', 'example.com')).toBe('io.github.someone/weather');
    expect(cardName('@scope/server everything', 'example.com')).toBe('com.example/scope-server-everything');
    expect(cardName('a/b/c', 'example.com')).toBe('com.example/a-b-c');
    expect(cardName('ünïcode', 'example.com')).toBe('com.example/n-code');
    expect(cardName('///', 'example.com')).toBe('com.example/server');
    const long = cardName('n'.repeat(500), `${'h'.repeat(60)}.${'i'.repeat(60)}.example.com`);
    expect(long).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(long.length).toBeLessThanOrEqual(200);
  });
});

describe('where the card is served', () => {
  it('is the location MCP reserves beside the endpoint, and the well-known ones discovery tools probe', () => {
    expect(serverCardPaths('/mcp')).toEqual([
      '/mcp/server-card',
      '/.well-known/mcp/server-card',
      '/.well-known/mcp/server-card.json',
    ]);
    expect(serverCardPaths('/tools/mcp/')[0]).toBe('/tools/mcp/server-card');
    expect(serverCardPaths('/')[0]).toBe('/server-card');
    // The MCP endpoint itself is never taken over.
    expect(serverCardPaths('/.well-known/mcp/server-card')).not.toContain('/.well-known/mcp/server-card');
  });
});
