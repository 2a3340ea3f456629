import { describe, expect, it } from 'vitest';
import { BUNDLED_SCHEMAS, defaultRegistry, SCHEMA_IDS, SchemaRegistry } from '../../../src/schemas/index.ts';

describe('SchemaRegistry', () => {
  it('compiles every bundled schema', () => {
    const registry = new SchemaRegistry();
    for (const { schema } of BUNDLED_SCHEMAS) {
      expect(registry.has(schema.$id)).toBe(true);
      expect(typeof registry.validatorFor(schema.$id).fingerprint).toBe('string');
    }
  });

  it('caches validators by id and by fingerprint', () => {
    const registry = new SchemaRegistry({ bundled: false });
    const a = registry.validatorForSchema({ type: 'object', properties: { x: { type: 'number' } } });
    const b = registry.validatorForSchema({ properties: { x: { type: 'number' } }, type: 'object' });
    expect(b).toBe(a);
    expect(a.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const c = registry.validatorForSchema({ type: 'string' });
    expect(c).not.toBe(a);
    // Same $id on different schemas is fine: values are compiled anonymously.
    const d = registry.validatorForSchema({ $id: 'urn:x', type: 'string' });
    const e = registry.validatorForSchema({ $id: 'urn:x', type: 'number' });
    expect(d('s').valid).toBe(true);
    expect(e('s').valid).toBe(false);
    expect(defaultRegistry()).toBe(defaultRegistry());
    expect(defaultRegistry().validatorFor(SCHEMA_IDS.envelope)).toBe(
      defaultRegistry().validatorFor(SCHEMA_IDS.envelope),
    );
  });

  it('reports issues with JSON Pointers to the offending value', () => {
    const result = defaultRegistry().validate(SCHEMA_IDS.envelope, {
      schema_version: 'mcp.envelope.v0.1',
      result: 1,
      'odd/field': true,
      errors: [{ code: 1 }],
    });
    expect(result.valid).toBe(false);
    const pointers = result.issues.map((issue) => issue.pointer);
    expect(pointers).toContain('/odd~1field');
    expect(pointers.some((pointer) => pointer.startsWith('/errors/0'))).toBe(true);
  });

  it('throws stable codes for unknown ids and bad schemas', () => {
    const registry = new SchemaRegistry();
    expect(() => registry.validatorFor('nope')).toThrow(
      expect.objectContaining({ code: 'SCHEMA_NOT_FOUND' }),
    );
    expect(() => registry.validatorForSchema({ type: 'no-such-type' })).toThrow(
      expect.objectContaining({ code: 'SCHEMA_INVALID' }),
    );
    expect(() => registry.assertValid(SCHEMA_IDS.envelope, {})).toThrow(
      expect.objectContaining({ code: 'SCHEMA_INVALID' }),
    );
  });
});
