/**
 * An MCP server whose tools already answer in prov-spec `mcp.envelope.v0.1`
 * envelopes (as JSON text and as structuredContent). The gateway must pass
 * these through unchanged: no double wrap, no renamed fields.
 *
 * Provenance is opt-in, as the spec asks: `checksum` attaches a
 * `prov.record.v0.1` only when the call's `_meta.capture_provenance` is true.
 *
 * Run: node examples/prov-envelope-server.ts   (stdio; imports only the SDK and zod)
 */
import { createHash } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const server = new McpServer({ name: 'prov-envelope-server', version: '1.0.0' });

type Envelope = { schema_version: 'mcp.envelope.v0.1'; result: unknown } & Record<string, unknown>;

function answer(envelope: Envelope, isError = false) {
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(envelope) }],
    structuredContent: envelope,
    ...(isError ? { isError: true } : {}),
  };
}

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** A UUID-shaped run id derived from the input, so equal calls give equal records. */
function runIdFor(text: string): string {
  const hex = sha256(`checksum:${text}`);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

server.registerTool(
  'word_count',
  { description: 'Counts words and characters.', inputSchema: z.object({ text: z.string() }) },
  async ({ text }) =>
    answer({
      schema_version: 'mcp.envelope.v0.1',
      result: { words: text.split(/\s+/).filter(Boolean).length, characters: [...text].length },
      meta: { adapter: 'mcp' },
    }),
);

server.registerTool(
  'checksum',
  {
    description: 'SHA-256 of a text; attaches a provenance record when _meta.capture_provenance is true.',
    inputSchema: z.object({ text: z.string() }),
  },
  async ({ text }, ctx) => {
    const value = sha256(text);
    const envelope: Envelope = { schema_version: 'mcp.envelope.v0.1', result: { alg: 'sha256', value } };
    if (ctx.mcpReq._meta?.capture_provenance === true) {
      envelope.provenance = {
        schema_version: 'prov.record.v0.1',
        run_id: runIdFor(text),
        tool: { name: 'checksum', version: '1.0.0', adapter: 'mcp' },
        inputs: [
          {
            schema_version: 'artifact.v0.1',
            artifact_id: 'input-text',
            media_type: 'text/plain',
            digest: { alg: 'sha256', value },
          },
        ],
        outputs: [],
        methods: ['integrity.digest.sha256'],
        evidence: [],
        parents: [],
      };
    }
    return answer(envelope);
  },
);

server.registerTool(
  'place_order',
  {
    description: 'Accepts an order; a quantity below 1 fails with the tool’s own namespaced error code.',
    inputSchema: z.object({ item: z.string(), quantity: z.number().int() }),
  },
  async ({ item, quantity }) =>
    quantity < 1
      ? answer(
          {
            schema_version: 'mcp.envelope.v0.1',
            result: null,
            errors: [
              { code: 'ORDER.QUANTITY.INVALID', message: `Quantity must be at least 1, got ${quantity}` },
            ],
          },
          true,
        )
      : answer({ schema_version: 'mcp.envelope.v0.1', result: { item, quantity, status: 'accepted' } }),
);

server.registerTool(
  'report',
  { description: 'A result that carries its own schema_version, which must never be upgraded or renamed.' },
  async () =>
    answer({
      schema_version: 'mcp.envelope.v0.1',
      result: { schema_version: 'report.v3', title: 'Quarterly', rows: [{ q: 1, total: 10.5 }] },
      warnings: [{ code: 'REPORT.PARTIAL', message: 'One source was unavailable' }],
    }),
);

await server.connect(new StdioServerTransport());
