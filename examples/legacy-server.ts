/**
 * A legacy MCP server: its tools return whatever they like (plain text, JSON
 * text, numbers, errors, crashes), the way most servers in the field do. The
 * gateway fronts it to show wrapping, canonical errors and failure handling.
 *
 * Run: node examples/legacy-server.ts   (stdio; imports only the SDK and zod)
 */
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const MAX_SLEEP_MS = 10_000;
const MAX_PROGRESS_STEPS = 20;

const server = new McpServer({ name: 'legacy-server', version: '1.0.0' }, { capabilities: { logging: {} } });

function text(value: string) {
  return { content: [{ type: 'text' as const, text: value }] };
}

server.registerTool('plain_text', { description: 'Returns a sentence of plain text.' }, async () =>
  text('The quick brown fox jumps over the lazy dog.'),
);

server.registerTool('json_text', { description: 'Returns a JSON object as text.' }, async () =>
  text(JSON.stringify({ city: 'Lisbon', population: 545_796, coastal: true, tags: ['capital', 'port'] })),
);

server.registerTool('array', { description: 'Returns a JSON array as text.' }, async () =>
  text(JSON.stringify([1, 'two', { three: 3 }, [4], null])),
);

server.registerTool('number', { description: 'Returns a number as text.' }, async () => text('42.5'));

server.registerTool('boolean', { description: 'Returns the boolean true as text.' }, async () =>
  text('true'),
);

server.registerTool('null', { description: 'Returns JSON null as text.' }, async () => text('null'));

server.registerTool(
  'echo',
  {
    description: 'Returns its text argument unchanged (used by the benchmarks).',
    inputSchema: z.object({ text: z.string() }),
  },
  async ({ text: value }) => text(value),
);

server.registerTool(
  'throws',
  { description: 'Throws an exception inside the handler.' },
  async (): Promise<{ content: [] }> => {
    throw new Error('The widget exploded');
  },
);

server.registerTool(
  'own_error',
  { description: 'Fails with its own structured error code (isError result).' },
  async () => ({
    isError: true,
    content: [
      {
        type: 'text' as const,
        text: JSON.stringify({
          error: { code: 'WIDGET_LOCKED', message: 'The widget is locked by another user' },
        }),
      },
    ],
  }),
);

server.registerTool(
  'slow',
  {
    description: `Sleeps for ms milliseconds (at most ${MAX_SLEEP_MS}), then answers.`,
    inputSchema: z.object({ ms: z.number().int().min(0).max(MAX_SLEEP_MS) }),
  },
  async ({ ms }, ctx) => {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      // A cancelled request should not keep the process busy.
      ctx.mcpReq.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return text(JSON.stringify({ slept_ms: ms }));
  },
);

server.registerTool(
  'crash',
  { description: 'Writes to stderr and exits the process with code 3 without answering.' },
  async (): Promise<{ content: [] }> => {
    process.stderr.write('legacy-server: fatal: simulated crash\n');
    process.exit(3);
  },
);

const stats = z.object({ count: z.number().int(), sum: z.number(), mean: z.number().nullable() });

server.registerTool(
  'stats',
  {
    description: 'Count, sum and mean of numbers, as structuredContent matching the outputSchema.',
    inputSchema: z.object({ values: z.array(z.number()).max(10_000) }),
    outputSchema: stats,
  },
  async ({ values }) => {
    const sum = values.reduce((total, value) => total + value, 0);
    const output = { count: values.length, sum, mean: values.length === 0 ? null : sum / values.length };
    return { content: [{ type: 'text' as const, text: JSON.stringify(output) }], structuredContent: output };
  },
);

server.registerTool(
  'progress',
  {
    description: 'Reports progress for each step and logs a message, then answers.',
    inputSchema: z.object({ steps: z.number().int().min(1).max(MAX_PROGRESS_STEPS) }),
  },
  async ({ steps }, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let step = 1; step <= steps; step++) {
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: step, total: steps, message: `step ${step}` },
        });
      }
      await ctx.mcpReq.log('info', { step, of: steps }, 'progress');
    }
    return text(JSON.stringify({ steps }));
  },
);

server.registerResource(
  'readme',
  'legacy://readme',
  { title: 'About this server', mimeType: 'text/plain' },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'A legacy MCP server.' }] }),
);

server.registerPrompt(
  'summarize',
  { description: 'Asks for a summary of a text.', argsSchema: z.object({ text: z.string() }) },
  ({ text: value }) => ({
    messages: [{ role: 'user' as const, content: { type: 'text' as const, text: `Summarize:\n\n${value}` } }],
  }),
);

await server.connect(new StdioServerTransport());
