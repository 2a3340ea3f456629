import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/canonical/canonicalize.ts';
import { digestBytes, digestValue } from '../../src/canonical/digest.ts';
import { parseJson, parseJsonBytes } from '../../src/canonical/json-text.ts';
import { wrapLegacy } from '../../src/envelope/index.ts';
import type { EnvelopeError } from '../../src/errors/index.ts';
import { resolvePointer } from '../../src/pointer/index.ts';
import { ArtifactFolder } from '../../src/provenance/artifact-folder.ts';

/** The stable code of the EnvelopeError `run` throws. */
function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect((error as Error).name).toBe('EnvelopeError');
    return (error as EnvelopeError).code;
  }
  throw new Error('expected an EnvelopeError');
}

describe('malformed and hostile JSON text', () => {
  it.each([
    ['truncated', '{"a":[1,2'],
    ['trailing garbage', '{} {}'],
    ['comments', '{"a":1 /* no */}'],
    ['single quotes', "{'a':1}"],
    ['a bare control character', '"a\u0001b"'],
    ['only whitespace', ' \n\t '],
  ])('%s is JSON_MALFORMED', (_name, text) => {
    expect(codeOf(() => parseJson(text))).toBe('JSON_MALFORMED');
  });

  it("a million unclosed '[' is JSON_MALFORMED, quickly and without a stack overflow", () => {
    expect(codeOf(() => parseJson('['.repeat(1e6)))).toBe('JSON_MALFORMED');
  });

  it('a million levels of well-formed nesting is JSON_TOO_DEEP', () => {
    expect(codeOf(() => parseJson(`${'['.repeat(1e6)}${']'.repeat(1e6)}`))).toBe('JSON_TOO_DEEP');
    expect(codeOf(() => parseJson(`${'{"a":'.repeat(1e5)}1${'}'.repeat(1e5)}`))).toBe('JSON_TOO_DEEP');
  });

  it('a million levels of nesting built in memory is JSON_TOO_DEEP for canonicalize and digests', () => {
    let array: unknown = 1;
    let object: Record<string, unknown> = {};
    const root = object;
    for (let i = 0; i < 1e6; i++) {
      array = [array];
      const next = {};
      object[i % 2 === 0 ? '1' : 'a'] = next;
      object = next;
    }
    expect(codeOf(() => canonicalize(array))).toBe('JSON_TOO_DEEP');
    expect(codeOf(() => digestValue(root))).toBe('JSON_TOO_DEEP');
  });

  it('lone surrogates are JSON_LONE_SURROGATE wherever they are', () => {
    expect(codeOf(() => parseJson('["\\udbff"]'))).toBe('JSON_LONE_SURROGATE');
    expect(codeOf(() => parseJson('{"\\ud800x":1}'))).toBe('JSON_LONE_SURROGATE');
    expect(codeOf(() => canonicalize({ a: 'x\udc00y' }))).toBe('JSON_LONE_SURROGATE');
    expect(codeOf(() => digestValue(['\ud800']))).toBe('JSON_LONE_SURROGATE');
  });

  it('bytes that are not UTF-8 are INPUT_INVALID_UTF8', () => {
    expect(codeOf(() => parseJsonBytes(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])))).toBe(
      'INPUT_INVALID_UTF8',
    );
    // UTF-16 with a byte order mark is not UTF-8 either.
    expect(codeOf(() => parseJsonBytes(new Uint8Array([0xff, 0xfe, 0x5b, 0x00, 0x5d, 0x00])))).toBe(
      'INPUT_INVALID_UTF8',
    );
  });

  it('a 100 MB string is parsed, canonicalized and digested', () => {
    const size = 100 * 1024 * 1024;
    const text = `"${'a'.repeat(size)}"`;
    const value = parseJson(text) as string;
    expect(value.length).toBe(size);
    expect(digestValue(value).value).toBe(digestBytes(text).value);
  });
});

describe('__proto__ and constructor are data', () => {
  const text =
    '{"z":0,"constructor":{"prototype":{"polluted":true}},"__proto__":{"polluted":true,"b":1,"a":2}}';

  it('survive parsing, canonicalization, wrapping and pointers without touching prototypes', () => {
    const value = parseJson(text) as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['z', 'constructor', '__proto__']);
    expect(canonicalize(value)).toBe(
      '{"__proto__":{"a":2,"b":1,"polluted":true},"constructor":{"prototype":{"polluted":true}},"z":0}',
    );
    const envelope = wrapLegacy(value);
    expect(envelope.result).toBe(value);
    expect(canonicalize(envelope)).toContain('"result":{"__proto__":{"a":2');
    expect(resolvePointer(value, '/__proto__/polluted')).toBe(true);
    expect(resolvePointer(value, '/constructor/prototype/polluted')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('canonical copies keep __proto__ as an own member in every ordering path', () => {
    for (const source of [
      '{"b":1,"__proto__":{"x":1}}',
      '{"__proto__":{"b":1,"a":2},"z":1}',
      '{"1":0,"__proto__":{"b":1,"a":2}}',
    ]) {
      const out = canonicalize(JSON.parse(source));
      expect(JSON.parse(out)).toEqual(JSON.parse(source));
      expect(out).toContain('"__proto__":{');
    }
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('locators', () => {
  let root: string;
  let folder: ArtifactFolder;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'mcp-envelope-locators-'));
    await mkdir(join(root, 'box', 'inner'), { recursive: true });
    await writeFile(join(root, 'outside.txt'), 'outside');
    await writeFile(join(root, 'box', 'inner', 'ok.txt'), 'ok');
    await symlink(join(root, 'outside.txt'), join(root, 'box', 'link.txt'));
    await symlink(root, join(root, 'box', 'up'));
    folder = new ArtifactFolder(join(root, 'box'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it.each([
    ['..', '../outside.txt'],
    ['nested ..', 'inner/../../outside.txt'],
    ['file: with ..', 'file:../outside.txt'],
    ['percent-encoded ..', 'file:%2E%2E/outside.txt'],
    ['a symlinked file leading out', 'link.txt'],
    ['a symlinked folder leading out', 'up/outside.txt'],
  ])('%s is unsafe', async (_name, locator) => {
    expect(await folder.locate({ artifact_id: 'x/y', locator })).toMatchObject({
      found: false,
      unsafe: true,
    });
  });

  it('an absolute path is looked up inside the folder only', async () => {
    const lookup = await folder.locate({ artifact_id: 'x/y', locator: join(root, 'outside.txt') });
    expect(lookup.found).toBe(false);
    expect(await folder.locate({ artifact_id: 'x/y', locator: '/inner/ok.txt' })).toMatchObject({
      found: true,
    });
  });

  it('a folder is not a file', async () => {
    expect(await folder.locate({ artifact_id: 'x/y', locator: 'inner' })).toMatchObject({ found: false });
  });
});
