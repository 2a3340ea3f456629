import { describe, expect, it } from 'vitest';
import { codecFor } from '../../../../src/envelope/dialects/index.ts';
import { parseRequestEnvelope } from '../../../../src/envelope/dialects/jsonrpc-request.ts';
import { defaultRegistry } from '../../../../src/schemas/index.ts';
import { fixtures } from '../../../support/dialect-fixtures.ts';

for (const id of ['scalpel-v1', 'hosted-v2', 'a11y-v0.1'] as const) {
  describe(`${id} codec on the seed examples`, () => {
    const codec = codecFor(id);
    for (const { name, value } of fixtures(`${id}.`)) {
      it(`detects, decodes and re-encodes ${name} unchanged`, () => {
        expect(codec.detect(value)).toEqual({ dialect: id, match: true });
        const encoded = codec.encode(codec.decode(value));
        expect(encoded).toEqual({ value, losses: [] });
      });
    }

    it('has a schema usable as an outputSchema (compiles, accepts its examples)', () => {
      const validate = defaultRegistry().validatorForSchema(codec.schema);
      for (const { value } of fixtures(`${id}.`)) expect(validate(value).valid).toBe(true);
    });
  });
}

describe('scalpel-v1', () => {
  const scalpel = codecFor('scalpel-v1');
  const [ok, failed] = [fixtures('scalpel-v1.ok')[0]?.value, fixtures('scalpel-v1.error')[0]?.value];

  it('decodes the lower-case error_code to the canonical code and back', () => {
    const model = scalpel.decode(failed);
    expect(model.error).toEqual({
      code: 'NOT_FOUND',
      message: 'File not found: /missing.py.',
      retriable: false,
    });
    expect(model.meta).toMatchObject({ tier: 'community', tool_version: '3.2.8' });
    expect((scalpel.encode(model).value as { error: { error_code: string } }).error.error_code).toBe(
      'not_found',
    );
  });

  it('keeps a tool code that is no known spelling verbatim', () => {
    const value = {
      ...(failed as object),
      error: { error: 'x', error_code: 'my_own_code', error_details: null },
    };
    expect(scalpel.decode(value).error?.code).toBe('my_own_code');
  });

  it('requires duration_ms for pro and enterprise', () => {
    const { duration_ms: _drop, ...rest } = ok as Record<string, unknown>;
    expect(scalpel.detect(rest)).toMatchObject({ match: false, near: true });
    expect(scalpel.detect({ ...rest, tier: 'community' }).match).toBe(true);
  });

  it('rejects a tool_version that is not semver and a tier outside the three', () => {
    expect(scalpel.detect({ ...(ok as object), tool_version: 'v3' }).match).toBe(false);
    expect(scalpel.detect({ ...(ok as object), tier: 'gold' }).match).toBe(false);
  });

  it('uses the caller request id, else generates one', () => {
    const a = scalpel.encode({ ok: true, data: 1 }, { requestId: 'caller-1' }).value as {
      request_id: string;
    };
    const b = scalpel.encode({ ok: true, data: 1 }).value as { request_id: string };
    expect(a.request_id).toBe('caller-1');
    expect(b.request_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('never puts code contents into an error response', () => {
    const encoded = scalpel.encode({
      ok: false,
      data: null,
      error: {
        code: 'INVALID_ARGUMENT',
        message: 'bad',
        retriable: false,
        details: { source: 'def f(): pass', line: 3 },
      },
    });
    expect(JSON.stringify(encoded.value)).not.toContain('def f()');
    expect(encoded.value).toMatchObject({
      error: { error_code: 'invalid_argument', error_details: { line: 3 } },
    });
    expect(encoded.losses).toEqual([
      { path: '/error/details/source', reason: 'withheld: error responses never include code contents' },
    ]);
  });
});

describe('hosted-v2', () => {
  const hosted = codecFor('hosted-v2');

  it('is detected and decoded from the JSON text it travels in', () => {
    const [ok] = fixtures('hosted-v2.ok');
    const text = JSON.stringify(ok?.value);
    expect(hosted.detect(text).match).toBe(true);
    expect(hosted.decode(text)).toMatchObject({ ok: true, tool: 'fill_template', data: {} });
  });

  it('carries rate metadata in rate_limit, null until limiting applies', () => {
    const value = {
      ok: true,
      tool: 't',
      schema_version: '2026-02-19',
      data: {},
      rate_limit: { limit: null, remaining: null, reset_at: null },
    };
    expect(hosted.detect(value).match).toBe(true);
    const model = hosted.decode(value);
    expect(model.meta?.rate_limit).toEqual({ limit: null, remaining: null, reset_at: null });
    expect(hosted.encode(model).value).toEqual(value);
  });

  it('takes every dated schema_version as hosted v2 and names one that is no date', () => {
    for (const version of ['2026-02-19', '2026-03-11', '2026-05-06', '2027-01-31']) {
      const value = { ok: true, tool: 't', schema_version: version, data: {} };
      expect(hosted.detect(value), version).toMatchObject({ match: true });
      expect(hosted.decode(value).version).toBe(version);
      // Encoding the decoded model writes the version it came with.
      expect(hosted.encode(hosted.decode(value)).value).toMatchObject({ schema_version: version });
    }
    const detection = hosted.detect({ ok: true, tool: 't', schema_version: '2026-13-01', data: {} });
    expect(detection).toMatchObject({ match: false, near: true });
    expect(JSON.stringify(detection)).toContain('/schema_version must match pattern');
    expect(hosted.claims({ ok: true, tool: 't', schema_version: 'v2', data: {} })).toBe(false);
  });

  it('puts upgrade hints in error.details', () => {
    const hint = { feature: 'bulk', tier: 'pro', reason: 'Pro only' };
    const encoded = hosted.encode({
      ok: false,
      data: null,
      tool: 't',
      error: { code: 'UPGRADE_REQUIRED', message: 'upgrade', retriable: false },
      meta: { upgrade_hints: [hint] },
    });
    expect(encoded.value).toMatchObject({ error: { details: { upgrade_hints: [hint] } } });
    expect(hosted.decode(encoded.value).meta?.upgrade_hints).toEqual([hint]);
  });
});

describe('a11y-v0.1', () => {
  const a11y = codecFor('a11y-v0.1');

  it('accepts the suite fixtures ids (underscores) and generates ids of the strict pattern', () => {
    const [ok] = fixtures('a11y-v0.1.ok');
    expect(a11y.detect(ok?.value).match).toBe(true);
    const encoded = a11y.encode({ ok: true, tool: 'a11y.evidence', data: {} }).value as {
      mcp: { request_id: string };
    };
    expect(encoded.mcp.request_id).toMatch(/^req_[a-zA-Z0-9]+$/);
  });

  it('carries fix as error.details.fix', () => {
    const [failed] = fixtures('a11y-v0.1.error');
    expect(a11y.decode(failed?.value).error?.details).toHaveProperty('fix');
  });

  it('reports a payload that is not an object', () => {
    const encoded = a11y.encode({ ok: true, tool: 't', data: 'text' });
    expect(encoded.value).toMatchObject({ result: { value: 'text' } });
    expect(encoded.losses.map((loss) => loss.path)).toEqual(['/data']);
  });
});

describe('jsonrpc-request', () => {
  const request = codecFor('jsonrpc-request');
  const [example] = fixtures('jsonrpc-request');

  it('detects the request envelope and refuses to treat it as a result', () => {
    expect(request.detect(example?.value).match).toBe(true);
    expect(() => request.decode(example?.value)).toThrow(expect.objectContaining({ code: 'NOT_A_RESULT' }));
    expect(() => request.encode({ ok: true, data: null })).toThrow(
      expect.objectContaining({ code: 'NOT_A_RESULT' }),
    );
  });

  it('gives INVALID_INPUT with a pointer for each deviation', () => {
    const base = example?.value as Record<string, unknown>;
    const cases: [unknown, string][] = [
      [{ ...base, method: undefined }, ''],
      [{ ...base, jsonrpc: '1.0' }, '/jsonrpc'],
      [{ ...base, params: [] }, '/params'],
      [{ ...base, params: { tool: 'search', input: {} } }, '/params/tool'],
      [{ ...base, params: { tool: 'mcp.tool:search', input: 'q' } }, '/params/input'],
    ];
    for (const [value, pointer] of cases) {
      const clean = JSON.parse(JSON.stringify(value));
      expect(() => parseRequestEnvelope(clean)).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT', details: expect.objectContaining({ pointer }) }),
      );
    }
    expect(parseRequestEnvelope(base)).toEqual(base);
  });
});
