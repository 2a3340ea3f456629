import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createExampleServer } from '../../examples/envelope-server.ts';
import { DIALECT_IDS, type ResultDialectId } from '../../src/envelope/dialect.ts';
import { createIdSource } from '../../src/ids/index.ts';
import { callToolWithRetry, createPipeline, readToolResult } from '../../src/mcp/index.ts';

const open: Client[] = [];
afterEach(async () => {
  for (const client of open.splice(0)) await client.close();
});

async function exampleClient(): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'reader', version: '1.0.0' });
  await createExampleServer({ seed: 'read' }).connect(serverTransport);
  await client.connect(clientTransport);
  open.push(client);
  return client;
}

function available(dialect: ResultDialectId): boolean {
  try {
    createPipeline({ dialect });
    return true;
  } catch {
    return false;
  }
}

const RESULT_DIALECTS = DIALECT_IDS.filter((id): id is ResultDialectId => id !== 'jsonrpc-request');

describe('readToolResult', () => {
  it('reads an mcp.envelope.v0.1 from structuredContent or from the text alone', () => {
    const envelope = { schema_version: 'mcp.envelope.v0.1', result: { n: 1 } };
    const structured = readToolResult({ content: [], structuredContent: envelope });
    expect(structured).toMatchObject({
      ok: true,
      data: { n: 1 },
      dialect: 'prov-v0.1',
      source: 'structured',
    });
    const text = readToolResult({ content: [{ type: 'text', text: JSON.stringify(envelope) }] });
    expect(text).toMatchObject({ ok: true, data: { n: 1 }, dialect: 'prov-v0.1', source: 'json-text' });
  });

  it('narrows the failure branch to one with an error, retriable as errors[].retryable says', () => {
    const envelope = (retryable?: boolean) => ({
      schema_version: 'mcp.envelope.v0.1',
      result: null,
      errors: [{ code: 'RATE_LIMITED', message: 'later', ...(retryable === undefined ? {} : { retryable }) }],
    });
    const read = readToolResult({ content: [], structuredContent: envelope(true), isError: true });
    if (read.ok) throw new Error('expected a failure');
    expect(read.error).toMatchObject({ code: 'RATE_LIMITED', message: 'later', retriable: true });
    // The schema's default for a missing flag is false, whatever the code.
    const silent = readToolResult({ content: [], structuredContent: envelope(), isError: true });
    expect(silent).toMatchObject({ ok: false, error: { code: 'RATE_LIMITED', retriable: false } });
  });

  it('reads legacy results: text, JSON text, other content, and error results', () => {
    expect(readToolResult({ content: [{ type: 'text', text: 'hello' }] })).toMatchObject({
      ok: true,
      data: 'hello',
      dialect: 'legacy',
      source: 'text',
    });
    expect(readToolResult({ content: [{ type: 'text', text: '[1,2]' }] })).toMatchObject({
      ok: true,
      data: [1, 2],
    });
    const image = { type: 'image', data: 'AAAA', mimeType: 'image/png' };
    expect(readToolResult({ content: [image] })).toMatchObject({
      ok: true,
      data: [image],
      source: 'content',
    });
    expect(readToolResult({ content: [{ type: 'text', text: 'boom' }], isError: true })).toMatchObject({
      ok: false,
      error: { code: 'ADAPTER.EXECUTION.FAILED', message: 'boom', retriable: false },
    });
    expect(
      readToolResult({
        content: [],
        structuredContent: { error: { code: 'RATE_LIMITED', message: 'x' } },
        isError: true,
      }),
    ).toMatchObject({ ok: false, error: { code: 'RATE_LIMITED', retriable: true } });
  });

  it('reads a near-miss envelope as ENVELOPE_INVALID, never as data', () => {
    const read = readToolResult({
      content: [],
      structuredContent: { schema_version: 'mcp.envelope.v0.1', result: 1, unknown: true },
    });
    expect(read).toMatchObject({ ok: false, dialect: 'prov-v0.1', error: { code: 'ENVELOPE_INVALID' } });
  });

  it('reads the seed examples of each dialect', () => {
    // Hosted MCP v2 (seed 003): the envelope only as JSON text in content[0].text.
    const hosted = {
      ok: false,
      tool: 'get_template',
      schema_version: '2026-02-19',
      error: {
        code: 'TEMPLATE_NOT_FOUND',
        message: 'Template not found: "x"',
        retriable: false,
        details: {},
      },
    };
    const hostedRead = readToolResult({
      content: [{ type: 'text', text: JSON.stringify(hosted) }],
      isError: true,
    });
    expect(hostedRead).toMatchObject({
      ok: false,
      dialect: 'hosted-v2',
      source: 'json-text',
      tool: 'get_template',
      error: { code: 'TEMPLATE_NOT_FOUND', retriable: false },
    });
    // Code Scalpel v1 (seed 001), success and error.
    const scalpel = {
      tier: 'pro',
      tool_version: '3.2.8',
      tool_id: 'security_scan',
      request_id: '8b3e5f6c0a2f4ed4a3fb9e0b2f8f8d3a',
      capabilities: ['envelope-v1'],
      duration_ms: 27,
      error: null,
      upgrade_hints: [],
      data: { success: true, risk_level: 'high', findings: [] },
    };
    expect(readToolResult({ content: [], structuredContent: scalpel })).toMatchObject({
      ok: true,
      dialect: 'scalpel-v1',
      data: scalpel.data,
      meta: { tier: 'pro', tool_version: '3.2.8', request_id: scalpel.request_id },
    });
    const scalpelError = {
      ...scalpel,
      tier: 'community',
      error: { error: 'File not found: /missing.py.', error_code: 'not_found', error_details: null },
      data: { success: false, error: 'File not found: /missing.py.' },
    };
    const scalpelRead = readToolResult({ content: [], structuredContent: scalpelError, isError: true });
    expect(scalpelRead).toMatchObject({
      ok: false,
      dialect: 'scalpel-v1',
      error: { message: 'File not found: /missing.py.' },
    });
    // The accessibility suite's mcp.envelope_v0_1.
    const a11y = {
      mcp: { envelope: 'mcp.envelope_v0_1', request_id: 'req_abc123', tool: 'a11y.evidence', ok: true },
      result: { bundle: 'b1' },
    };
    expect(readToolResult({ content: [{ type: 'text', text: JSON.stringify(a11y) }] })).toMatchObject({
      ok: true,
      dialect: 'a11y-v0.1',
      tool: 'a11y.evidence',
      data: { bundle: 'b1' },
    });
  });

  it('rejects a value that is no CallToolResult with a stable code', () => {
    expect(() => readToolResult('nope' as never)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('reads back what the pipeline writes, in every available dialect', async () => {
    const dialects = RESULT_DIALECTS.filter(available);
    expect(dialects).toEqual(expect.arrayContaining(['prov-v0.1', 'legacy']));
    for (const dialect of dialects) {
      const pipeline = createPipeline({ dialect, ids: createIdSource(dialect) });
      const tool = { name: 'lookup' };
      const ok = await pipeline.callTool({
        tool,
        arguments: {},
        meta: { capture_provenance: true },
        invoke: async () => ({ content: [{ type: 'text', text: '{"found":[1,2]}' }] }),
      });
      const read = readToolResult(ok);
      expect(read, dialect).toMatchObject({ ok: true, data: { found: [1, 2] }, dialect });
      if (dialect !== 'legacy') {
        expect(read.provenance, dialect).toMatchObject({ schema_version: 'prov.record.v0.1' });
      }
      const failed = await pipeline.callTool({
        tool,
        arguments: {},
        invoke: async () => {
          throw new Error('down');
        },
      });
      const failure = readToolResult(failed);
      expect(failure.ok, dialect).toBe(false);
      if (!failure.ok) expect(failure.error.code, dialect).toBe('ADAPTER.EXECUTION.FAILED');
    }
  });
});

describe('callToolWithRetry against a real server tool', () => {
  it('retries a retriable failure until the tool succeeds', async () => {
    const client = await exampleClient();
    const delays: number[] = [];
    const read = await callToolWithRetry(
      client,
      { name: 'flaky', arguments: { key: 'three', failures: 3 } },
      { retries: 5, baseDelayMs: 10, maxDelayMs: 40, sleep: async (ms) => void delays.push(ms) },
    );
    expect(read).toMatchObject({ ok: true, attempts: 4, data: { attempts: 4 } });
    expect(delays).toHaveLength(3);
    for (const [index, delay] of delays.entries()) {
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(Math.min(40, 10 * 2 ** index));
    }
  });

  it('gives up after the retries, and does not retry what is not retriable', async () => {
    const client = await exampleClient();
    const exhausted = await callToolWithRetry(
      client,
      { name: 'flaky', arguments: { key: 'many', failures: 5 } },
      { retries: 2, baseDelayMs: 1, maxDelayMs: 2 },
    );
    expect(exhausted).toMatchObject({ ok: false, attempts: 3, error: { code: 'RATE_LIMITED' } });
    const fatal = await callToolWithRetry(
      client,
      { name: 'explode', arguments: {} },
      { retries: 4, baseDelayMs: 1 },
    );
    expect(fatal).toMatchObject({ ok: false, attempts: 1, error: { code: 'ADAPTER.EXECUTION.FAILED' } });
  });

  it("waits until the rate limit's reset_at, and stops when it is beyond the bound", async () => {
    const client = await exampleClient();
    const resetAt = '2030-01-01T00:00:00.000Z';
    const delays: number[] = [];
    const read = await callToolWithRetry(
      client,
      { name: 'flaky', arguments: { key: 'reset', failures: 1, resetAt } },
      { now: () => Date.parse(resetAt) - 250, maxDelayMs: 1000, sleep: async (ms) => void delays.push(ms) },
    );
    expect(read).toMatchObject({ ok: true, attempts: 2 });
    expect(delays).toEqual([250]);
    const far = await callToolWithRetry(
      client,
      { name: 'flaky', arguments: { key: 'far', failures: 1, resetAt } },
      { now: () => Date.parse(resetAt) - 5000, maxDelayMs: 1000, sleep: async () => {} },
    );
    expect(far).toMatchObject({
      ok: false,
      attempts: 1,
      error: { code: 'RATE_LIMITED', details: { reset_at: resetAt } },
    });
  });

  it('stops waiting when the signal aborts', async () => {
    const client = await exampleClient();
    const controller = new AbortController();
    // Aborted once the first attempt has failed and the minute-long wait has begun:
    // the retry loop starts waiting in the same turn that hands it the result.
    const aborting = {
      callTool: async (...args: Parameters<typeof client.callTool>) => {
        const result = await client.callTool(...args);
        setImmediate(() => controller.abort());
        return result;
      },
    };
    const pending = callToolWithRetry(
      aborting,
      { name: 'flaky', arguments: { key: 'abort', failures: 5 } },
      { baseDelayMs: 60_000, maxDelayMs: 60_000, random: () => 0.99, signal: controller.signal },
    );
    await expect(pending).rejects.toThrow(/abort/i);
  });
});
