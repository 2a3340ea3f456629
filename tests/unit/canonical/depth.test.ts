import { describe, expect, it } from 'vitest';
import { canonicalize, MAX_NESTING_DEPTH, pathBeyondDepth } from '../../../src/canonical/index.ts';

function nested(levels: number, wrap: (inner: unknown) => unknown): unknown {
  let value: unknown = 0;
  for (let i = 0; i < levels; i++) value = wrap(value);
  return value;
}

describe('pathBeyondDepth', () => {
  it('agrees with canonicalize on where the limit lies', () => {
    const atLimit = nested(MAX_NESTING_DEPTH, (inner) => [inner]);
    const beyond = nested(MAX_NESTING_DEPTH + 1, (inner) => [inner]);
    expect(pathBeyondDepth(atLimit)).toBeUndefined();
    expect(() => canonicalize(atLimit)).not.toThrow();
    expect(pathBeyondDepth(beyond)).toHaveLength(MAX_NESTING_DEPTH);
    expect(() => canonicalize(beyond)).toThrow(expect.objectContaining({ code: 'JSON_TOO_DEEP' }));
  });

  it('names the path of the first container too deep, through objects and arrays', () => {
    const value = { ok: [1, 2], deep: [{ a: { b: [] } }] };
    expect(pathBeyondDepth(value, 3)).toEqual(['deep', '0', 'a']);
    expect(pathBeyondDepth(value, 4)).toEqual(['deep', '0', 'a', 'b']);
    expect(pathBeyondDepth(value, 5)).toBeUndefined();
  });

  it('walks any depth without overflowing the stack, and ignores scalars', () => {
    expect(pathBeyondDepth(nested(200_000, (inner) => ({ a: inner })))).toHaveLength(MAX_NESTING_DEPTH);
    expect(pathBeyondDepth('text')).toBeUndefined();
    expect(pathBeyondDepth(null)).toBeUndefined();
  });
});
