import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../../src/canonical/canonicalize.ts';
import { parseJson } from '../../../src/canonical/json-text.ts';

// Examples from RFC 8785 sections 3.2.2 and 3.2.3.
describe('RFC 8785 examples', () => {
  it('serializes the section 3.2.2 example exactly', () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    expect(canonicalize(parseJson(input))).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  it('orders members by UTF-16 code units (section 3.2.3)', () => {
    const input = String.raw`{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`;
    const order = Object.values(JSON.parse(canonicalize(parseJson(input))) as Record<string, string>);
    // JSON.parse puts the integer-like key "1" first again, so read the order from the text.
    const text = canonicalize(parseJson(input));
    const positions = [
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ].map((name) => text.indexOf(name));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(order).toHaveLength(7);
  });
});
