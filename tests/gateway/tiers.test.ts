import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLatestCallLogs } from '../../src/gateway/operations/call-log.ts';
import { type GatewayDir, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import type { Running } from './processes.ts';

/**
 * A bearer token maps to a tier (auth.tokens); the tier must reach the
 * enforcement pipeline and show in the envelopes of dialects that carry one.
 */

const PRO = 'pro-token-for-tests-0123456789';
const ENTERPRISE = 'enterprise-token-for-tests-0123456789';

interface ScalpelEnvelope {
  tier: string;
  data: unknown;
}

/** SDK clients of one gateway, each with its bearer token; all closed with the gateway. */
function bearerClients(urlOf: () => string) {
  const clients: Client[] = [];
  return {
    async connect(token: string): Promise<Client> {
      const client = new Client({ name: 'tier-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(urlOf()), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      );
      clients.push(client);
      return client;
    },
    async closeAll(): Promise<void> {
      await Promise.allSettled(clients.map((client) => client.close()));
    },
  };
}

describe('tiers over HTTP: the bearer token decides the tier in the envelope', () => {
  let gateway: Running;
  let paths: GatewayDir;

  const { connect, closeAll } = bearerClients(() => gateway.url);

  beforeAll(async () => {
    paths = gatewayDir((config) => {
      const upstreams = config.upstreams as { name: string; dialect: string }[];
      // Only the legacy server, answered in Code Scalpel's dialect, which has a tier field.
      const legacy = upstreams.find((upstream) => upstream.name === 'legacy');
      config.upstreams = [{ ...legacy, dialect: 'scalpel-v1' }];
      config.auth = {
        required: true,
        tokens: [
          { name: 'pro', token: PRO, tier: 'pro' },
          { name: 'enterprise', token: ENTERPRISE, tier: 'enterprise' },
        ],
      };
    });
    gateway = await startGatewayHttp(['--config', paths.config, '--no-stdio']);
  });

  afterAll(async () => {
    await closeAll();
    await gateway?.stop();
    removeGatewayDirs();
  });

  it('records each caller’s tier in its scalpel-v1 envelope', async () => {
    const [pro, enterprise] = await Promise.all([connect(PRO), connect(ENTERPRISE)]);
    const fromPro = await pro.callTool({ name: 'echo', arguments: { text: 'hi' } });
    const fromEnterprise = await enterprise.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(fromPro.isError ?? false).toBe(false);
    expect((fromPro.structuredContent as unknown as ScalpelEnvelope).tier).toBe('pro');
    expect((fromEnterprise.structuredContent as unknown as ScalpelEnvelope).tier).toBe('enterprise');
    expect((fromEnterprise.structuredContent as unknown as ScalpelEnvelope).data).toEqual(
      (fromPro.structuredContent as unknown as ScalpelEnvelope).data,
    );
  });

  it('refuses a request without a valid token', async () => {
    const response = await fetch(gateway.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: 'Bearer not-a-token',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
    await response.body?.cancel();
  });

  it('writes each caller’s tier on its call-log lines', async () => {
    await closeAll();
    // Stopping the gateway flushes and closes its log.
    await gateway.stop();
    const lines = readLatestCallLogs(join(paths.logs, 'gateway'));
    expect(lines.map((line) => [line.tool, line.tier])).toEqual([
      ['echo', 'pro'],
      ['echo', 'enterprise'],
    ]);
  });
});

describe('tiers from the configuration: a tool mapped to a tier refuses lower tiers', () => {
  const FREE = 'free-token-for-tests-0123456789';
  const PRO_TOKEN = 'pro-token-for-the-gate-0123456789';
  let gateway: Running;
  let paths: GatewayDir;

  interface ProvEnvelope {
    result: unknown;
    errors?: { code: string; message: string; details?: Record<string, unknown> }[];
    warnings?: { code: string; details?: Record<string, unknown> }[];
  }
  const envelopeOf = (result: unknown) => (result as { structuredContent: ProvEnvelope }).structuredContent;

  const { connect, closeAll } = bearerClients(() => gateway.url);

  beforeAll(async () => {
    paths = gatewayDir((config) => {
      const upstreams = config.upstreams as { name: string; tiers?: unknown }[];
      const envelopes = upstreams.find((upstream) => upstream.name === 'envelopes') as { tiers?: unknown };
      // An upstream's own rule, by the tool's own name.
      envelopes.tiers = {
        tools: { word_count: { tier: 'enterprise', reason: 'Counting words is an enterprise feature' } },
      };
      const legacy = upstreams.find((upstream) => upstream.name === 'legacy');
      // The same server relayed untouched: passthrough goes through the same tier gate.
      const raw = { ...legacy, name: 'raw', dialect: 'passthrough' };
      config.upstreams = [...upstreams.filter((upstream) => upstream.name !== 'python'), raw];
      // A gateway-wide rule, by the name clients call.
      config.tiers = {
        order: ['free', 'pro', 'enterprise'],
        tools: { legacy__stats: 'pro', raw__stats: 'pro' },
      };
      config.auth = {
        required: true,
        tokens: [
          { name: 'free', token: FREE, tier: 'free' },
          { name: 'pro', token: PRO_TOKEN, tier: 'pro' },
        ],
      };
    });
    gateway = await startGatewayHttp(['--config', paths.config, '--no-stdio']);
  });

  afterAll(async () => {
    await closeAll();
    await gateway?.stop();
    removeGatewayDirs();
  });

  it('answers a free caller of a pro tool with UPGRADE_REQUIRED and an upgrade hint, and serves a pro caller', async () => {
    const [free, pro] = await Promise.all([connect(FREE), connect(PRO_TOKEN)]);
    const stats = { name: 'legacy__stats', arguments: { values: [1, 2, 3] } };

    const denied = await free.callTool(stats);
    expect(denied.isError).toBe(true);
    const refusal = envelopeOf(denied);
    expect(refusal.result).toBeNull();
    expect(refusal.errors?.[0]).toMatchObject({
      code: 'UPGRADE_REQUIRED',
      details: { feature: 'legacy__stats', tier: 'pro' },
    });
    expect(refusal.warnings).toContainEqual(
      expect.objectContaining({
        code: 'TIER.UPGRADE_HINT',
        details: { feature: 'legacy__stats', tier: 'pro' },
      }),
    );

    const served = await pro.callTool(stats);
    expect(served.isError ?? false).toBe(false);
    expect(envelopeOf(served).errors ?? []).toEqual([]);

    // A tool no rule names is open to every tier.
    const echo = await free.callTool({ name: 'legacy__echo', arguments: { text: 'open' } });
    expect(envelopeOf(echo).result).toBe('open');

    // Passthrough: refused the same way, never reaching the upstream; served untouched to a pro caller.
    const rawStats = { name: 'raw__stats', arguments: { values: [1, 2, 3] } };
    const rawDenied = await free.callTool(rawStats);
    expect(rawDenied.isError).toBe(true);
    expect(envelopeOf(rawDenied).errors?.[0]).toMatchObject({ code: 'UPGRADE_REQUIRED' });
    const rawServed = await pro.callTool(rawStats);
    expect(rawServed.isError ?? false).toBe(false);
    expect((rawServed.structuredContent as Record<string, unknown>)?.schema_version).toBeUndefined();

    // An upstream's own rule, with its own reason, binds the pro tier too.
    const words = await pro.callTool({ name: 'envelopes__word_count', arguments: { text: 'one two' } });
    expect(envelopeOf(words).errors?.[0]).toMatchObject({
      code: 'UPGRADE_REQUIRED',
      message: 'Counting words is an enterprise feature',
      details: { feature: 'envelopes__word_count', tier: 'enterprise' },
    });
  });

  it('logs each call with its caller’s tier and the refusals as UPGRADE_REQUIRED', async () => {
    await closeAll();
    await gateway.stop();
    const lines = readLatestCallLogs(join(paths.logs, 'gateway'));
    expect(lines.map((line) => [line.upstream, line.tool, line.tier, line.code])).toEqual([
      ['legacy', 'stats', 'free', 'UPGRADE_REQUIRED'],
      ['legacy', 'stats', 'pro', null],
      ['legacy', 'echo', 'free', null],
      ['raw', 'stats', 'free', 'UPGRADE_REQUIRED'],
      ['raw', 'stats', 'pro', null],
      ['envelopes', 'word_count', 'pro', 'UPGRADE_REQUIRED'],
    ]);
  });
});
