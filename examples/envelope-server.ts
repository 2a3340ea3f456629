/**
 * An MCP server (official SDK v2, stdio) whose tools know nothing about
 * envelopes; `withEnvelope` makes every answer one.
 *
 *   node examples/envelope-server.ts
 *
 * Environment: MCP_ENVELOPE_DIALECT (default prov-v0.1), MCP_ENVELOPE_SEED
 * (deterministic ids when set).
 */
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';
import { DIALECT_IDS, type ResultDialectId } from '../src/envelope/dialect.ts';
import { createIdSource } from '../src/ids/index.ts';
import { withEnvelope } from '../src/mcp/index.ts';

export function createExampleServer(options: { dialect?: ResultDialectId; seed?: string } = {}): McpServer {
  const server = new McpServer({ name: 'envelope-example', version: '1.0.0' });

  // Plain text output.
  server.registerTool(
    'greet',
    { description: 'Greets someone', inputSchema: z.object({ name: z.string().min(1) }) },
    async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }),
  );

  // JSON as text, no declared output schema.
  server.registerTool(
    'stats',
    {
      description: 'Count, sum and mean of numbers',
      inputSchema: z.object({ numbers: z.array(z.number()) }),
    },
    async ({ numbers }) => {
      const sum = numbers.reduce((total, n) => total + n, 0);
      const stats = { count: numbers.length, sum, mean: numbers.length ? sum / numbers.length : null };
      return { content: [{ type: 'text', text: JSON.stringify(stats) }] };
    },
  );

  // A tool that throws.
  server.registerTool('explode', { description: 'Always fails' }, async () => {
    throw new Error('the reactor overheated');
  });

  withEnvelope(server, {
    dialect: options.dialect ?? 'prov-v0.1',
    ...(options.seed === undefined ? {} : { ids: createIdSource(options.seed) }),
  });

  // Registered after withEnvelope: covered all the same. Declares an output schema;
  // `broken: true` makes it violate it.
  server.registerTool(
    'area',
    {
      description: 'Area of a rectangle',
      inputSchema: z.object({
        width: z.number().nonnegative(),
        height: z.number().nonnegative(),
        broken: z.boolean().optional(),
      }),
      outputSchema: z.object({ area: z.number() }),
    },
    async ({ width, height, broken }) => {
      const output = broken ? { area: `${width * height}` } : { area: width * height };
      return {
        content: [{ type: 'text', text: JSON.stringify(output) }],
        structuredContent: output as { area: number },
      };
    },
  );

  // Fails with a retriable, rate-limited error `failures` times per key, then succeeds.
  const attempts = new Map<string, number>();
  server.registerTool(
    'flaky',
    {
      description: 'Rate-limited until the given number of failures has happened',
      inputSchema: z.object({
        key: z.string(),
        failures: z.number().int().min(0).max(10),
        resetAt: z.iso.datetime().optional(),
      }),
    },
    async ({ key, failures, resetAt }) => {
      const attempt = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, attempt);
      if (attempt <= failures) {
        const message = `attempt ${attempt} of ${failures + 1}: slow down`;
        if (resetAt) {
          // A tool that writes its own envelope: it passes through unchanged.
          const envelope = {
            schema_version: 'mcp.envelope.v0.1',
            result: null,
            errors: [{ code: 'RATE_LIMITED', message, details: { reset_at: resetAt }, retryable: true }],
          };
          return { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: true };
        }
        const error = { code: 'RATE_LIMITED', message };
        return {
          content: [{ type: 'text', text: JSON.stringify({ error }) }],
          structuredContent: { error },
          isError: true,
        };
      }
      return { content: [{ type: 'text', text: JSON.stringify({ attempts: attempt }) }] };
    },
  );
  return server;
}

function dialectFromEnv(): ResultDialectId | undefined {
  const value = process.env.MCP_ENVELOPE_DIALECT;
  if (value === undefined || value === '') return undefined;
  if (!(DIALECT_IDS as readonly string[]).includes(value) || value === 'jsonrpc-request') {
    process.stderr.write(`MCP_ENVELOPE_DIALECT: unknown result dialect "${value}"\n`);
    process.exit(2);
  }
  return value as ResultDialectId;
}

if (import.meta.main) {
  const seed = process.env.MCP_ENVELOPE_SEED;
  const dialect = dialectFromEnv();
  const server = createExampleServer({
    ...(dialect === undefined ? {} : { dialect }),
    ...(seed ? { seed } : {}),
  });
  await server.connect(new StdioServerTransport());
}
