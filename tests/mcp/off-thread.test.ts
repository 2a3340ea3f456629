import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/canonical/canonicalize.ts';
import { parseJsonLossless } from '../../src/canonical/json-text.ts';
import { canonicalizeOffThread, validateOffThread } from '../../src/mcp/pipeline/off-thread.ts';
import { defaultRegistry } from '../../src/schemas/registry.ts';

/**
 * The canonical form computed on a worker thread is the one computed in
 * place, refusals included; a value the worker cannot be sent (numbers kept
 * as written) is canonicalized in place.
 */

function wide(members: number): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  // Inserted out of order, with keys that start with digits (the explicit-order path) and unicode.
  for (let i = members; i > 0; i--)
    value[i % 7 === 0 ? `${i}` : `k${(i * 7919) % members}é${i}`] = { n: i / 3, s: `v${i}` };
  return value;
}

describe('canonicalizeOffThread', () => {
  it('gives what canonicalize gives, for small and large values', async () => {
    for (const value of [{}, [], { b: 1, a: [1, 'x', null, true] }, wide(20_000)]) {
      expect(await canonicalizeOffThread(value)).toBe(canonicalize(value));
    }
  });

  it('refuses what canonicalize refuses, with the same code and pointer', async () => {
    const value = { ok: 1, bad: ['fine', 'a\ud800b'] };
    const inPlace = (() => {
      try {
        canonicalize(value);
      } catch (error) {
        return error;
      }
    })();
    await expect(canonicalizeOffThread(value)).rejects.toMatchObject({
      code: 'JSON_LONE_SURROGATE',
      details: (inPlace as { details?: unknown }).details,
    });
  });

  it('canonicalizes in place a value the worker cannot be sent (numbers kept as written)', async () => {
    const { lossless: value } = parseJsonLossless('{"big": 12345678901234567890, "one": 1.0}');
    expect(await canonicalizeOffThread(value)).toBe(canonicalize(value));
    expect(await canonicalizeOffThread(value)).toBe('{"big":12345678901234567890,"one":1}');
  });
});

describe('validateOffThread', () => {
  const schema = {
    type: 'object',
    properties: { items: { type: 'array', uniqueItems: true, items: { type: 'object' } } },
    patternProperties: { '^x-': { type: 'number' } },
  };
  const inPlace = defaultRegistry().validatorForSchema(schema);

  it('gives what the default registry gives in place, valid or not', async () => {
    const items = Array.from({ length: 5000 }, (_, i) => ({ i, tag: `t${i}` }));
    for (const value of [
      { items },
      { items: [...items, { tag: 't3', i: 3 }] },
      { items: [], 'x-a': 'not a number' },
    ]) {
      expect(await validateOffThread(schema, value)).toEqual(inPlace(value));
    }
    expect((await validateOffThread(schema, { items: [...items, { tag: 't3', i: 3 }] })).valid).toBe(false);
  });
});
