import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from '../../src/gateway/operations/config.ts';

const CONFIG = fileURLToPath(new URL('../../examples/gateway.config.json', import.meta.url));

describe('examples/gateway.config.json', () => {
  const config = loadGatewayConfig(CONFIG, { env: {} });

  it.each(config.upstreams.map((upstream) => [upstream.name, upstream] as const))(
    'starts upstream %s exactly as configured and lists its tools',
    async (_name, upstream) => {
      if (upstream.transport.kind !== 'stdio') throw new Error('the examples are stdio servers');
      const { command, args, env, cwd } = upstream.transport;
      const transport = new StdioClientTransport({ command, args, env, cwd, stderr: 'pipe' });
      const client = new Client({ name: 'config-test', version: '1.0.0' });
      try {
        await client.connect(transport);
        const { tools } = await client.listTools();
        expect(tools.length).toBeGreaterThan(0);
        for (const tool of Object.keys(upstream.timeouts.tools)) {
          expect(tools.map((listed) => listed.name)).toContain(tool);
        }
      } finally {
        await client.close();
      }
    },
  );
});
