import { describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { MAX_PATTERN_TESTS, SchemaRegistry, schemaDraftOf } from '../../../src/schemas/registry.ts';

/**
 * Real servers declare their schemas in the draft their generator writes: the v1
 * TypeScript SDK (zod-to-json-schema) writes draft-07, older Python tooling
 * draft-04, and MCP's default is 2020-12. Each is compiled in its own draft.
 */

const DRAFT_07_SDK_V1 = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { message: { type: 'string', description: 'Message to echo' } },
  required: ['message'],
  additionalProperties: false,
};

describe('schemas in every draft a real server uses', () => {
  it.each([
    ['http://json-schema.org/draft-04/schema#', 'draft-04'],
    ['http://json-schema.org/draft-04/schema', 'draft-04'],
    ['https://json-schema.org/draft-06/schema#', 'draft-06'],
    ['http://json-schema.org/draft-07/schema#', 'draft-07'],
    ['https://json-schema.org/draft/2019-09/schema', '2019-09'],
    ['https://json-schema.org/draft/2020-12/schema', '2020-12'],
  ] as const)('%s is %s', (uri, draft) => {
    expect(schemaDraftOf({ $schema: uri })).toBe(draft);
  });

  it('reads a schema without $schema as 2020-12, as MCP says, and an unknown one as no draft', () => {
    expect(schemaDraftOf({ type: 'object' })).toBe('2020-12');
    expect(schemaDraftOf({ $schema: 'https://example.com/my-schema' })).toBeUndefined();
  });

  it('compiles the draft-07 schema of a v1 SDK server and checks with it, the same on every call', () => {
    const registry = new SchemaRegistry();
    for (let call = 0; call < 3; call++) {
      // A fresh object each time, as a tools/list answer parsed again would give.
      const validate = registry.validatorForSchema(structuredClone(DRAFT_07_SDK_V1));
      expect(validate({ message: 'hi' }).valid).toBe(true);
      expect(validate({ message: 1 }).issues[0]).toMatchObject({ pointer: '/message' });
      expect(validate({ message: 'hi', extra: 1 }).valid).toBe(false);
    }
  });

  it('applies each draft its own keywords: draft-04 boolean exclusiveMaximum, 2019-09 dependentRequired', () => {
    const registry = new SchemaRegistry();
    const draft04 = registry.validatorForSchema({
      $schema: 'http://json-schema.org/draft-04/schema#',
      id: 'urn:same-id',
      type: 'object',
      properties: { n: { type: 'number', maximum: 10, exclusiveMaximum: true } },
    });
    expect(draft04({ n: 9 }).valid).toBe(true);
    expect(draft04({ n: 10 }).valid).toBe(false);
    const draft06 = registry.validatorForSchema({
      $schema: 'http://json-schema.org/draft-06/schema#',
      $id: 'urn:same-id',
      properties: { n: { exclusiveMaximum: 10 } },
    });
    expect(draft06({ n: 10 }).valid).toBe(false);
    const draft2019 = registry.validatorForSchema({
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      dependentRequired: { card: ['billing'] },
    });
    expect(draft2019({ card: 1 }).valid).toBe(false);
    expect(draft2019({ card: 1, billing: 2 }).valid).toBe(true);
  });

  it('refuses a schema that does not compile with the same error every time, naming why', () => {
    const registry = new SchemaRegistry();
    const broken = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'no-such-type' };
    const errors = [0, 1, 2].map(() => {
      try {
        registry.validatorForSchema(structuredClone(broken));
        return undefined;
      } catch (error) {
        return error as EnvelopeError;
      }
    });
    for (const error of errors) {
      expect(error).toBeInstanceOf(EnvelopeError);
      expect(error?.code).toBe('SCHEMA_INVALID');
      expect(error?.details).toMatchObject({ reason: 'does_not_compile', draft: 'draft-07' });
    }
    expect(() => registry.validatorForSchema({ $schema: 'urn:nothing' })).toThrow(
      /unknown JSON Schema draft/,
    );
  });

  it('never fetches a remote $ref: the schema does not compile', () => {
    const registry = new SchemaRegistry();
    expect(() =>
      registry.validatorForSchema({
        $schema: 'http://json-schema.org/draft-07/schema#',
        properties: { a: { $ref: 'https://example.com/schemas/a.json' } },
      }),
    ).toThrow(EnvelopeError);
  });

  it('checks uniqueItems in one pass, with JSON Schema equality, in every draft', () => {
    const registry = new SchemaRegistry();
    for (const $schema of [
      'http://json-schema.org/draft-07/schema#',
      'https://json-schema.org/draft/2020-12/schema',
    ]) {
      const validate = registry.validatorForSchema({ $schema, type: 'array', uniqueItems: true });
      // 40,000 objects: every pair compared took Ajv 18 s, the event loop with it.
      const items: unknown[] = Array.from({ length: 40_000 }, (_, i) => ({ id: i, tag: 'x' }));
      expect(validate(items).valid).toBe(true);
      items.push({ tag: 'x', id: 7 });
      expect(validate(items).issues[0]).toMatchObject({
        keyword: 'uniqueItems',
        params: { i: 40_000, j: 7 },
      });
      // Equal as JSON Schema says: members in any order; 1 and "1", [1] and 1 differ.
      expect(
        validate([
          { a: 1, b: [2, { c: 3 }] },
          { b: [2, { c: 3 }], a: 1 },
        ]).valid,
      ).toBe(false);
      expect(validate([1, '1', [1], { a: 1 }, null, 'null']).valid).toBe(true);
    }
  });

  it('refuses, before any pattern runs, an object too wide to check against many patternProperties', () => {
    const registry = new SchemaRegistry();
    const patternProperties = Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [`^p${i}_[a-z]+$`, { type: 'string' }]),
    );
    const validate = registry.validatorForSchema({
      type: 'object',
      properties: { m: { type: 'object', patternProperties } },
    });
    // 200 patterns against 50,000 members held the event loop for 1.9 s.
    const wide = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, 'x']));
    const refused = validate({ m: wide });
    expect(refused.valid).toBe(false);
    expect(refused.issues[0]).toMatchObject({
      keyword: 'patternProperties',
      params: { patterns: 200, max_members: MAX_PATTERN_TESTS / 200 },
    });
    // Within the budget, the patterns are checked as the schema says.
    expect(validate({ m: { p3_abc: 'x', other: 1 } }).valid).toBe(true);
    expect(validate({ m: { p3_abc: 1 } }).valid).toBe(false);
  });
});
