import { describe, expect, it } from 'vitest';
import { digestValue, parseJsonLossless } from '../../src/canonical/index.ts';
import { EnvelopeError } from '../../src/errors/index.ts';
import { createIdSource } from '../../src/ids/index.ts';
import {
  type CallSummary,
  createPipeline,
  PipelineRpcError,
  type ToolCall,
  ToolTimeoutError,
} from '../../src/mcp/index.ts';
import { toolResultPayload } from '../../src/mcp/tool-result.ts';
import { type ProvRecord, verify } from '../../src/provenance/index.ts';
import { answerContains } from '../support/no-loss.ts';

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

/** Collects the record a summary carries, as a ledger would. */
function recordOf(summary: CallSummary, records: ProvRecord[]): void {
  if (summary.provenance) records.push(summary.provenance.record);
}

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
        failure: null,
        action: 'wrapped',
        code: null,
        requestId: expect.any(String),
        durationMs: expect.any(Number),
        argumentsDigest: `sha256:${digestValue({ id: 'a' }).value}`,
        resultDigest: `sha256:${digestValue(result).value}`,
        resultDialect: 'prov-v0.1',
        resultVersion: 'mcp.envelope.v0.1',
        sourceDialect: 'legacy',
        sourceVersion: null,
        toolRan: true,
        provenance: null,
        losses: 0,
      },
    ]);
    expect(summaries[0]?.requestId).toBe(
      (result.structuredContent as { meta: { request_id: string } }).meta.request_id,
    );
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

  it('sends other content as its blocks, referred to by the envelope, and an empty result as null', async () => {
    const pipeline = createPipeline();
    const content = [
      { type: 'text', text: 'a' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png', annotations: { audience: ['user'] } },
    ];
    const mixed = await pipeline.callTool(call(async () => ({ content: structuredClone(content) })));
    // The blocks follow the envelope's own text block as they came; the envelope refers to them.
    expect(mixed.content.slice(1)).toEqual(content);
    expect(mixed.structuredContent).toMatchObject({
      result: [
        'a',
        {
          type: 'image',
          mimeType: 'image/png',
          annotations: { audience: ['user'] },
          size_bytes: 3,
          sha256: '709e80c88487a2411e1ee4dfb9f22a861492d20c4765150c0c794abd70f8147c',
          content_index: 2,
        },
      ],
    });
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

  it('denies a call the tier gate refuses, with upgrade hints, without running the tool', async () => {
    let ran = 0;
    const invoke = async () => {
      ran++;
      return { content: [{ type: 'text', text: 'ran' }] };
    };
    const gate = { features: { lookup: 'pro' }, reasons: { lookup: 'lookup needs the pro tier' } };
    const denied = await createPipeline({ tier: 'community', gate }).callTool(call(invoke));
    expect(ran).toBe(0);
    expect(denied.isError).toBe(true);
    expect(denied.structuredContent).toMatchObject({
      result: null,
      errors: [{ code: 'UPGRADE_REQUIRED', message: 'lookup needs the pro tier' }],
      warnings: [{ code: 'TIER.UPGRADE_HINT', details: { feature: 'lookup', tier: 'pro' } }],
    });
    const scalpel = await createPipeline({ dialect: 'scalpel-v1', tier: 'community', gate }).callTool(
      call(invoke),
    );
    expect(scalpel.structuredContent).toMatchObject({
      tier: 'community',
      error: { error_code: 'upgrade_required' },
      upgrade_hints: [{ feature: 'lookup', tier: 'pro', reason: 'lookup needs the pro tier' }],
    });
    const allowed = await createPipeline({ dialect: 'scalpel-v1', tier: 'pro', gate }).callTool(call(invoke));
    expect(allowed.structuredContent).toMatchObject({ tier: 'pro', error: null, data: 'ran' });
    expect(ran).toBe(1);
  });

  it('trims wrapped payloads to the response profile, never a tool envelope', async () => {
    const payload = { hits: [], total: 0, note: null, items: [{ id: 1, extra: {} }] };
    const standard = await createPipeline({ profile: 'standard' }).callTool(
      call(text(JSON.stringify(payload))),
    );
    expect(standard.structuredContent).toMatchObject({ result: { total: 0, items: [{ id: 1 }] } });
    const own = { schema_version: 'mcp.envelope.v0.1', result: payload };
    const passed = await createPipeline({ profile: 'minimal' }).callTool(call(text(JSON.stringify(own))));
    expect(passed.structuredContent).toEqual(own);
  });

  it('passes an envelope in JSON text through byte for byte, recording it when asked', async () => {
    const records: ProvRecord[] = [];
    const pipeline = createPipeline({ onCall: (summary) => recordOf(summary, records) });
    const envelopeText =
      '{"schema_version":"mcp.envelope.v0.1","result":1.0,"errors":[{"code":"X","message":"y"}]}';
    const result = await pipeline.callTool(call(text(envelopeText), { meta: { capture_provenance: true } }));
    expect(result.content).toEqual([{ type: 'text', text: envelopeText }]);
    expect(result.isError).toBe(true);
    // Structured too, it is written as the tool wrote it (`1.0` stays `1.0`).
    expect(JSON.stringify(result.structuredContent)).toBe(envelopeText);
    expect(result._meta?.['mcp-envelope/provenance']).toEqual(records[0]);
    expect(records[0]?.methods).toContain('adapter.pass_through.envelope_v0_1');
  });

  it('answers an invalid mcp.envelope.v0.1 from a tool with an error, its bytes beside it', async () => {
    const claimed = { schema_version: 'mcp.envelope.v0.1', result: 1, extra: 2 };
    const result = await createPipeline().callTool(
      call(async () => ({ content: [], structuredContent: claimed })),
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      result: null,
      errors: [{ code: 'INVALID_OUTPUT', details: { pointer: '/extra', tool_ran: true } }],
    });
    // Wrapping it would nest envelopes; the original travels as a second content block.
    expect(result.content[1]).toEqual({ type: 'text', text: JSON.stringify(claimed) });
  });

  it('reads back payloads without loss', () => {
    const spelled = toolResultPayload({ content: [{ type: 'text', text: '{"n": 1e2}' }] });
    expect(spelled).toMatchObject({ source: 'json-text', value: { n: 100 }, text: '{"n": 1e2}' });
    expect(JSON.stringify((spelled as { lossless: unknown }).lossless)).toBe('{"n":1e2}');
    expect(toolResultPayload({ content: [{ type: 'text', text: '{"a":1,"a":2}' }] })).toMatchObject({
      source: 'text',
    });
    expect(toolResultPayload({ content: [], structuredContent: { a: 1 } })).toEqual({
      source: 'structured',
      value: { a: 1 },
    });
  });
});

describe('createPipeline reports each call once', () => {
  it('to onCall and to the call, with the digests the record carries', async () => {
    const summaries: CallSummary[] = [];
    const own: CallSummary[] = [];
    const pipeline = createPipeline({ onCall: (summary) => summaries.push(summary) });
    const result = await pipeline.callTool(
      call(text('{"x":1}'), {
        meta: { capture_provenance: true, provenance_mode: 'full' },
        report: (summary) => own.push(summary()),
      }),
    );
    expect(summaries).toHaveLength(1);
    expect(own).toEqual(summaries);
    const [summary] = summaries;
    const record = (result.structuredContent as { provenance: ProvRecord }).provenance;
    expect(summary?.provenance).toEqual({ record, placement: 'envelope' });
    // The arguments' one canonical form gives the record's input digest and the report's.
    expect(summary?.argumentsDigest).toBe(`sha256:${record.inputs?.[0]?.digest?.value}`);
  });

  it('reports a call answered with the JSON-RPC error for invalid input', async () => {
    const summaries: CallSummary[] = [];
    const pipeline = createPipeline({
      invalidInput: 'jsonrpc-error',
      onCall: (summary) => summaries.push(summary),
    });
    await expect(pipeline.callTool(call(text('x'), { arguments: {} }))).rejects.toBeInstanceOf(
      PipelineRpcError,
    );
    expect(summaries).toEqual([
      expect.objectContaining({
        outcome: 'error',
        failure: 'invalid_input',
        code: 'INVALID_INPUT',
        action: 'rejected',
        resultDigest: null,
        resultDialect: null,
        toolRan: false,
      }),
    ]);
  });

  it('reports a call its caller withdrew as cancelled, with no code', async () => {
    const summaries: CallSummary[] = [];
    const controller = new AbortController();
    await createPipeline({ onCall: (summary) => summaries.push(summary) }).callTool(
      call(
        async () => {
          controller.abort();
          throw new Error('aborted by the client');
        },
        { signal: controller.signal },
      ),
    );
    expect(summaries[0]).toMatchObject({ outcome: 'cancelled', failure: null, code: null });
  });

  it('names the code of a legacy error result, which travels as text', async () => {
    const summaries: CallSummary[] = [];
    const result = await createPipeline({
      dialect: 'legacy',
      onCall: (summary) => summaries.push(summary),
    }).callTool(call(text('x'), { arguments: {} }));
    expect(result.isError).toBe(true);
    expect(summaries[0]).toMatchObject({
      outcome: 'error',
      code: 'INVALID_INPUT',
      resultDialect: 'legacy',
      resultVersion: null,
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
          code: 'TIMEOUT',
          message: 'Operation timed out: the tool did not answer within 30 ms',
          details: { timeout_ms: 30 },
          retryable: true,
        },
      ],
    });
  });

  it('answers a call that timed out upstream with the retriable TIMEOUT a relayed call gets', async () => {
    const summaries: CallSummary[] = [];
    const pipeline = createPipeline({ onCall: (summary) => summaries.push(summary) });
    const result = await pipeline.callTool(
      call(async () => {
        throw new EnvelopeError('TIMEOUT', 'upstream alpha did not answer tools/call within 50 ms', {
          upstream: 'alpha',
          timeout_ms: 50,
        });
      }),
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      result: null,
      errors: [
        {
          code: 'TIMEOUT',
          message: 'Operation timed out: upstream alpha did not answer tools/call within 50 ms',
          details: { upstream: 'alpha', timeout_ms: 50 },
          retryable: true,
        },
      ],
    });
    expect(summaries[0]).toMatchObject({ outcome: 'error', failure: 'execution_failed', code: 'TIMEOUT' });
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
    expect(summaries[0]).toMatchObject({
      outcome: 'error',
      failure: 'internal_error',
      code: 'INTERNAL_ERROR',
      toolRan: false,
    });
    expect(result.structuredContent).toMatchObject({
      errors: [{ details: { tool: 'broken', schema: 'inputSchema', reason: 'does_not_compile' } }],
    });
  });

  it('calls the tool when input validation is not enforced', async () => {
    for (const inputValidation of ['warn', 'off'] as const) {
      let ran = 0;
      const result = await createPipeline({ inputValidation }).callTool({
        tool: { name: 'broken', inputSchema: { type: 'no-such-type' } },
        arguments: {},
        invoke: async () => {
          ran++;
          return { content: [{ type: 'text', text: 'done' }] };
        },
      });
      expect(ran, inputValidation).toBe(1);
      expect(result.isError, inputValidation).toBeUndefined();
    }
  });

  it('never fails a call that ran because its outputSchema does not compile', async () => {
    let ran = 0;
    const pipeline = createPipeline();
    for (let attempt = 0; attempt < 3; attempt++) {
      const result = await pipeline.callTool({
        tool: {
          name: 'write_file',
          inputSchema: { type: 'object' },
          outputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'no-such-type' },
        },
        arguments: {},
        invoke: async () => {
          ran++;
          return {
            content: [{ type: 'text', text: '{"written":true}' }],
            structuredContent: { written: true },
          };
        },
      });
      expect(result.isError).toBeUndefined();
      expect(result.structuredContent).toMatchObject({ result: { written: true } });
    }
    expect(ran).toBe(3);
  });

  it('checks draft-07 schemas, as v1 SDK servers declare them', async () => {
    const draft07 = {
      name: 'echo',
      inputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { message: { type: 'string' } },
        required: ['message'],
        additionalProperties: false,
      },
      outputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { echoed: { type: 'string' } },
        required: ['echoed'],
      },
    };
    const pipeline = createPipeline();
    const invoke = async () => ({
      content: [{ type: 'text', text: 'hi' }],
      structuredContent: { echoed: 'hi' },
    });
    const ok = await pipeline.callTool({ tool: draft07, arguments: { message: 'hi' }, invoke });
    expect(ok.isError).toBeUndefined();
    const refused = await pipeline.callTool({ tool: draft07, arguments: { message: 2 }, invoke });
    expect(refused.structuredContent).toMatchObject({ errors: [{ code: 'INVALID_INPUT' }] });
    const badOutput = await pipeline.callTool({
      tool: draft07,
      arguments: { message: 'hi' },
      invoke: async () => ({ content: [], structuredContent: { echoed: 3 } }),
    });
    expect(badOutput.structuredContent).toMatchObject({ errors: [{ code: 'INVALID_OUTPUT' }] });
  });
});

describe('createPipeline with a hostile pattern in a tool schema', () => {
  const hostile = {
    name: 'hostile',
    inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } },
  };

  it('checks the pattern without backtracking, and other calls are answered', async () => {
    const pipeline = createPipeline();
    // On a backtracking engine this check of 41 characters runs for hours, the event loop with it.
    const refused = pipeline.callTool({
      tool: hostile,
      arguments: { s: `${'a'.repeat(40)}!` },
      invoke: text('never'),
    });
    const other = pipeline.callTool(call(text('{"found":true}')));
    const [first, second] = await Promise.all([refused, other]);
    expect(first.isError).toBe(true);
    expect(first.structuredContent).toMatchObject({
      errors: [{ code: 'INVALID_INPUT', details: { pointer: '/s' } }],
    });
    expect(second.structuredContent).toMatchObject({ result: { found: true } });
  });

  it('refuses a schema whose pattern needs backtracking (a backreference) with INTERNAL_ERROR', async () => {
    const result = await createPipeline().callTool({
      tool: { name: 'backref', inputSchema: { type: 'object', properties: { s: { pattern: '^(a+)\\1$' } } } },
      arguments: { s: 'aa' },
      invoke: text('never'),
    });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      errors: [
        { code: 'INTERNAL_ERROR', message: expect.stringContaining('cannot be matched in linear time') },
      ],
    });
  });
});

describe('createPipeline in every result dialect', () => {
  const dialects = ['prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'] as const;

  it('gives byte-identical results for the same calls with the same seed', async () => {
    for (const dialect of dialects) {
      const runs: string[] = [];
      for (let run = 0; run < 2; run++) {
        const pipeline = createPipeline({ dialect, ids: createIdSource('same') });
        const ok = await pipeline.callTool(
          call(text('{"x":1}'), { meta: { capture_provenance: true, provenance_mode: 'full' } }),
        );
        const failed = await pipeline.callTool(
          call(async () => {
            throw new Error('down');
          }),
        );
        runs.push(JSON.stringify([ok, failed]));
      }
      expect(runs[0], dialect).toEqual(runs[1]);
    }
  });

  it('puts the record in _meta outside prov-v0.1, without claiming the v0.1 adapter methods', async () => {
    const records: ProvRecord[] = [];
    const pipeline = createPipeline({
      dialect: 'hosted-v2',
      onCall: (summary) => recordOf(summary, records),
    });
    const result = await pipeline.callTool(call(text('{"x":1}'), { meta: { capture_provenance: true } }));
    expect(result.structuredContent).toEqual({
      ok: true,
      tool: 'lookup',
      schema_version: '2026-02-19',
      data: { x: 1 },
    });
    expect(result.content).toEqual([
      { type: 'text', text: JSON.stringify(result.structuredContent) },
      { type: 'text', text: '{"x":1}' },
    ]);
    const record = result._meta?.['mcp-envelope/provenance'] as ProvRecord;
    expect(record).toEqual(records[0]);
    expect(record.methods.filter((method) => method.startsWith('adapter.'))).toEqual([]);
    const report = await verify(record);
    expect(report.checks.filter((check) => check.status === 'fail')).toEqual([]);
  });

  it('passes an envelope of its own dialect through unchanged, and converts one of another', async () => {
    const hosted =
      '{"ok":false,"tool":"get_template","schema_version":"2026-05-06","error":{"code":"TEMPLATE_NOT_FOUND","message":"Template not found","retriable":false,"details":{}}}';
    const summaries: CallSummary[] = [];
    const own = createPipeline({ dialect: 'hosted-v2', onCall: (summary) => summaries.push(summary) });
    const same = await own.callTool(call(text(hosted)));
    expect(same.content).toEqual([{ type: 'text', text: hosted }]);
    expect(same.structuredContent).toEqual(JSON.parse(hosted));
    expect(same.isError).toBe(true);
    expect(summaries[0]).toMatchObject({
      action: 'passed-through',
      outcome: 'error',
      failure: 'tool_error',
      code: 'TEMPLATE_NOT_FOUND',
      sourceDialect: 'hosted-v2',
      sourceVersion: '2026-05-06',
      resultDialect: 'hosted-v2',
      resultVersion: '2026-05-06',
      toolRan: true,
    });
    // In prov-v0.1 the same answer is converted, so that it matches the advertised schema.
    const prov = createPipeline({ onCall: (summary) => summaries.push(summary) });
    const converted = await prov.callTool(call(text(hosted)));
    expect(converted.isError).toBe(true);
    expect(converted.structuredContent).toMatchObject({
      schema_version: 'mcp.envelope.v0.1',
      result: null,
      errors: [{ code: 'TEMPLATE_NOT_FOUND', message: 'Template not found' }],
    });
    expect(summaries[1]).toMatchObject({
      action: 'converted',
      outcome: 'error',
      failure: 'tool_error',
      sourceDialect: 'hosted-v2',
      resultDialect: 'prov-v0.1',
      resultVersion: 'mcp.envelope.v0.1',
    });
    expect(summaries[1]?.losses).toBeGreaterThan(0);
    expect(converted._meta?.['mcp-envelope/losses']).toContainEqual(
      expect.objectContaining({ path: '/tool' }),
    );
  });

  it('lists what the dialect could not carry in _meta, leaving out the adapter metadata', async () => {
    const a11y = await createPipeline({ dialect: 'a11y-v0.1' }).callTool(call(text('Hello')));
    expect(a11y.structuredContent).toMatchObject({ result: { value: 'Hello' } });
    expect(a11y._meta?.['mcp-envelope/losses']).toEqual([
      { path: '/data', reason: expect.any(String), reshaped: true },
    ]);
    const hosted = await createPipeline({ dialect: 'hosted-v2' }).callTool(call(text('Hello')));
    expect(hosted._meta).toBeUndefined();
  });

  it('writes a legacy error result as its message', async () => {
    const result = await createPipeline({ dialect: 'legacy' }).callTool(
      call(async () => {
        throw new Error('down');
      }),
    );
    expect(result).toEqual({
      content: [{ type: 'text', text: 'ADAPTER.EXECUTION.FAILED: Tool execution failed: down' }],
      isError: true,
    });
  });
});

describe('createPipeline with values that have no canonical form', () => {
  const full = { capture_provenance: true, provenance_mode: 'full' };
  const nested = (depth: number): unknown => {
    let value: unknown = 'leaf';
    for (let i = 0; i < depth; i++) value = { a: value };
    return value;
  };

  it('refuses arguments nested beyond the limit before the tool runs, with the pointer', async () => {
    let ran = false;
    const pipeline = createPipeline({ onCall: () => {} });
    const result = await pipeline.callTool(
      call(
        async () => {
          ran = true;
          return { content: [] };
        },
        { arguments: { id: 'a', deep: nested(1200) } },
      ),
    );
    expect(ran).toBe(false);
    const [error] = (result.structuredContent as { errors: { code: string; details: { pointer: string } }[] })
      .errors;
    expect(error?.code).toBe('INVALID_INPUT');
    expect(error?.details.pointer).toBe(`/deep${'/a'.repeat(999)}`);
  });

  it('accepts arguments at the limit', async () => {
    const pipeline = createPipeline();
    const result = await pipeline.callTool(
      call(text('{"ok":true}'), { arguments: { id: 'a', deep: nested(998) } }),
    );
    expect(result.structuredContent).toMatchObject({ result: { ok: true } });
  });

  it('refuses a lone surrogate in the arguments before the tool runs when the record digests them', async () => {
    let ran = 0;
    const pipeline = createPipeline();
    const invoke = async () => {
      ran++;
      return { content: [{ type: 'text' as const, text: 'done' }] };
    };
    const refused = await pipeline.callTool(call(invoke, { arguments: { id: 'a\ud800' }, meta: full }));
    expect(ran).toBe(0);
    const envelope = refused.structuredContent as {
      errors: { code: string; details: { pointer: string } }[];
      provenance: ProvRecord;
    };
    expect(envelope.errors[0]).toMatchObject({ code: 'INVALID_INPUT', details: { pointer: '/id' } });
    // The record of the refusal is still there, without the digest it cannot have.
    expect(envelope.provenance.inputs?.[0]?.digest).toBeUndefined();
    // Without digests in the record, nothing needs the canonical form: the call runs.
    const minimal = await pipeline.callTool(
      call(invoke, { arguments: { id: 'a\ud800' }, meta: { capture_provenance: true } }),
    );
    expect(ran).toBe(1);
    expect(minimal.isError).toBeFalsy();
  });

  it('keeps a result with a lone surrogate, recording without digests and saying why in a warning', async () => {
    const summaries: CallSummary[] = [];
    const pipeline = createPipeline({ onCall: (summary) => summaries.push(summary) });
    const result = await pipeline.callTool(
      call(async () => ({ content: [], structuredContent: { text: 'a\ud800' } }), { meta: full }),
    );
    const envelope = result.structuredContent as {
      result: unknown;
      warnings: unknown[];
      provenance: ProvRecord;
    };
    expect(envelope.result).toEqual({ text: 'a\ud800' });
    expect(envelope.warnings).toEqual([
      {
        code: 'JSON_LONE_SURROGATE',
        message: expect.stringContaining('result'),
        details: { artifact: 'result', pointer: '/text' },
      },
    ]);
    expect(envelope.provenance.outputs?.[0]?.digest).toBeUndefined();
    expect(envelope.provenance.methods).toContain('adapter.warnings.capture');
    expect(summaries[0]?.resultDigest).toBeNull();
    expect(summaries[0]?.argumentsDigest).toBe(`sha256:${digestValue({ id: 'a' }).value}`);
    expect(summaries[0]?.provenance?.placement).toBe('envelope');
  });
});

describe("createPipeline and the accessibility suite's request form", () => {
  const tool = {
    name: 'a11y.evidence',
    inputSchema: { type: 'object', properties: { targets: { type: 'array' } }, required: ['targets'] },
  };
  const header = {
    envelope: 'mcp.envelope_v0_1',
    request_id: 'req_fixture_evidence_001',
    tool: 'a11y.evidence',
  };

  it('validates {mcp, input} by its input, and forwards the arguments unchanged', async () => {
    const seen: unknown[] = [];
    const args = { mcp: header, input: { targets: [{ kind: 'file', path: 'index.html' }] } };
    const result = await createPipeline().callTool({
      tool,
      arguments: args,
      invoke: async (forwarded) => {
        seen.push(forwarded);
        return { content: [{ type: 'text', text: '{"bundle":"b1"}' }] };
      },
    });
    expect(result.isError).toBeUndefined();
    expect(seen).toEqual([args]);
  });

  it('names the pointer under /input when the input breaks the schema', async () => {
    const result = await createPipeline().callTool({
      tool,
      arguments: { mcp: header, input: { targets: 'nope' } },
      invoke: async () => ({ content: [] }),
    });
    expect(result.structuredContent).toMatchObject({
      errors: [{ code: 'INVALID_INPUT', details: { pointer: '/input/targets' } }],
    });
  });
});

describe('createPipeline keeps payload numbers as the tool wrote them', () => {
  const big = '{"id":12345678901234567890,"ratio":1.0,"n":5.4e3}';

  it('in a wrapped legacy payload, and in its record digest (an integer beyond 2^53 by its digits)', async () => {
    const records: ProvRecord[] = [];
    const pipeline = createPipeline({ onCall: (summary) => recordOf(summary, records) });
    const result = await pipeline.callTool(
      call(text(big), { meta: { capture_provenance: true, capture_artifacts: true } }),
    );
    const sent = (result.content[0] as { text: string }).text;
    expect(sent).toContain('"result":{"id":12345678901234567890,"ratio":1.0,"n":5.4e3}');
    expect(JSON.stringify(result.structuredContent)).toContain('12345678901234567890');
    const output = (records[0] as unknown as { outputs: { digest: { value: string } }[] }).outputs[0];
    expect(output?.digest.value).toBe(digestValue(parseJsonLossless(big).lossless).value);
    expect(output?.digest.value).not.toBe(digestValue(JSON.parse(big)).value);
  });

  it('in an envelope converted from another dialect, and one sent structured with its text', async () => {
    const hosted = `{"ok":true,"tool":"t","schema_version":"2026-05-06","data":${big}}`;
    const converted = await createPipeline().callTool(call(text(hosted)));
    expect(JSON.stringify(converted.structuredContent)).toContain(`"result":${big}`);
    const both = await createPipeline({ dialect: 'hosted-v2' }).callTool(
      call(async () => ({ content: [{ type: 'text', text: big }], structuredContent: JSON.parse(big) })),
    );
    expect(JSON.stringify(both.structuredContent)).toContain(`"data":${big}`);
  });
});

describe('createPipeline and error results longer than an error message holds', () => {
  const long = 'x'.repeat(2500);
  const json = JSON.stringify({ detail: 'y'.repeat(2500) }, null, 2);

  for (const dialect of ['prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'] as const) {
    it(`${dialect}: answers a valid envelope and keeps the whole text`, async () => {
      const pipeline = createPipeline({ dialect });
      for (const text of [long, json]) {
        const result = await pipeline.callTool(
          call(async () => ({ content: [{ type: 'text', text }], isError: true })),
        );
        expect(result.isError).toBe(true);
        const parsed = text === json ? JSON.parse(json) : text;
        expect(answerContains(result, parsed), dialect).toBe(true);
      }
    });
  }
});

describe('createPipeline and output that resembles an envelope', () => {
  it('wraps a near miss intact as a success, with a warning naming the dialect', async () => {
    const near = { ok: true, schema_version: '2026-05-06', data: { n: 1 } };
    const result = await createPipeline().callTool(
      call(async () => ({ content: [], structuredContent: near })),
    );
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toMatchObject({
      result: near,
      warnings: [{ code: 'ADAPTER.ENVELOPE.NEAR_MISS', details: { dialect: 'hosted-v2' } }],
    });
  });

  it('answers an envelope holding an envelope with an error, its bytes beside it, instead of nesting it', async () => {
    const inner = { schema_version: 'mcp.envelope.v0.1', result: 1 };
    const outer = { ok: true, tool: 't', schema_version: '2026-05-06', data: inner };
    const result = await createPipeline().callTool(
      call(async () => ({ content: [], structuredContent: outer })),
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      result: null,
      errors: [{ code: 'INVALID_OUTPUT', details: { tool_ran: true } }],
    });
    expect(result.content[1]).toEqual({ type: 'text', text: JSON.stringify(outer) });
  });
});
