import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, NODE, ROOT, type Running, startListening } from '../gateway/processes.ts';
import { missingFromAnswer } from '../support/no-loss.ts';

/**
 * The fast part of the sweep (scripts/sweep/): what eleven real servers from
 * npm answered (tests/fixtures/real/sweep/, each file naming its package and
 * version), replayed with the tools they listed, through the gateway in every
 * mode, read by the official SDK client (which checks structuredContent
 * against the advertised outputSchema). No call that succeeded directly fails
 * through the gateway, nothing a tool returned is missing (every block as
 * itself, texts exact, structuredContent, result `_meta`), and an envelope
 * mode's tools/list is at most twice passthrough's.
 */

const REPLAY = fileURLToPath(new URL('../fixtures/servers/sweep-replay.ts', import.meta.url));
const CAPTURES = fileURLToPath(new URL('../fixtures/real/sweep/', import.meta.url));
const MODES = ['passthrough', 'prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'] as const;

interface Capture {
  package: string;
  version: string;
  calls: { tool: string; arguments?: Record<string, unknown>; result?: ResultLike }[];
}

interface ResultLike {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

const captures = readdirSync(CAPTURES)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => ({ name: name.replace(/\.json$/, ''), file: join(CAPTURES, name) }));

/** tools/list size in passthrough, per capture. */
const listSizes = new Map<string, number>();

describe.each(MODES)('real servers’ answers through the gateway in %s', (mode) => {
  // One transport per mode, alternating, so both are covered without doubling the time.
  const overHttp = MODES.indexOf(mode) % 2 === 1;
  const running: { client: Client; http?: Running }[] = [];

  afterAll(async () => {
    for (const { client, http } of running) {
      await client.close();
      await http?.stop();
    }
  });

  for (const { name, file } of captures) {
    const capture = JSON.parse(readFileSync(file, 'utf8')) as Capture;
    let client: Client;

    beforeAll(async () => {
      const args = [BIN, 'proxy', '--dialect', mode, '--timeout', '20000'];
      client = new Client({ name: `sweep-${mode}`, version: '1.0.0' });
      if (overHttp) {
        const http = await startListening([...args, '--http', '127.0.0.1:0', '--', NODE, REPLAY, file]);
        await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
        running.push({ client, http });
      } else {
        const transport = new StdioClientTransport({
          command: NODE,
          args: [...args, '--', NODE, REPLAY, file],
          cwd: ROOT,
        });
        await client.connect(transport);
        running.push({ client });
      }
    });

    it(`${name} (${capture.package}@${capture.version}): every call as it succeeded directly, nothing missing`, async () => {
      const { tools } = await client.listTools();
      const size = JSON.stringify(tools).length;
      // Passthrough runs first: an envelope mode's list is at most twice its size.
      if (mode === 'passthrough') listSizes.set(name, size);
      else
        expect(size / (listSizes.get(name) ?? Number.NaN), `${mode} ${name} tools/list`).toBeLessThanOrEqual(
          2,
        );
      for (const call of capture.calls) {
        if (call.result === undefined) continue;
        const answer = (await client.callTool({
          name: call.tool,
          ...(call.arguments === undefined ? {} : { arguments: call.arguments }),
        })) as ResultLike;
        const where = `${mode} ${name} ${call.tool}`;
        if (call.result.isError !== true) expect(answer.isError ?? false, where).toBe(false);
        expect(missingFromAnswer(call.result, answer), where).toEqual([]);
        if (mode === 'passthrough') expect(answer, where).toEqual(call.result);
      }
    });
  }
});
