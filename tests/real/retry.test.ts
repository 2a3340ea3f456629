import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callToolWithRetry } from '../../src/mcp/index.ts';
import { NODE, ROOT } from '../gateway/processes.ts';
import { realCases } from '../support/real-corpus.ts';

/** callToolWithRetry against the real servers' rate-limited answers, replayed over stdio. */

const REPLAY = fileURLToPath(new URL('../fixtures/servers/replay.ts', import.meta.url));
const LIMITED = realCases().filter((item) => item.expect.code === 'RATE_LIMITED');

describe('callToolWithRetry on real RATE_LIMITED answers', () => {
  let client: Client;

  beforeAll(async () => {
    client = new Client({ name: 'retry', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: NODE, args: [REPLAY], cwd: ROOT }));
  });

  afterAll(async () => {
    await client?.close();
  });

  it('has rate-limited captures with reset_at in error.details.rate_limit', () => {
    expect(LIMITED.length).toBeGreaterThanOrEqual(2);
  });

  for (const item of LIMITED) {
    it(`waits until ${item.id}'s reset_at, and stops when it is beyond maxDelayMs`, async () => {
      const name = item.id.replace('/', '.');
      const reset = Date.parse(item.expect.reset_at ?? '');
      const delays: number[] = [];
      const waited = await callToolWithRetry(
        client,
        { name, arguments: {} },
        {
          retries: 1,
          maxDelayMs: 120_000,
          now: () => reset - 60_000,
          sleep: async (ms) => void delays.push(ms),
        },
      );
      // The server asked for 60 s: one wait of exactly that, then the retry.
      expect(delays).toEqual([60_000]);
      expect(waited).toMatchObject({
        ok: false,
        attempts: 2,
        error: { code: 'RATE_LIMITED', retriable: true },
      });
      const bounded = await callToolWithRetry(
        client,
        { name, arguments: {} },
        {
          retries: 3,
          maxDelayMs: 1_000,
          now: () => reset - 60_000,
          sleep: async (ms) => void delays.push(ms),
        },
      );
      expect(bounded).toMatchObject({ ok: false, attempts: 1 });
      expect(delays).toHaveLength(1);
    });
  }
});
