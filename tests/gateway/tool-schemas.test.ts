import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingFromAnswer } from '../support/no-loss.ts';
import { BIN, NODE, type Running, startListening } from './processes.ts';

/**
 * Tools as real servers declare them, through the gateway in every envelope
 * dialect: draft-07 schemas are understood, a schema that cannot be compiled
 * never fails a call that ran and is reported once, when the tool is listed.
 */

const HOSTILE = new URL('../fixtures/servers/hostile.ts', import.meta.url).pathname;
const DIALECTS = ['prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'] as const;

describe.each(DIALECTS)('tool schemas through the gateway in %s', (dialect) => {
  let gateway: Running;
  let client: Client;

  beforeAll(async () => {
    gateway = await startListening([
      BIN,
      'proxy',
      '--http',
      '127.0.0.1:0',
      '--dialect',
      dialect,
      '--',
      NODE,
      HOSTILE,
    ]);
    client = new Client({ name: 'schemas', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
  });

  it('checks calls against draft-07 schemas and keeps everything the tool returned', async () => {
    // The official client validates structuredContent against the outputSchema it was given.
    await client.listTools();
    for (let call = 0; call < 3; call++) {
      const answer = await client.callTool({ name: 'draft07', arguments: { message: 'hello' } });
      expect(answer.isError, dialect).toBeFalsy();
      const upstream = {
        content: [{ type: 'text', text: 'echoed 5 characters' }],
        structuredContent: { echoed: 'hello', count: 1 },
        _meta: { viewUUID: 'view-1', interactEnabled: true },
      };
      expect(missingFromAnswer(upstream, answer)).toEqual([]);
    }
    const refused = await client.callTool({ name: 'draft07', arguments: { message: 'hi', extra: 1 } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('INVALID_INPUT');
  });

  // In legacy mode the tool's own outputSchema is advertised, and the official client refuses to
  // call a tool whose outputSchema it cannot compile, as it does talking to the server directly.
  it.skipIf(dialect === 'legacy')(
    'never fails a call that ran because its outputSchema does not compile',
    async () => {
      for (let call = 0; call < 3; call++) {
        const answer = await client.callTool({ name: 'broken_output', arguments: {} });
        expect(answer.isError, dialect).toBeFalsy();
        expect(answer.content).toContainEqual({ type: 'text', text: 'written' });
      }
    },
  );

  it('reports each schema that does not compile once it is listed: stderr, /healthz and the info page', async () => {
    await client.listTools();
    await client.listTools();
    const health = (await (await fetch(new URL('/healthz', gateway.url))).json()) as {
      schema_defects?: Record<string, string[]>;
    };
    const defects = Object.values(health.schema_defects ?? {}).flat();
    expect(defects).toEqual(
      expect.arrayContaining([
        'broken_schema: inputSchema',
        'remote_schema: inputSchema',
        'looping_schema: inputSchema',
        'broken_output: outputSchema',
      ]),
    );
    expect(defects).not.toContainEqual(expect.stringMatching(/^draft07/));
    // Once per tool and schema, however often the tools are listed.
    const said =
      gateway.stderr().match(/tool broken_output has an outputSchema that does not compile/g) ?? [];
    expect(said).toHaveLength(1);
    const page = await (await fetch(gateway.url, { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('its outputSchema cannot be compiled');
  });
});
