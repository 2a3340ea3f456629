import { performance } from 'node:perf_hooks';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod/v4';
import { createIdSource } from '../src/ids/index.ts';
import {
  type CallSummary,
  createPipeline,
  type Pipeline,
  type ToolCall,
  withEnvelope,
} from '../src/mcp/index.ts';

/**
 * Overhead of the enforcement pipeline per tools/call on a 1 KB JSON result,
 * next to calling the tool's invoke directly (the peer), sequentially; then the
 * same tool on an SDK v2 McpServer, plain and with withEnvelope, called by the
 * SDK client over an in-memory pair, to put the overhead next to a real MCP
 * round trip. The cases of a group run interleaved, batch by batch, and each
 * keeps its best of 7 batches, so that load from other processes distorts the
 * ratio less.
 */

const RUNS = 7;
const CALLS = 2000;

const items = Array.from({ length: 26 }, (_, index) => ({
  id: index,
  name: `item-${index}`,
  score: index * 1.5,
}));
const text = JSON.stringify({ items, total: items.length });
const bytes = Buffer.byteLength(text);

const tool = {
  name: 'search',
  inputSchema: {
    type: 'object',
    properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1 } },
    required: ['query'],
  },
};
const args = { query: 'envelopes', limit: 26 };
const invoke: ToolCall['invoke'] = async () => ({ content: [{ type: 'text', text }] });

type Case = [name: string, run: () => Promise<unknown>];

/** Calls per second of each case, measured interleaved. */
async function rates(cases: readonly Case[]): Promise<number[]> {
  for (const [, run] of cases) for (let i = 0; i < CALLS; i++) await run();
  const samples = cases.map(() => [] as number[]);
  for (let r = 0; r < RUNS; r++) {
    for (const [index, [, run]] of cases.entries()) {
      const started = performance.now();
      for (let i = 0; i < CALLS; i++) await run();
      samples[index]?.push(CALLS / ((performance.now() - started) / 1000));
    }
  }
  return samples.map((list) => Math.max(...list));
}

function through(pipeline: Pipeline, meta?: Record<string, unknown>): () => Promise<unknown> {
  return () => pipeline.callTool({ tool, arguments: args, invoke, ...(meta ? { meta } : {}) });
}

const format = (rate: number) => Math.round(rate).toLocaleString('en');

function report(cases: readonly Case[], measured: number[], peerName: string): void {
  const [peer] = measured as [number];
  console.log(`${peerName}: ${format(peer)} calls/s`);
  for (const [index, [name]] of cases.entries()) {
    if (index === 0) continue;
    const rate = measured[index] as number;
    console.log(
      `${name}: ${format(rate)} calls/s, ${((1 / rate - 1 / peer) * 1e6).toFixed(1)} µs more per call, ` +
        `ratio ${(peer / rate).toFixed(2)}x`,
    );
  }
}

const summaries: CallSummary[] = [];
const direct: Case[] = [
  ['direct invoke', () => invoke(args)],
  ['pipeline (validate + wrap, prov-v0.1)', through(createPipeline({ ids: createIdSource('bench') }))],
  [
    'pipeline + onCall summary (digests)',
    through(
      createPipeline({
        ids: createIdSource('bench'),
        onCall: (summary) => {
          if (summaries.push(summary) > 100) summaries.length = 0;
        },
      }),
    ),
  ],
  [
    'pipeline + provenance (full)',
    through(createPipeline({ ids: createIdSource('bench') }), {
      capture_provenance: true,
      provenance_mode: 'full',
    }),
  ],
];

async function sdkClient(enveloped: boolean): Promise<Client> {
  const server = new McpServer({ name: 'bench', version: '1.0.0' });
  server.registerTool(
    tool.name,
    { inputSchema: z.object({ query: z.string(), limit: z.number().int().min(1).optional() }) },
    async () => ({ content: [{ type: 'text', text }] }),
  );
  if (enveloped) withEnvelope(server, { ids: createIdSource('bench') });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  // Listing first lets the client check structured output against the advertised schema, as clients do.
  await client.listTools();
  return client;
}

console.log(
  `tools/call result: ${bytes} bytes of JSON text; ${CALLS} sequential calls per batch, best of ${RUNS}`,
);
report(direct, await rates(direct), 'direct invoke');

const plainClient = await sdkClient(false);
const envelopedClient = await sdkClient(true);
const sdk: Case[] = [
  ['SDK round trip, plain McpServer', () => plainClient.callTool({ name: tool.name, arguments: args })],
  ['SDK round trip, withEnvelope', () => envelopedClient.callTool({ name: tool.name, arguments: args })],
];
report(sdk, await rates(sdk), 'SDK round trip, plain McpServer');
await plainClient.close();
await envelopedClient.close();
