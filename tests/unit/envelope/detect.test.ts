import { describe, expect, it } from 'vitest';
import { convert, normalize } from '../../../src/envelope/convert.ts';
import { detectDialect, requireDialect } from '../../../src/envelope/detect.ts';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { fixtures } from '../../support/dialect-fixtures.ts';

const hosted = fixtures('hosted-v2.ok')[0]?.value as Record<string, unknown>;
const prov = fixtures('prov-v0.1.wrapped-object')[0]?.value as Record<string, unknown>;

describe('detectDialect', () => {
  it('names every seed example by its dialect', () => {
    for (const [prefix, dialect] of [
      ['prov-v0.1.', 'prov-v0.1'],
      ['scalpel-v1.', 'scalpel-v1'],
      ['hosted-v2.', 'hosted-v2'],
      ['a11y-v0.1.', 'a11y-v0.1'],
      ['jsonrpc-request', 'jsonrpc-request'],
      ['legacy.', 'legacy'],
    ] as const) {
      for (const { name, value } of fixtures(prefix)) {
        expect({ name, dialect: detectDialect(value).dialect }).toEqual({ name, dialect });
      }
    }
  });

  it('detects an envelope held in JSON text as that envelope, and other text as legacy text', () => {
    expect(detectDialect(JSON.stringify(hosted))).toMatchObject({ dialect: 'hosted-v2', text: true });
    expect(detectDialect('{"not": "an envelope"}')).toMatchObject({ dialect: 'legacy', text: false });
    expect(detectDialect('{ broken json')).toMatchObject({ dialect: 'legacy' });
    expect(detectDialect('plain words')).toMatchObject({ dialect: 'legacy', value: 'plain words' });
  });

  it('reports an extra top-level member of the closed prov-v0.1 as a near miss, not as legacy', () => {
    const report = detectDialect({ ...prov, extra: 1 });
    expect(report).toMatchObject({ dialect: null, near: ['prov-v0.1'] });
    expect(report.reasons.join()).toContain('/extra');
    expect(() => requireDialect(report)).toThrow(expect.objectContaining({ code: 'ENVELOPE_INVALID' }));
  });

  it('keeps members a hosted server adds, and names the version each envelope carries', () => {
    const report = detectDialect({ ...hosted, schema_version: '2026-05-06', request_id: 'r1' });
    expect(report).toMatchObject({ dialect: 'hosted-v2', version: '2026-05-06' });
    expect(normalize(report.value).model).toMatchObject({
      version: '2026-05-06',
      extensions: { request_id: 'r1' },
    });
    expect(detectDialect(prov)).toMatchObject({ dialect: 'prov-v0.1', version: 'mcp.envelope.v0.1' });
    expect(detectDialect({ plain: true })).toMatchObject({ dialect: 'legacy', version: null });
  });

  it('gives a clear answer for a value with the loose shapes of two dialects', () => {
    const { tool: _tool, ...hostedWithoutTool } = hosted;
    const both = {
      ...hostedWithoutTool,
      mcp: { envelope: 'mcp.envelope_v0_1', request_id: 'not a request id', tool: 't', ok: true },
      result: {},
    };
    const report = detectDialect(both);
    expect(report.dialect).toBeNull();
    expect(report.near.sort()).toEqual(['a11y-v0.1', 'hosted-v2']);
    expect(report.reasons[0]).toContain('validates as neither');
  });

  it('refuses envelopes nested in envelopes, as values and as text in text', () => {
    const inner = JSON.stringify(prov);
    for (const outer of [
      { ...hosted, data: prov },
      { ...hosted, data: inner },
      { schema_version: 'mcp.envelope.v0.1', result: JSON.stringify({ ...hosted, data: inner }) },
      JSON.stringify({ ...hosted, data: JSON.stringify(hosted) }),
    ]) {
      const report = detectDialect(outer);
      expect(report.dialect).toBeNull();
      expect(report.reasons.join()).toContain('double-wrapped');
      expect(() => convert(outer, 'scalpel-v1')).toThrow(
        expect.objectContaining({ code: 'ENVELOPE_INVALID' }),
      );
    }
  });

  it('handles a 10 MB payload in every dialect without trouble', () => {
    const big = { blob: 'x'.repeat(10 * 1024 * 1024) };
    for (const to of ['prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'] as const) {
      const converted = convert(big, to, { tool: 't' });
      expect(detectDialect(converted.value).dialect).toBe(to);
      expect(normalize(converted.value).model.data).toBe(big);
    }
    const text = JSON.stringify({ ...hosted, data: big });
    expect(detectDialect(text).dialect).toBe('hosted-v2');
    expect(detectDialect(`{${'x'.repeat(10 * 1024 * 1024)}`).dialect).toBe('legacy');
  });

  it('throws a stable code for undefined, and for conversions that involve a request', () => {
    expect(() => detectDialect(undefined)).toThrow(EnvelopeError);
    const [request] = fixtures('jsonrpc-request');
    expect(() => convert(request?.value, 'legacy')).toThrow(
      expect.objectContaining({ code: 'NOT_A_RESULT' }),
    );
    expect(() => convert(prov, 'jsonrpc-request')).toThrow(expect.objectContaining({ code: 'NOT_A_RESULT' }));
    expect(() => convert(prov, 'nope' as never)).toThrow(expect.objectContaining({ code: 'USAGE_ERROR' }));
  });

  it('passes a value already in the target dialect through unchanged, text included', () => {
    const text = JSON.stringify(hosted);
    expect(convert(text, 'hosted-v2')).toEqual({ from: 'hosted-v2', value: text, losses: [] });
  });
});
