import { describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../../src/canonical/canonical-bytes.ts';
import { canonicalize } from '../../../src/canonical/canonicalize.ts';
import { MAX_NESTING_DEPTH } from '../../../src/canonical/json-value.ts';
import { EnvelopeError } from '../../../src/errors/index.ts';

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(EnvelopeError);
    return (error as EnvelopeError).code;
  }
  return undefined;
}

describe('canonicalize: numbers (ECMAScript Number serialization, RFC 8785 section 3.2.2.3)', () => {
  it.each([
    [0, '0'],
    [-0, '0'],
    [1.0, '1'],
    [1e21, '1e+21'],
    [1e20, '100000000000000000000'],
    [5e-324, '5e-324'],
    [-5e-324, '-5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [9007199254740992, '9007199254740992'],
    [0.000001, '0.000001'],
    [1e-7, '1e-7'],
    [333333333.3333333, '333333333.3333333'],
    [-1.5, '-1.5'],
    [4.5, '4.5'],
    [0.1 + 0.2, '0.30000000000000004'],
  ])('%s serializes as %s', (value, text) => {
    expect(canonicalize(value)).toBe(text);
    expect(canonicalize([value])).toBe(`[${text}]`);
  });

  // Rows of RFC 8785 Appendix B (IEEE 754 hex -> expected JSON text).
  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('IEEE 754 %s serializes as %s', (hex, text) => {
    const value = Buffer.from(hex, 'hex').readDoubleBE(0);
    expect(canonicalize(value)).toBe(text);
  });

  it.each([
    [Number.NaN, 'JSON_NON_FINITE_NUMBER'],
    [Number.POSITIVE_INFINITY, 'JSON_NON_FINITE_NUMBER'],
    [Number.NEGATIVE_INFINITY, 'JSON_NON_FINITE_NUMBER'],
  ])('rejects %s with a stable code and a pointer', (value, code) => {
    expect(codeOf(() => canonicalize(value))).toBe(code);
    try {
      canonicalize({ a: [1, { b: value }] });
      expect.unreachable();
    } catch (error) {
      expect((error as EnvelopeError).code).toBe(code);
      expect((error as EnvelopeError).details?.pointer).toBe('/a/1/b');
    }
  });
});

describe('canonicalize: member order by UTF-16 code units', () => {
  it('sorts astral characters by their surrogates, not by code point', () => {
    // U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FB33 though its code point is larger.
    const text = canonicalize({ '\ufb33': 1, '\u{1f600}': 2, '\u20ac': 3 });
    expect(text).toBe('{"€":3,"😀":2,"דּ":1}');
  });

  it('orders digit-leading keys as strings, not as array indices', () => {
    expect(canonicalize({ b: 1, '10': 2, '2': 3, a: 4, '1': 5 })).toBe('{"1":5,"10":2,"2":3,"a":4,"b":1}');
  });

  it('orders nested objects and leaves arrays in place', () => {
    expect(canonicalize({ z: [{ y: 1, x: 2 }, 3], a: { d: null, c: true } })).toBe(
      '{"a":{"c":true,"d":null},"z":[{"x":2,"y":1},3]}',
    );
  });

  it('sorts more than a handful of keys correctly', () => {
    const keys = Array.from({ length: 40 }, (_, i) => `k${String.fromCharCode(0x7a - (i % 26))}${i}`);
    const object = Object.fromEntries(keys.map((key) => [key, key]));
    const text = canonicalize(object);
    expect(Object.keys(JSON.parse(text))).toEqual([...keys].sort());
  });

  it('omits members whose value is undefined, as JSON.stringify does', () => {
    expect(canonicalize({ b: undefined, a: 1 })).toBe('{"a":1}');
  });
});

describe('canonicalize: strings', () => {
  it('escapes exactly what RFC 8785 escapes', () => {
    expect(canonicalize('\u0000\u0001\u001f\b\t\n\f\r"\\/\u007f\u2028é😀')).toBe(
      '"\\u0000\\u0001\\u001f\\b\\t\\n\\f\\r\\"\\\\/\u007f\u2028é😀"',
    );
  });

  it('rejects a lone surrogate in a value with JSON_LONE_SURROGATE and its pointer', () => {
    try {
      canonicalize({ list: ['ok', 'bad\ud800'] });
      expect.unreachable();
    } catch (error) {
      expect((error as EnvelopeError).code).toBe('JSON_LONE_SURROGATE');
      expect((error as EnvelopeError).details?.pointer).toBe('/list/1');
    }
    expect(codeOf(() => canonicalize('\udc00'))).toBe('JSON_LONE_SURROGATE');
  });

  it('rejects a lone surrogate in a member name', () => {
    expect(codeOf(() => canonicalize({ 'x\udfff': 1 }))).toBe('JSON_LONE_SURROGATE');
    expect(codeOf(() => canonicalize({ '1\udfff': 1 }))).toBe('JSON_LONE_SURROGATE');
  });

  it('keeps a literal backslash-u-d text that is not a surrogate escape', () => {
    expect(canonicalize('\\ud800')).toBe('"\\\\ud800"');
  });
});

describe('canonicalize: unsupported values', () => {
  it.each([
    ['undefined', undefined],
    ['a function', () => 1],
    ['a symbol', Symbol('s')],
    ['a bigint', 1n],
    ['a Date', new Date(0)],
    ['a Map', new Map()],
    ['an array hole', [1, undefined]],
  ])('rejects %s with JSON_UNSUPPORTED_VALUE', (_name, value) => {
    expect(codeOf(() => canonicalize(value))).toBe('JSON_UNSUPPORTED_VALUE');
  });

  it('rejects nesting beyond the limit with JSON_TOO_DEEP', () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_NESTING_DEPTH + 5; i++) deep = [deep];
    expect(codeOf(() => canonicalize(deep))).toBe('JSON_TOO_DEEP');
    let ok: unknown = 1;
    for (let i = 0; i < MAX_NESTING_DEPTH - 1; i++) ok = [ok];
    expect(canonicalize(ok)).toMatch(/^\[+1\]+$/);
  });

  it('accepts objects with a null prototype', () => {
    const object = Object.create(null) as Record<string, unknown>;
    object.b = 1;
    object.a = 2;
    expect(canonicalize(object)).toBe('{"a":2,"b":1}');
  });
});

describe('canonicalBytes', () => {
  it('is the UTF-8 encoding of the canonical text', () => {
    expect(canonicalBytes({ é: '€' }).toString('hex')).toBe(Buffer.from('{"é":"€"}', 'utf8').toString('hex'));
  });
});
