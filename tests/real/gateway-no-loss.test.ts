import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalCode } from '../../src/errors/index.ts';
import { readToolResult } from '../../src/mcp/index.ts';
import { BIN, NODE, ROOT, type Running, startListening } from '../gateway/processes.ts';
import { answerContains, missingFromAnswer, producedPayload } from '../support/no-loss.ts';
import { realCases } from '../support/real-corpus.ts';
import { generatedAnswer, wholeResult } from '../support/upstream-answers.ts';

/**
 * The corpus of real servers' answers, replayed by an upstream behind the
 * gateway in every mode, over stdio and HTTP, read by the official SDK client
 * (which validates structuredContent against the advertised outputSchema):
 * every answer reaches the client with the tool's payload in it.
 */

const REPLAY = fileURLToPath(new URL('../fixtures/servers/replay.ts', import.meta.url));
const MODES = ['passthrough', 'prov-v0.1', 'hosted-v2', 'scalpel-v1', 'a11y-v0.1', 'legacy'] as const;
const CASES = realCases();

function flags(mode: string): string[] {
  return ['--dialect', mode, '--timeout', '20000'];
}

/** Every call-log line written under `dir`. */
function logLines(dir: string): Record<string, unknown>[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.jsonl'))
    .flatMap((file) => readFileSync(join(dir, file), 'utf8').trim().split('\n'))
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe.each(MODES)('the gateway in %s mode', (mode) => {
  let stdio: Client;
  let http: Running;
  let overHttp: Client;
  const logs = mkdtempSync(join(tmpdir(), 'no-loss-logs-'));

  beforeAll(async () => {
    stdio = new Client({ name: 'no-loss-stdio', version: '1.0.0' });
    const args = [BIN, 'proxy', ...flags(mode), '--logs', logs, '--', NODE, REPLAY];
    const connected = stdio.connect(new StdioClientTransport({ command: NODE, args, cwd: ROOT }));
    http = await startListening([BIN, 'proxy', '--http', '127.0.0.1:0', ...flags(mode), '--', NODE, REPLAY]);
    overHttp = new Client({ name: 'no-loss-http', version: '1.0.0' });
    await Promise.all([connected, overHttp.connect(new StreamableHTTPClientTransport(new URL(http.url)))]);
    // The SDK client validates structured content against the outputSchema tools/list advertised.
    await Promise.all([stdio.listTools(), overHttp.listTools()]);
  });

  afterAll(async () => {
    await stdio?.close();
    await overHttp?.close();
    await http?.stop();
    rmSync(logs, { recursive: true, force: true });
  });

  it('delivers every real answer with its payload, success as success and error as error', async () => {
    for (const item of CASES) {
      const name = item.id.replace('/', '.');
      const [viaStdio, viaHttp] = await Promise.all([
        stdio.callTool({ name, arguments: {} }),
        overHttp.callTool({ name, arguments: {} }),
      ]);
      for (const answer of [viaStdio, viaHttp]) {
        expect(answerContains(answer, producedPayload(item.result)), `${mode} ${item.id}`).toBe(true);
        // An envelope adds, it never takes away: every block, structuredContent and _meta member.
        expect(missingFromAnswer(item.result, answer), `${mode} ${item.id}`).toEqual([]);
        const read = readToolResult(answer);
        expect(read.ok, `${mode} ${item.id}`).toBe(item.expect.ok);
        if (!read.ok && item.expect.code !== null && mode !== 'legacy') {
          expect(canonicalCode(read.error.code), `${mode} ${item.id}`).toBe(canonicalCode(item.expect.code));
        }
        if (
          item.expect.retriable === true &&
          mode !== 'legacy' &&
          mode !== 'scalpel-v1' &&
          mode !== 'a11y-v0.1'
        ) {
          // A real RATE_LIMITED stays retriable in every dialect that can say so.
          expect(read.ok ? undefined : read.error.retriable, `${mode} ${item.id}`).toBe(true);
        }
      }
      if (mode === 'passthrough' || (mode === item.expect.dialect && mode !== 'legacy')) {
        // An envelope of the gateway's own dialect passes through with its text unchanged.
        expect(viaStdio.content, `${mode} ${item.id}`).toEqual(item.result.content);
      }
    }
  });

  it('logs every relayed answer truthfully: a success as a success, with the dialect and version sent', async () => {
    // Closing the client ends the gateway, which flushes its call log on the way out.
    await stdio.close();
    const lines = logLines(logs);
    for (const item of CASES) {
      const line = lines.find((entry) => entry.tool === item.id.replace('/', '.'));
      expect(line, item.id).toMatchObject({ outcome: item.expect.ok ? 'ok' : 'error' });
      if (mode === 'passthrough') {
        expect(line, item.id).toMatchObject({
          resultDialect: item.expect.dialect,
          resultVersion: item.expect.version,
        });
      }
    }
  });

  it('sends payload numbers as the tool wrote them', async () => {
    const big = '{"id":12345678901234567890,"ratio":1.0}';
    const answer = await overHttp.callTool({
      name: 'replay',
      arguments: { result: { content: [{ type: 'text', text: big }] } },
    });
    // The SDK client parses numbers as doubles; the text it was given shows what was sent.
    expect((answer.content as { text: string }[])[0]?.text).toContain(big);
  });

  it('delivers generated answers (envelopes, near misses, legacy payloads, errors) with their payload', async () => {
    await fc.assert(
      fc.asyncProperty(generatedAnswer, async (answer) => {
        // A bounded wait per call: an answer the gateway never sent fails with its counterexample.
        const result = await overHttp.callTool(
          { name: 'replay', arguments: { result: answer } },
          { timeout: 10_000 },
        );
        expect(answerContains(result, producedPayload(answer))).toBe(true);
        if (answer.isError === true) expect(result.isError).toBe(true);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it('delivers whole results (every block type, annotations, _meta, tricky texts) with nothing missing', async () => {
    await fc.assert(
      fc.asyncProperty(wholeResult, async (generated) => {
        const answer = JSON.parse(JSON.stringify(generated)) as typeof generated;
        const result = await overHttp.callTool(
          { name: 'replay', arguments: { result: answer } },
          { timeout: 10_000 },
        );
        expect(missingFromAnswer(answer, result)).toEqual([]);
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
