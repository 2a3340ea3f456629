import canonicalizePeer from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize, canonicalizeWithAndWithout } from '../../src/canonical/canonicalize.ts';
import { parseJson } from '../../src/canonical/json-text.ts';

/** JSON values with any well-formed Unicode in keys and strings, and doubles of every kind. */
const jsonValue = fc.jsonValue({ stringUnit: 'binary', maxDepth: 6 });

/** Also integer-like keys, which V8 enumerates first whatever their insertion order. */
const key = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.nat().map(String),
  fc.constantFrom('__proto__', 'constructor'),
);
/** An object of these members, `__proto__` included as an own member (as JSON.parse makes it). */
function objectOf(entries: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return object;
}

const mixedValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, false),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.string({ unit: 'binary' }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.uniqueArray(fc.tuple(key, tie('value')), { maxLength: 6, selector: ([name]) => name }).map(objectOf),
  ),
})).value;

/** The same value with every object's members inserted in reverse order. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(value).reverse()) {
    Object.defineProperty(out, name, {
      value: reversed((value as Record<string, unknown>)[name]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function hasNegativeZero(value: unknown): boolean {
  if (Object.is(value, -0)) return true;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(hasNegativeZero);
}

describe('canonicalize properties', () => {
  it('is idempotent: the canonical text of the parsed canonical text is itself', () => {
    fc.assert(
      fc.property(mixedValue, (value) => {
        const text = canonicalize(value);
        expect(canonicalize(parseJson(text))).toBe(text);
      }),
      { numRuns: 400 },
    );
  });

  it('canonicalizeWithAndWithout gives the texts of the object and of the object without one member', () => {
    const objectWithMember = fc
      .tuple(
        fc.uniqueArray(fc.tuple(key, mixedValue), { maxLength: 8, selector: ([name]) => name }),
        fc.nat(),
      )
      .filter(([entries]) => entries.length > 0);
    fc.assert(
      fc.property(objectWithMember, ([entries, pick]) => {
        const object = objectOf(entries);
        const member = (entries[pick % entries.length] as [string, unknown])[0];
        const rest = objectOf(entries.filter(([name]) => name !== member));
        let whole: string;
        try {
          whole = canonicalize(object);
        } catch (error) {
          // No canonical form: the split form refuses it with the same code.
          expect(() => canonicalizeWithAndWithout(object, member)).toThrow(
            expect.objectContaining({ code: (error as { code: string }).code }),
          );
          return;
        }
        const texts = canonicalizeWithAndWithout(object, member);
        expect(texts.text).toBe(whole);
        expect(texts.without).toBe(canonicalize(rest));
        expect(canonicalizeWithAndWithout(object, '\u0000absent').without).toBe(whole);
      }),
    );
  });

  it('does not depend on member insertion order', () => {
    fc.assert(
      fc.property(mixedValue, (value) => {
        expect(canonicalize(reversed(value))).toBe(canonicalize(value));
      }),
      { numRuns: 400 },
    );
  });

  it('round-trips: parse(canonicalize(x)) deep-equals x (values without -0)', () => {
    fc.assert(
      fc.property(
        mixedValue.filter((value) => !hasNegativeZero(value)),
        (value) => {
          // toEqual, not toStrictEqual: a data member named "constructor" would confuse its type check.
          const parsed = parseJson(canonicalize(value));
          expect(parsed).toEqual(value);
          expect(canonicalize(parsed)).toBe(canonicalize(value));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('is byte-identical to the canonicalize package', () => {
    fc.assert(
      fc.property(fc.oneof(jsonValue, mixedValue), (value) => {
        expect(canonicalize(value)).toBe(canonicalizePeer(value));
      }),
      { numRuns: 600 },
    );
  });

  it('is byte-identical to the canonicalize package on doubles of every magnitude', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { maxLength: 20 }),
        (numbers) => {
          expect(canonicalize(numbers)).toBe(canonicalizePeer(numbers));
        },
      ),
      { numRuns: 300 },
    );
  });
});
