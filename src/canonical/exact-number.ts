import { nativeJson, type RawNumber } from './json-value.ts';

/**
 * The canonical text of a number kept as written (a RawNumber). RFC 8785
 * writes every number as ECMAScript's Number::toString writes its double, so
 * an integer beyond 2^53 (an id, a counter, a timestamp in nanoseconds) would
 * be digested as the double it rounds to: `9007199254740993` and
 * `9007199254740992` alike, and a signature would not cover the digits a
 * client reads. An integer written beyond the safe range therefore keeps its
 * digits (without a sign on zero, which JSON's grammar already rules out as a
 * leading zero); every other number is written as RFC 8785 writes its double
 * (`1.0`, `1e0` and `1` alike, and `333333333.33333329` as
 * `333333333.3333333`, as the RFC's own example has it).
 */
export function exactNumberText(raw: string): string {
  const value = Number(raw);
  if (/^-?\d+$/.test(raw) && !Number.isSafeInteger(value)) return raw;
  return String(value);
}

/** A number kept as written, in its canonical form (see exactNumberText). */
export function canonicalRawNumber(value: RawNumber): RawNumber {
  const text = exactNumberText(value.rawJSON);
  return text === value.rawJSON ? value : nativeJson.rawJSON(text);
}
