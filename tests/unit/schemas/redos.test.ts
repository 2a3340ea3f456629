import { describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { MAX_SCHEMA_PATTERN_CHARS, SchemaRegistry } from '../../../src/schemas/registry.ts';

const stringWith = (pattern: string) => ({ type: 'string', pattern });

function refusal(schema: Record<string, unknown>): EnvelopeError {
  try {
    new SchemaRegistry().validatorForSchema(schema);
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
  throw new Error('the schema compiled');
}

describe('patterns of schemas from outside', () => {
  it('matches a pattern with nested quantifiers in linear time', () => {
    const registry = new SchemaRegistry();
    // `^(a+)+$` against 40 a's and a mismatch backtracks for hours on V8's engine.
    const validate = registry.validatorForSchema(stringWith('^(a+)+$'));
    expect(validate(`${'a'.repeat(40)}!`)).toMatchObject({ valid: false, issues: [{ keyword: 'pattern' }] });
    expect(validate('a'.repeat(40)).valid).toBe(true);
    const names = registry.validatorForSchema({
      type: 'object',
      patternProperties: { '^(a|a)*$': { type: 'number' } },
    });
    expect(names({ [`${'a'.repeat(40)}`]: 'x' }).valid).toBe(false);
    expect(names({ [`${'a'.repeat(40)}!`]: 'x' }).valid).toBe(true);
    // Ordinary patterns keep their ECMAScript meaning, each its own within one schema.
    const cases: [string, string, boolean][] = [
      ['^[a-z]+$', 'abc', true],
      ['^[a-z]+$', 'abC', false],
      ['^\\d{3}-\\d{4}$', '555-1234', true],
      ['^\\p{L}+$', 'héllo', true],
      ['^(?<year>\\d{4})$', '2026', true],
      ['b', 'abc', true],
    ];
    for (const [pattern, text, valid] of cases) {
      expect(registry.validatorForSchema(stringWith(pattern))(text).valid, `${pattern} on ${text}`).toBe(
        valid,
      );
    }
    const pair = registry.validatorForSchema({
      type: 'object',
      properties: { a: stringWith('^a$'), b: stringWith('^b$') },
    });
    expect(pair({ a: 'a', b: 'b' }).valid).toBe(true);
    expect(pair({ a: 'b', b: 'a' }).valid).toBe(false);
  });

  it('refuses a pattern that only backtracking can run (backreference, lookahead)', () => {
    for (const pattern of ['^(a+)\\1$', '^(?=.*[A-Z]).+$']) {
      const error = refusal(stringWith(pattern));
      expect(error.code).toBe('SCHEMA_INVALID');
      expect(error.details).toMatchObject({ reason: 'pattern_unsafe', pattern });
    }
  });

  it('refuses a pattern longer than the bound', () => {
    const error = refusal(stringWith('a'.repeat(MAX_SCHEMA_PATTERN_CHARS + 1)));
    expect(error.code).toBe('SCHEMA_INVALID');
    expect(error.details).toMatchObject({
      reason: 'pattern_too_long',
      max_pattern_chars: MAX_SCHEMA_PATTERN_CHARS,
    });
  });
});
