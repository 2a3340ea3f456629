import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../../src/canonical/canonicalize.ts';
import { digestValue } from '../../../src/canonical/digest.ts';
import {
  isRawNumber,
  parseJson,
  parseJsonLossless,
  pathBeyondDepth,
  plainJson,
} from '../../../src/canonical/index.ts';
import { mayHaveInexactNumbers } from '../../../src/canonical/json-text.ts';
import { isJsonObject, MAX_NESTING_DEPTH } from '../../../src/canonical/json-value.ts';
import { convert, normalize } from '../../../src/envelope/convert.ts';
import { failure } from '../../support/failure.ts';

const raw = (text: string) => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);

/** Spellings a double does not give back, and some it does. */
const SPELLINGS = [
  '12345678901234567890',
  '-12345678901234567890',
  '9007199254740993',
  '9007199254740992',
  '123456789012345678901234567890',
  '1.0',
  '-1.0',
  '0.10',
  '1.50',
  '100.000',
  '1e3',
  '1E3',
  '1e+3',
  '1e-3',
  '1.5e-7',
  '1e21',
  '1e+21',
  '-0',
  '-0.0',
  '0.0',
  '0e0',
  '0.0000001',
  '0.000001',
  '0.1000000000000001',
  '12345678.12345678',
  '3.141592653589793238462643383279',
  '0',
  '1',
  '-1',
  '0.5',
  '123456789012345',
  '1.05',
  '100',
];

describe('parseJsonLossless', () => {
  it.each(SPELLINGS)('writes %s back as written, alone and inside a payload', (spelling) => {
    for (const source of [
      spelling,
      `[${spelling}]`,
      `{"a":${spelling},"b":[1,"x",{"c":${spelling}}],"s":"${spelling}"}`,
    ]) {
      const { value, lossless } = parseJsonLossless(source);
      expect(JSON.stringify(lossless)).toBe(source);
      expect(value).toEqual(parseJson(source));
    }
  });

  it('writes pretty-printed text back as its compact form, numbers untouched', () => {
    const source =
      '{\n  "id": 12345678901234567890,\n  "x": [1.0, 2, -0, 1e3],\n  "__proto__": {"n": 0.10}\n}';
    const { value, lossless } = parseJsonLossless(source);
    expect(JSON.stringify(lossless)).toBe(
      '{"id":12345678901234567890,"x":[1.0,2,-0,1e3],"__proto__":{"n":0.10}}',
    );
    expect(Object.getPrototypeOf(lossless)).toBe(Object.prototype);
    expect(Object.hasOwn(lossless as object, '__proto__')).toBe(true);
    expect(value).toEqual(parseJson(source));
  });

  it('returns the parsed value itself when no number needs keeping (the fast path)', () => {
    const source =
      '{"a":[1,2.5,-3,"1.0","1e3","-0", "x 1.0 1e3 -0 12345678901234567890"],"b":{"c":123456789012345},"d":-0.5}';
    expect(mayHaveInexactNumbers(source)).toBe(false);
    const { value, lossless } = parseJsonLossless(source);
    expect(lossless).toBe(value);
    expect(value).toEqual(parseJson(source));
  });

  it('returns the parsed value itself when every number it suspected survives after all', () => {
    const source = '{"a":1e+21,"b":[1.5e-7,-1e-7]}';
    expect(mayHaveInexactNumbers(source)).toBe(true);
    const { value, lossless } = parseJsonLossless(source);
    expect(lossless).toBe(value);
  });

  it('shares every subtree without a kept number with the plain value', () => {
    const { value, lossless } = parseJsonLossless('{"plain":{"a":[1,2]},"big":{"n":12345678901234567890}}');
    const plain = value as Record<string, unknown>;
    const kept = lossless as Record<string, Record<string, unknown>>;
    expect(kept.plain).toBe(plain.plain);
    expect(kept).not.toBe(plain);
    expect(isRawNumber(kept.big?.n)).toBe(true);
    expect((plain.big as Record<string, unknown>).n).toBe(12345678901234567000);
  });

  it('applies parseJson’s checks and errors', () => {
    expect(failure(() => parseJsonLossless('[1e400]')).code).toBe('JSON_NON_FINITE_NUMBER');
    expect(failure(() => parseJsonLossless('{"a":1.0,"a":2}')).code).toBe('JSON_DUPLICATE_KEY');
    expect(failure(() => parseJsonLossless('[1.0,]')).code).toBe('JSON_MALFORMED');
    const deep = `${'['.repeat(200_000)}1.0${']'.repeat(200_000)}`;
    expect(failure(() => parseJsonLossless(deep)).code).toBe('JSON_TOO_DEEP');
    const limit = `${'['.repeat(MAX_NESTING_DEPTH)}1.0${']'.repeat(MAX_NESTING_DEPTH)}`;
    expect(JSON.stringify(parseJsonLossless(limit).lossless)).toBe(limit);
  });

  it('drops a byte order mark as parseJson does', () => {
    const { value, lossless } = parseJsonLossless('\ufeff[1.0]');
    expect(value).toEqual([1]);
    expect(JSON.stringify(lossless)).toBe('[1.0]');
  });

  it('gives back every generated number spelling (the fast path misses none)', () => {
    const digits = (min: number, max: number) =>
      fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
    const integer = fc.oneof(
      fc.constant('0'),
      fc.tuple(fc.constantFrom(...'123456789'), digits(0, 29)).map(([head, tail]) => head + tail),
    );
    const spelling = fc
      .tuple(
        fc.boolean(),
        integer,
        fc.option(digits(1, 20), { nil: undefined }),
        fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 3)), {
          nil: undefined,
        }),
      )
      .map(
        ([negative, whole, fraction, exponent]) =>
          `${negative ? '-' : ''}${whole}${fraction === undefined ? '' : `.${fraction}`}${exponent ? exponent.join('') : ''}`,
      )
      .filter((text) => Number.isFinite(Number(text)));
    fc.assert(
      fc.property(fc.array(spelling, { minLength: 1, maxLength: 6 }), (numbers) => {
        const source = `{"n":[${numbers.join(',')}]}`;
        expect(JSON.stringify(parseJsonLossless(source).lossless)).toBe(source);
        for (const text of numbers) {
          if (!mayHaveInexactNumbers(text)) expect(String(Number(text))).toBe(text);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('raw numbers in the data model', () => {
  it('are not JSON objects, and are no deeper than the numbers they are', () => {
    expect(isJsonObject(raw('1.0'))).toBe(false);
    expect(isRawNumber(raw('1.0'))).toBe(true);
    expect(isRawNumber({ rawJSON: '1.0' })).toBe(false);
    let nested: unknown = raw('1.0');
    for (let i = 0; i < MAX_NESTING_DEPTH; i++) nested = [nested];
    expect(pathBeyondDepth(nested)).toBeUndefined();
    expect(pathBeyondDepth([nested])).toHaveLength(MAX_NESTING_DEPTH);
  });

  it('plainJson gives the plain value back, sharing what has no raw number', () => {
    const source = '{"a":{"b":[1]},"n":[12345678901234567890,1.0],"__proto__":{"x":-0}}';
    const { value, lossless } = parseJsonLossless(source);
    const plain = plainJson(lossless) as Record<string, unknown>;
    expect(plain).toEqual(value);
    const own = Object.getOwnPropertyDescriptor(plain, '__proto__')?.value as Record<string, unknown>;
    expect(Object.is(own.x, -0)).toBe(true);
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(plain.a).toBe((lossless as Record<string, unknown>).a);
    expect(plainJson(value)).toBe(value);
  });
});

describe('canonicalize of raw numbers (RFC 8785, but an integer beyond 2^53 keeps its digits)', () => {
  const documents = [
    '{"x":1.0,"y":[1e3,-0,0.10,1E-7]}',
    '{"10":1.0,"9":[2],"a":{"1":-0.0}}',
    '[1.0,{"z":1e21,"a":0.0000001}]',
    '1.0',
    // The RFC's own example: a decimal with more digits than a double holds is written as its double.
    '[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]',
  ];

  it.each(documents)('canonicalizes %s exactly as the plain value', (source) => {
    const { value, lossless } = parseJsonLossless(source);
    expect(lossless).not.toBe(value);
    expect(canonicalize(lossless)).toBe(canonicalize(value));
    expect(digestValue(lossless, 'sha256')).toEqual(digestValue(value, 'sha256'));
  });

  it('writes an integer beyond 2^53 with its digits, and two spellings of one value alike', () => {
    expect(canonicalize(parseJsonLossless('{"b":12345678901234567890,"a":1.0}').lossless)).toBe(
      '{"a":1,"b":12345678901234567890}',
    );
    // Two integers that round to one double digest apart: a signature covers the digits a client reads.
    const [odd, even] = ['9007199254740993', '9007199254740992'].map(
      (text) => digestValue(parseJsonLossless(`{"id":${text}}`).lossless).value,
    );
    expect(odd).not.toBe(even);
    // Two spellings of one double (and one value) digest alike.
    const spellings = ['1', '1.0', '1e0', '10e-1'].map(
      (text) => digestValue(parseJsonLossless(`{"n":${text}}`).lossless).value,
    );
    expect(new Set(spellings).size).toBe(1);
  });

  it('refuses a raw number beyond double range, as it refuses Infinity', () => {
    for (const value of [
      raw('1e400'),
      [raw('-1e400')],
      { a: { '1': raw('1e400') } },
      { b: [raw('1e999')] },
    ]) {
      const error = failure(() => canonicalize(value));
      expect(error.code).toBe('JSON_NON_FINITE_NUMBER');
    }
    expect(failure(() => canonicalize({ a: [raw('1e400')] })).details?.pointer).toBe('/a/0');
  });

  it('still refuses other null-prototype objects’ lookalikes and class instances', () => {
    expect(canonicalize(Object.assign(Object.create(null), { rawJSON: '1' }))).toBe('{"rawJSON":"1"}');
    expect(failure(() => canonicalize({ a: new Date(0) })).code).toBe('JSON_UNSUPPORTED_VALUE');
  });
});

describe('convert and normalize keep payload numbers', () => {
  const provText = '{"schema_version":"mcp.envelope.v0.1","result":{"id":12345678901234567890,"x":1.0}}';

  it('from JSON text', () => {
    const converted = convert(provText, 'hosted-v2', { tool: 't' });
    expect(JSON.stringify(converted.value)).toBe(
      '{"ok":true,"tool":"t","schema_version":"2026-02-19","data":{"id":12345678901234567890,"x":1.0}}',
    );
    expect(JSON.stringify(normalize(provText).model.data)).toBe('{"id":12345678901234567890,"x":1.0}');
  });

  it('from a parsed value with its lossless twin', () => {
    const { value, lossless } = parseJsonLossless(provText);
    const converted = convert(value, 'scalpel-v1', { tool: 't', requestId: 'r1', lossless });
    expect(JSON.stringify(converted.value)).toContain('"data":{"id":12345678901234567890,"x":1.0}');
    const legacy = parseJsonLossless('[12345678901234567890,{"a":1.0}]');
    const wrapped = convert(legacy.value, 'prov-v0.1', { lossless: legacy.lossless });
    expect(JSON.stringify(wrapped.value)).toBe(
      '{"schema_version":"mcp.envelope.v0.1","result":[12345678901234567890,{"a":1.0}]}',
    );
    const a11y = convert(parseJsonLossless('12345678901234567890').value, 'a11y-v0.1', {
      tool: 't',
      requestId: 'req_1',
      lossless: parseJsonLossless('12345678901234567890').lossless,
    });
    expect(JSON.stringify(a11y.value)).toContain('"result":{"value":12345678901234567890}');
  });

  it('returns text already in the target dialect unchanged', () => {
    const pretty =
      '{\n  "ok": true,\n  "tool": "t",\n  "schema_version": "2026-02-19",\n  "data": {"n": 1.0}\n}';
    expect(convert(pretty, 'hosted-v2').value).toBe(pretty);
  });
});

describe('mayHaveInexactNumbers on text that is not JSON', () => {
  it('answers for an unterminated string, and for any text, instead of scanning forever', () => {
    expect(mayHaveInexactNumbers('rJ7AYdEM"g')).toBe(false);
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        expect(typeof mayHaveInexactNumbers(text)).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
  });
});
