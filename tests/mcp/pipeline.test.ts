import { describe, expect, it } from 'vitest';
import { digestValue } from '../../src/canonical/index.ts';
import { createIdSource } from '../../src/ids/index.ts';
import {
  type CallSummary,
  createPipeline,
  PipelineRpcError,
  type ToolCall,
  ToolTimeoutError,
  toolResultPayload,
} from '../../src/mcp/index.ts';
import type { ProvRecord } from '../../src/provenance/index.ts';

const tool = {
  name: 'lookup',
  inputSchema: {
    type: 'object',
    properties: { id: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
    required: ['id'],
  },
};

function call(invoke: ToolCall['invoke'], extra: Partial<ToolCall> = {}): ToolCall {
  return { tool, arguments: { id: 'a' }, invoke, ...extra };
}

const text = (value: string) => async () => ({ content: [{ type: 'text', text: value }] });

describe('createPipeline', () => {
  it('reports each call once, with digests of the arguments and of the result', async () => {
    const summaries: CallSummary[] = [];
    const pipeline = createPipeline({
      ids: createIdSource('s'),
      onCall: (summary) => summaries.push(summary),
    });
    const result = await pipeline.callTool(call(text('{"found":true}')));
    expect(result.structuredContent).toMatchObject({ result: { found: true } });
    expect(summaries).toEqual([
      {
        tool: 'lookup',
        dialect: 'prov-v0.1',
        outcome: 'ok',
        action: 'wrapped',
        error_code: null,
        request_id: expect.any(String),
        duration_ms: expect.any(Number),
        arguments_digest: digestValue({ id: 'a' }).value,
        result_digest: digestValue(result.structuredContent).value,
        provenance: false,
        losses: 0,
      },
    ]);
  });

  it('puts the exit code and a stderr excerpt of a crashed upstream into the error details', async () => {
    const pipeline = createPipeline();
    const crash = Object.assign(new Error('upstream exited'), {
      exitCode: 3,
      stderr: 'Traceback\nKeyError: x\n',
    });
    const result = await pipeline.callTool(
      call(async () => {
        throw crash;
      }),
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      result: null,
      errors: [
        {
          code: 'ADAPTER.EXECUTION.FAILED',
          message: 'Tool execution failed: upstream exited',
          details: { exit_code: 3, stderr_excerpt: 'Traceback\nKeyError: x' },
        },
      ],
    });
  });

  it('keeps the text of an error result, and the output of one with structured codes', async () => {
    const pipeline = createPipeline();
    const plain = await pipeline.callTool(
      call(async () => ({ content: [{ type: 'text', text: 'disk full' }], isError: true })),
    );
    expect(plain.structuredContent).toMatchObject({
      result: null,
      errors: [{ code: 'ADAPTER.EXECUTION.FAILED', message: 'disk full' }],
    });
    const output = {
      errors: [{ code: 'TEMPLATE_NOT_FOUND', message: 'no such template' }],
      hint: 'list them',
    };
    const coded = await pipeline.callTool(
      call(async () => ({ content: [], structuredContent: output, isError: true })),
    );
    expect(coded.structuredContent).toMatchObject({
      result: output,
      errors: [{ code: 'TEMPLATE_NOT_FOUND', message: 'no such template' }],
    });
  });

  it('wraps other content as the content array, and an empty result as null', async () => {
    const pipeline = createPipeline();
    const content = [
      { type: 'text', text: 'a' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
    ];
    const mixed = await pipeline.callTool(call(async () => ({ content })));
    expect(mixed.structuredContent).toMatchObject({ result: content });
    const empty = await pipeline.callTool(call(async () => ({ content: [] })));
    expect(empty.structuredContent).toMatchObject({ result: null });
  });

  it('warns instead of rejecting in warn mode, and skips the check when off', async () => {
    let invoked = 0;
    const invoke = async () => {
      invoked++;
      return { content: [{ type: 'text', text: 'ok' }] };
    };
    const warn = await createPipeline({ inputValidation: 'warn' }).callTool(
      call(invoke, { arguments: { id: 1 } }),
    );
    expect(warn.isError).toBeUndefined();
    expect(warn.structuredContent).toMatchObject({
      result: 'ok',
      warnings: [{ code: 'INVALID_INPUT', details: { pointer: '/id' } }],
    });
    const off = await createPipeline({ inputValidation: 'off' }).callTool(
      call(invoke, { arguments: { id: 1 } }),
    );
    expect(off.structuredContent).not.toHaveProperty('warnings');
    const enforce = await createPipeline().callTool(call(invoke, { arguments: { id: 'a', tags: [1] } }));
    expect(enforce.structuredContent).toMatchObject({
      errors: [{ code: 'INVALID_INPUT', details: { pointer: '/tags/0' } }],
    });
    expect(invoked).toBe(2);
  });

  it('throws a PipelineRpcError carrying the JSON-RPC error when asked to', async () => {
    const pipeline = createPipeline({ invalidInput: 'jsonrpc-error' });
    const error = await pipeline.callTool(call(text('x'), { arguments: {} })).catch((caught) => caught);
    expect(error).toBeInstanceOf(PipelineRpcError);
    expect(error.rpcError).toEqual({
      code: -32602,
      message: 'Invalid params',
      data: { canonical_code: 'INVALID_INPUT', pointer: '', reason: '/ is missing required member "id"' },
    });
  });

  it('denies a call the feature gate refuses, without running the tool', async () => {
    let ran = false;
    const pipeline = createPipeline({
      tier: 'community',
      gate: ({ tool: name, tier }) =>
        tier === 'community' && name === 'lookup'
          ? { allowed: false, code: 'upgrade_required', message: 'lookup needs the pro tier' }
          : { allowed: true },
    });
    const result = await pipeline.callTool(
      call(async () => {
        ran = true;
        return { content: [] };
      }),
    );
    expect(ran).toBe(false);
    expect(result.structuredContent).toMatchObject({
      errors: [{ code: 'upgrade_required', message: 'lookup needs the pro tier' }],
    });
  });

  it('passes an envelope in JSON text through byte for byte, recording it when asked', async () => {
    const records: ProvRecord[] = [];
    const pipeline = createPipeline({ onRecord: (record) => void records.push(record) });
    const envelopeText =
      '{"schema_version":"mcp.envelope.v0.1","result":1.0,"errors":[{"code":"X","message":"y"}]}';
    const result = await pipeline.callTool(call(text(envelopeText), { meta: { capture_provenance: true } }));
    expect(result.content).toEqual([{ type: 'text', text: envelopeText }]);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual(JSON.parse(envelopeText));
    expect(result._meta?.['mcp-envelope/provenance']).toEqual(records[0]);
    expect(records[0]?.methods).toContain('adapter.pass_through.envelope_v0_1');
  });

  it('rejects an invalid mcp.envelope.v0.1 from a tool instead of wrapping it again', async () => {
    const result = await createPipeline().callTool(
      call(async () => ({
        content: [],
        structuredContent: { schema_version: 'mcp.envelope.v0.1', result: 1, extra: 2 },
      })),
    );
    expect(result.structuredContent).toMatchObject({
      errors: [{ code: 'INVALID_OUTPUT', details: { pointer: '/extra' } }],
    });
  });

  it('reads back payloads without loss', () => {
    expect(toolResultPayload({ content: [{ type: 'text', text: '{"n": 1e2}' }] })).toEqual({
      source: 'json-text',
      value: { n: 100 },
      text: '{"n": 1e2}',
    });
    expect(toolResultPayload({ content: [{ type: 'text', text: '{"a":1,"a":2}' }] })).toMatchObject({
      source: 'text',
    });
    expect(toolResultPayload({ content: [], structuredContent: { a: 1 } })).toEqual({
      source: 'structured',
      value: { a: 1 },
    });
  });
});

describe('createPipeline timeouts and interim results', () => {
  it('fails a tool that does not answer in time, and aborts its signal', async () => {
    let aborted: unknown;
    const pipeline = createPipeline({ timeoutMs: 30 });
    const result = await pipeline.callTool(
      call(
        (_args, signal) =>
          new Promise((resolve) => {
            signal?.addEventListener('abort', () => {
              aborted = signal.reason;
              resolve({ content: [{ type: 'text', text: 'too late' }] });
            });
          }),
      ),
    );
    expect(aborted).toBeInstanceOf(ToolTimeoutError);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      result: null,
      errors: [
        {
          code: 'ADAPTER.EXECUTION.FAILED',
          message: 'Tool execution failed: the tool did not answer within 30 ms',
          details: { exception: 'TimeoutError' },
        },
      ],
    });
  });

  it('returns an interim result unchanged', async () => {
    const interim = { resultType: 'input_required', inputRequests: {} };
    const result = await createPipeline().callTool(
      call(async () => interim as never, { isInterim: (value) => 'resultType' in value }),
    );
    expect(result).toBe(interim);
  });
});

describe('createPipeline with a broken tool schema', () => {
  it('answers INTERNAL_ERROR instead of crashing', async () => {
    const summaries: CallSummary[] = [];
    const pipeline = createPipeline({ onCall: (summary) => summaries.push(summary) });
    const result = await pipeline.callTool({
      tool: { name: 'broken', inputSchema: { type: 'no-such-type' } },
      arguments: {},
      invoke: text('never'),
    });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ errors: [{ code: 'INTERNAL_ERROR' }] });
    expect(summaries[0]).toMatchObject({ outcome: 'internal_error', error_code: 'INTERNAL_ERROR' });
  });
});
