import { describe, expect, it } from 'vitest';
import {
  encodePointer,
  escapeToken,
  parsePointer,
  resolvePointer,
  tryResolvePointer,
  unescapeToken,
} from '../../../src/pointer/index.ts';

// RFC 6901 section 5.
const RFC_DOCUMENT = {
  foo: ['bar', 'baz'],
  '': 0,
  'a/b': 1,
  'c%d': 2,
  'e^f': 3,
  'g|h': 4,
  'i\\j': 5,
  'k"l': 6,
  ' ': 7,
  'm~n': 8,
};

describe('RFC 6901 section 5 examples', () => {
  it.each([
    ['', RFC_DOCUMENT],
    ['/foo', ['bar', 'baz']],
    ['/foo/0', 'bar'],
    ['/', 0],
    ['/a~1b', 1],
    ['/c%d', 2],
    ['/e^f', 3],
    ['/g|h', 4],
    ['/i\\j', 5],
    ['/k"l', 6],
    ['/ ', 7],
    ['/m~0n', 8],
  ])('%j resolves', (pointer, value) => {
    expect(resolvePointer(RFC_DOCUMENT, pointer)).toEqual(value);
  });
});

describe('escaping', () => {
  it('escapes ~ before / and unescapes ~1 before ~0', () => {
    expect(escapeToken('a/b~c')).toBe('a~1b~0c');
    expect(unescapeToken('~01')).toBe('~1');
    expect(unescapeToken('~10')).toBe('/0');
    expect(escapeToken('~1')).toBe('~01');
    expect(unescapeToken(escapeToken('~/~0/~1'))).toBe('~/~0/~1');
  });

  it('encodes and parses token lists symmetrically', () => {
    const tokens = ['', 'a/b', 'm~n', '~1', '0', 'é'];
    expect(parsePointer(encodePointer(tokens))).toEqual(tokens);
    expect(encodePointer(['a', 3])).toBe('/a/3');
  });

  it.each(['a', 'foo/bar', '/~', '/~2', '/a~'])('rejects %j with POINTER_INVALID', (pointer) => {
    expect(() => parsePointer(pointer)).toThrow(expect.objectContaining({ code: 'POINTER_INVALID' }));
  });
});

describe('resolution', () => {
  it('reports why a pointer does not resolve', () => {
    expect(tryResolvePointer({ a: [1] }, '/a/1')).toMatchObject({ found: false, at: '/a/1' });
    expect(tryResolvePointer({ a: [1] }, '/a/-')).toMatchObject({ found: false });
    expect(tryResolvePointer({ a: [1] }, '/a/01')).toMatchObject({ found: false });
    expect(tryResolvePointer({ a: 1 }, '/a/b')).toMatchObject({ found: false, reason: /scalar/ });
    expect(() => resolvePointer({}, '/x')).toThrow(expect.objectContaining({ code: 'POINTER_NOT_FOUND' }));
  });

  it('only follows own members, never inherited ones', () => {
    expect(tryResolvePointer({}, '/constructor').found).toBe(false);
    expect(tryResolvePointer({}, '/__proto__').found).toBe(false);
    expect(tryResolvePointer([], '/length').found).toBe(false);
    const data = JSON.parse('{"__proto__":{"x":1}}');
    expect(resolvePointer(data, '/__proto__/x')).toBe(1);
  });
});
