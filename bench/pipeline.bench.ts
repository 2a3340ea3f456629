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
 * round trip. Medians of 7 runs; each run is a fixed number of calls after a warm-up.
 */

const RUNS = 7;
const CALLS = 3000;

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

async function perSecond(run: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 3000; i++) await run();
  const samples: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const started = performance.now();
    for (let i = 0; i < CALLS; i++) await run();
    samples.push(CALLS / ((performance.now() - started) / 1000));
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] as number;
}

function through(pipeline: Pipeline, meta?: Record<string, unknown>): () => Promise<unknown> {
  return () => pipeline.callTool({ tool, arguments: args, invoke, ...(meta ? { meta } : {}) });
}

const direct = await perSecond(() => invoke(args));
const summaries: CallSummary[] = [];
const cases: [string, () => Promise<unknown>][] = [
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

console.log(
  `tools/call result: ${bytes} bytes of JSON text; ${CALLS} sequential calls per run, median of ${RUNS}`,
);
console.log(`direct invoke: ${Math.round(direct).toLocaleString('en')} calls/s`);
for (const [name, run] of cases) {
  const rate = await perSecond(run);
  const overheadUs = (1 / rate - 1 / direct) * 1e6;
  console.log(
    `${name}: ${Math.round(rate).toLocaleString('en')} calls/s, ${overheadUs.toFixed(1)} µs overhead per call, ` +
      `direct/pipeline ratio ${(direct / rate).toFixed(1)}x`,
  );
}

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
  return client;
}

const plainClient = await sdkClient(false);
const envelopedClient = await sdkClient(true);
const plain = await perSecond(() => plainClient.callTool({ name: tool.name, arguments: args }));
const enveloped = await perSecond(() => envelopedClient.callTool({ name: tool.name, arguments: args }));
console.log(`SDK round trip, plain McpServer: ${Math.round(plain).toLocaleString('en')} calls/s`);
console.log(
  `SDK round trip, withEnvelope: ${Math.round(enveloped).toLocaleString('en')} calls/s, ` +
    `${((1 / enveloped - 1 / plain) * 1e6).toFixed(1)} µs more per call, plain/withEnvelope ratio ${(plain / enveloped).toFixed(2)}x`,
);
await plainClient.close();
await envelopedClient.close();
