import { describe, expect, it } from 'vitest';
import { decodeUtf8, parseJson, parseJsonBytes } from '../../../src/canonical/json-text.ts';
import { MAX_NESTING_DEPTH } from '../../../src/canonical/json-value.ts';
import { failure } from '../../support/failure.ts';

describe('parseJson (strict)', () => {
  it('parses ordinary JSON and drops a leading byte order mark', () => {
    expect(parseJson('\ufeff{"a":[1,"x",null,true]}')).toEqual({ a: [1, 'x', null, true] });
  });

  it.each(['', '{', '{"a":}', "{'a':1}", '[1,]', 'NaN', 'Infinity', '01', '{"a":1}x', 'undefined'])(
    'rejects malformed text %j with JSON_MALFORMED',
    (text) => {
      expect(failure(() => parseJson(text)).code).toBe('JSON_MALFORMED');
    },
  );

  it('rejects duplicate member names with the pointer of the duplicate', () => {
    const error = failure(() => parseJson('{"a":{"x":1,"b":[{"k":1,"k":2}]}}'));
    expect(error.code).toBe('JSON_DUPLICATE_KEY');
    expect(error.details).toMatchObject({ pointer: '/a/b/0/k', key: 'k' });
  });

  it('finds duplicates spelled differently (escapes)', () => {
    const error = failure(() => parseJson('{"a":1,"\\u0061":2}'));
    expect(error.code).toBe('JSON_DUPLICATE_KEY');
    expect(error.details?.pointer).toBe('/a');
  });

  it('does not count colons inside strings as members', () => {
    expect(parseJson('{"a:b":"c:d\\":e","x":"\\\\"}')).toEqual({ 'a:b': 'c:d":e', x: '\\' });
  });

  it('rejects lone surrogate escapes in values and member names', () => {
    const value = failure(() => parseJson('{"a":["\\ud800"]}'));
    expect(value.code).toBe('JSON_LONE_SURROGATE');
    expect(value.details?.pointer).toBe('/a/0');
    expect(failure(() => parseJson('{"\\udc00":1}')).code).toBe('JSON_LONE_SURROGATE');
    expect(parseJson('"\\ud83d\\ude00"')).toBe('😀');
  });

  it('rejects numbers that overflow to Infinity', () => {
    expect(failure(() => parseJson('[1e400]')).code).toBe('JSON_NON_FINITE_NUMBER');
  });

  it('enforces the nesting limit, and a custom one', () => {
    const ok = `${'['.repeat(MAX_NESTING_DEPTH)}${']'.repeat(MAX_NESTING_DEPTH)}`;
    expect(() => parseJson(ok)).not.toThrow();
    const deep = `${'['.repeat(MAX_NESTING_DEPTH + 1)}${']'.repeat(MAX_NESTING_DEPTH + 1)}`;
    expect(failure(() => parseJson(deep)).code).toBe('JSON_TOO_DEEP');
    expect(failure(() => parseJson('{"a":{"b":{}}}', { maxDepth: 2 })).code).toBe('JSON_TOO_DEEP');
  });

  it('keeps __proto__ and constructor as data without touching prototypes', () => {
    const value = parseJson('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}') as Record<
      string,
      unknown
    >;
    expect(Object.keys(value)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('UTF-8 input', () => {
  it.each([
    ['a lone continuation byte', [0x22, 0x80, 0x22]],
    ['an overlong encoding', [0x22, 0xc0, 0xaf, 0x22]],
    ['an encoded surrogate', [0x22, 0xed, 0xa0, 0x80, 0x22]],
    ['a truncated sequence', [0x22, 0xe2, 0x82]],
    ['Latin-1 text', [0x22, 0xe9, 0x22]],
  ])('rejects %s with INPUT_INVALID_UTF8', (_name, bytes) => {
    expect(failure(() => parseJsonBytes(new Uint8Array(bytes))).code).toBe('INPUT_INVALID_UTF8');
  });

  it('decodes valid UTF-8 and strips the BOM', () => {
    expect(decodeUtf8(new Uint8Array([0xef, 0xbb, 0xbf, 0x22, 0xc3, 0xa9, 0x22]))).toBe('"é"');
    expect(parseJsonBytes(Buffer.from('{"é":"😀"}'))).toEqual({ é: '😀' });
  });
});
