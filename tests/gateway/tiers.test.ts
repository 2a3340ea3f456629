import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCallLog } from '../../src/gateway/call-log.ts';
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

describe('tiers over HTTP: the bearer token decides the tier in the envelope', () => {
  let gateway: Running;
  let paths: GatewayDir;
  const clients: Client[] = [];

  const connect = async (token: string): Promise<Client> => {
    const client = new Client({ name: 'tier-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(client);
    return client;
  };

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
    await Promise.allSettled(clients.map((client) => client.close()));
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
    await Promise.allSettled(clients.map((client) => client.close()));
    // Stopping the gateway flushes and closes its log.
    await gateway.stop();
    const lines = readCallLog(realpathSync(join(paths.logs, 'gateway', 'calls.latest.jsonl')));
    expect(lines.map((line) => [line.tool, line.tier])).toEqual([
      ['echo', 'pro'],
      ['echo', 'enterprise'],
    ]);
  });
});
