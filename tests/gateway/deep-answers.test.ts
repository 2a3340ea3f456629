import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, NODE, ROOT } from './processes.ts';

const DEEP_SERVER = `${ROOT}tests/fixtures/servers/deep-answers.ts`;

/**
 * An upstream answer nested past the canonical limit fails like any other
 * broken upstream answer. Before, one too deep to serialize again was never
 * written back: the client waited for its timeout (passthrough) or got an
 * internal error (envelope mode).
 */
describe('an upstream answering with a result nested too deeply', () => {
  let client: Client | undefined;

  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  async function call(flags: string[], depth: number) {
    client = new Client({ name: 'deep-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: NODE,
        // The upstream gets only what the proxy passes on (--env), not the proxy's own environment.
        args: [BIN, 'proxy', ...flags, '--env', 'DEPTH', '--', NODE, DEEP_SERVER],
        cwd: ROOT,
        env: { ...process.env, DEPTH: String(depth) } as Record<string, string>,
      }),
    );
    return client
      .callTool({ name: 'deep', arguments: {} }, { timeout: 10_000 })
      .catch((error: unknown) => error);
  }

  it.each([1_500, 20_000])(
    'fails the call with ADAPTER.EXECUTION.FAILED in passthrough (%i levels)',
    async (depth) => {
      const error = await call([], depth);
      expect(error).toMatchObject({
        code: -32003,
        data: {
          canonical_code: 'ADAPTER.EXECUTION.FAILED',
          max_depth: 1000,
          pointer: expect.stringMatching(/^\/structuredContent\/d/),
        },
      });
    },
  );

  it('answers an ADAPTER.EXECUTION.FAILED envelope in envelope mode', async () => {
    const result = (await call(['--dialect', 'prov-v0.1'], 20_000)) as {
      isError?: boolean;
      structuredContent?: unknown;
    };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      result: null,
      errors: [
        {
          code: 'ADAPTER.EXECUTION.FAILED',
          message: expect.stringContaining('nested deeper than 1000 levels'),
        },
      ],
    });
  });

  it('passes a result at the limit through unchanged', async () => {
    // structuredContent/d is two levels under the result, so 998 nested arrays reach the limit exactly.
    const result = (await call([], 998)) as { structuredContent?: { d?: unknown } };
    let levels = 0;
    for (let value = result.structuredContent?.d; Array.isArray(value); value = value[0]) levels++;
    expect(levels).toBe(998);
  });
});
