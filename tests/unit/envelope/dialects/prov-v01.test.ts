import { describe, expect, it } from 'vitest';
import { codecFor } from '../../../../src/envelope/dialects/index.ts';
import { UPGRADE_HINT_WARNING } from '../../../../src/envelope/dialects/prov-v01.ts';
import { EnvelopeError } from '../../../../src/errors/index.ts';
import { fixtures } from '../../../support/dialect-fixtures.ts';

const prov = codecFor('prov-v0.1');

describe('prov-v0.1 codec', () => {
  for (const { name, value } of fixtures('prov-v0.1.')) {
    it(`detects, decodes and re-encodes ${name} unchanged`, () => {
      expect(prov.detect(value)).toEqual({ dialect: 'prov-v0.1', match: true });
      const encoded = prov.encode(prov.decode(value));
      expect(encoded.losses).toEqual([]);
      expect(encoded.value).toEqual(value);
    });
  }

  it('decodes the seed error example into a failed result with the adapter code', () => {
    const [error] = fixtures('prov-v0.1.error');
    const model = prov.decode(error?.value);
    expect(model.ok).toBe(false);
    expect(model.decodedFrom).toBe('prov-v0.1');
    expect(model.error).toEqual({
      code: 'ADAPTER.EXECUTION.FAILED',
      message: 'Tool execution failed with exit code 2.',
      retriable: false,
      details: { exit_code: 2 },
    });
  });

  it('is detected in JSON text too', () => {
    const [first] = fixtures('prov-v0.1.wrapped-object');
    expect(prov.detect(JSON.stringify(first?.value)).match).toBe(true);
  });

  it('reports another envelope version, extra members and double wraps as near misses, a payload version as no claim', () => {
    expect(prov.detect({ schema_version: 'assist.response.v0.1', result: 1 })).toMatchObject({ near: false });
    const wrongVersion = prov.detect({ schema_version: 'mcp.envelope.v0.2', result: 1 });
    expect(wrongVersion).toMatchObject({ match: false, near: true });
    expect(JSON.stringify(wrongVersion)).toContain('/schema_version must equal');
    const extra = prov.detect({ schema_version: 'mcp.envelope.v0.1', result: 1, extra: true });
    expect(extra).toMatchObject({ match: false, near: true });
    expect(JSON.stringify(extra)).toContain('/extra');
    const inner = { schema_version: 'mcp.envelope.v0.1', result: 1 };
    const doubled = prov.detect({ schema_version: 'mcp.envelope.v0.1', result: inner });
    expect(doubled).toMatchObject({ match: false, near: true });
    expect(JSON.stringify(doubled)).toContain('double-wrapped');
  });

  it('wraps a legacy model through the compatibility policy, adding the payload schema hint', () => {
    const encoded = prov.encode({ ok: true, data: { schema_version: 'assist.response.v0.1' } });
    expect(encoded.value).toEqual({
      schema_version: 'mcp.envelope.v0.1',
      result: { schema_version: 'assist.response.v0.1' },
      meta: { schema_hints: { result: 'assist.response.v0.1' } },
    });
  });

  it('carries upgrade hints as warnings and reports what it cannot carry', () => {
    const encoded = prov.encode({
      ok: true,
      tool: 'scan',
      data: null,
      meta: { tier: 'community', upgrade_hints: [{ feature: 'deep', tier: 'pro', reason: 'Pro only' }] },
    });
    expect(encoded.value).toMatchObject({
      warnings: [
        { code: UPGRADE_HINT_WARNING, message: 'Pro only', details: { feature: 'deep', tier: 'pro' } },
      ],
    });
    expect(encoded.losses.map((loss) => loss.path).sort()).toEqual(['/meta/tier', '/tool']);
    expect(prov.decode(encoded.value).meta?.upgrade_hints).toEqual([
      { feature: 'deep', tier: 'pro', reason: 'Pro only' },
    ]);
  });

  it('refuses to wrap an envelope again', () => {
    const inner = { schema_version: 'mcp.envelope.v0.1', result: 1 };
    expect(() => prov.encode({ ok: true, data: inner })).toThrow(EnvelopeError);
  });
});

describe('legacy codec', () => {
  const legacy = codecFor('legacy');
  for (const { name, value } of fixtures('legacy.')) {
    it(`keeps ${name} unchanged`, () => {
      expect(legacy.detect(value).match).toBe(true);
      expect(legacy.encode(legacy.decode(value))).toEqual({ value, losses: [] });
    });
  }

  it('does not claim a value that claims an envelope dialect', () => {
    const detection = legacy.detect({ schema_version: 'mcp.envelope.v0.1', result: 1, extra: 1 });
    expect(detection.match).toBe(false);
    expect(() => legacy.decode({ schema_version: 'mcp.envelope.v0.1' })).toThrow(/prov-v0.1/);
  });

  it('treats text that is not JSON as a string payload', () => {
    expect(legacy.decode('plain words {')).toMatchObject({ ok: true, data: 'plain words {' });
  });
});
