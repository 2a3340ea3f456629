import { describe, expect, it } from 'vitest';
import { splitLines } from '../../../src/pointer/anchor.ts';
import { formatAnchor, parseAnchor, resolveAnchor } from '../../../src/pointer/index.ts';

describe('evidence anchors', () => {
  it.each([
    ['artifact:out-1', { kind: 'artifact', artifactId: 'out-1' }],
    ['artifact:out-1#json:', { kind: 'json', artifactId: 'out-1', pointer: '' }],
    ['artifact:out-1#json:/a~1b/0', { kind: 'json', artifactId: 'out-1', pointer: '/a~1b/0' }],
    ['artifact:src.py#text:line:3', { kind: 'text', artifactId: 'src.py', startLine: 3, endLine: 3 }],
    ['artifact:src.py#text:line:3-10', { kind: 'text', artifactId: 'src.py', startLine: 3, endLine: 10 }],
  ])('%s parses and formats back', (source, anchor) => {
    expect(parseAnchor(source)).toEqual(anchor);
    expect(formatAnchor(parseAnchor(source))).toBe(source);
  });

  it('formats a one-line range without the end', () => {
    expect(formatAnchor({ kind: 'text', artifactId: 'a', startLine: 4, endLine: 4 })).toBe(
      'artifact:a#text:line:4',
    );
  });

  it.each([
    'out-1',
    'artifact:',
    'artifact:#json:/a',
    'artifact:x#json:a',
    'artifact:x#json:/~2',
    'artifact:x#text:line:0',
    'artifact:x#text:line:5-3',
    'artifact:x#text:line:-3',
    'artifact:x#text:line:1-',
    'artifact:x#text:line:a',
    'artifact:x#text:line:99999999999999999999',
    'artifact:x#xpath:/a',
  ])('rejects %j with ANCHOR_INVALID', (source) => {
    expect(() => parseAnchor(source)).toThrow(expect.objectContaining({ code: 'ANCHOR_INVALID' }));
  });

  it('resolves JSON anchors against a value', () => {
    const doc = { findings: [{ line: 3 }] };
    expect(resolveAnchor(parseAnchor('artifact:a#json:/findings/0/line'), doc)).toEqual({
      resolved: true,
      value: 3,
    });
    expect(resolveAnchor(parseAnchor('artifact:a#json:/findings/1'), doc)).toMatchObject({ resolved: false });
    expect(resolveAnchor(parseAnchor('artifact:a'), doc)).toEqual({ resolved: true, value: doc });
  });

  it('resolves line ranges against text, 1-based and inclusive', () => {
    const text = 'one\ntwo\r\nthree\n';
    expect(splitLines(text)).toEqual(['one', 'two', 'three']);
    expect(resolveAnchor(parseAnchor('artifact:a#text:line:2-3'), text)).toEqual({
      resolved: true,
      value: 'two\nthree',
    });
    expect(resolveAnchor(parseAnchor('artifact:a#text:line:4'), text)).toMatchObject({ resolved: false });
    expect(resolveAnchor(parseAnchor('artifact:a#text:line:1'), { not: 'text' })).toMatchObject({
      resolved: false,
    });
  });
});
