import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, errorCode, hasStackTrace, runCli, type TempDir, tempDir } from '../helpers/cli.ts';

let dir: TempDir;
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

/** A clean failure: the exit code, one stable code on stderr, nothing on stdout, no stack trace. */
function expectCleanFailure(run: CliRun, exit: number, code: string): void {
  expect(run.signal).toBeNull();
  expect(run.code).toBe(exit);
  expect(errorCode(run)).toBe(code);
  expect(run.stdout).toBe('');
  expect(hasStackTrace(run.stderr)).toBe(false);
  expect(run.stderr.trim().split('\n')).toHaveLength(1);
}

describe('bad input on the command line', () => {
  it.each([
    ['malformed JSON', '{"a": [1, 2', 'JSON_MALFORMED'],
    ["a million unclosed '['", '['.repeat(1e6), 'JSON_MALFORMED'],
    ['a million levels of nesting', `${'['.repeat(1e6)}${']'.repeat(1e6)}`, 'JSON_TOO_DEEP'],
    ['a lone surrogate escape', '{"a":"\\udead"}', 'JSON_LONE_SURROGATE'],
    ['a duplicate member', '{"a":1,"a":2}', 'JSON_DUPLICATE_KEY'],
    ['a number out of range', '[1e999]', 'JSON_NON_FINITE_NUMBER'],
  ])('%s is exit 2 with a stable code', async (_name, input, code) => {
    for (const command of [['canonicalize'], ['digest'], ['wrap'], ['validate', '-']]) {
      expectCleanFailure(await runCli(command, { input }), 2, code);
    }
  });

  it('bytes that are not UTF-8 are INPUT_INVALID_UTF8', async () => {
    const input = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]);
    expectCleanFailure(await runCli(['canonicalize'], { input }), 2, 'INPUT_INVALID_UTF8');
    expectCleanFailure(await runCli(['wrap', '--text'], { input }), 2, 'INPUT_INVALID_UTF8');
  });

  it('errors in --json mode are one JSON object on stderr', async () => {
    const run = await runCli(['--json', 'canonicalize'], { input: '{' });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stderr)).toMatchObject({ error: { code: 'JSON_MALFORMED' } });
  });

  it('__proto__ and constructor members are kept as data', async () => {
    const input = '{"constructor":{"prototype":{"x":1}},"__proto__":{"polluted":true}}';
    const run = await runCli(['canonicalize'], { input });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}');
    const wrapped = await runCli(['wrap'], { input });
    expect(wrapped.stdout).toContain('"__proto__":{"polluted":true}');
  });

  it('missing files, folders and symlinks to nowhere are INPUT_UNREADABLE', async () => {
    expectCleanFailure(await runCli(['canonicalize', join(dir.path, 'missing.json')]), 2, 'INPUT_UNREADABLE');
    await mkdir(join(dir.path, 'folder'));
    expectCleanFailure(await runCli(['canonicalize', join(dir.path, 'folder')]), 2, 'INPUT_UNREADABLE');
    expectCleanFailure(await runCli(['digest', '--raw', join(dir.path, 'folder')]), 2, 'INPUT_UNREADABLE');
    await symlink(join(dir.path, 'nowhere'), join(dir.path, 'dangling.json'));
    expectCleanFailure(
      await runCli(['digest', '--raw', join(dir.path, 'dangling.json')]),
      2,
      'INPUT_UNREADABLE',
    );
  });

  it('unknown commands and options are USAGE_ERROR with exit 2', async () => {
    expectCleanFailure(await runCli(['frobnicate']), 2, 'USAGE_ERROR');
    expectCleanFailure(await runCli(['canonicalize', '--bogus']), 2, 'USAGE_ERROR');
    expectCleanFailure(await runCli(['validate']), 2, 'USAGE_ERROR');
  });

  it('returns the exit code and leaves the process exit code alone', async () => {
    const before = process.exitCode;
    expect((await runCli(['frobnicate'])).code).toBe(2);
    expect((await runCli(['canonicalize'], { input: '{' })).code).toBe(2);
    expect(process.exitCode).toBe(before);
  });

  it('--help and --version succeed', async () => {
    expect((await runCli(['--help'])).code).toBe(0);
    const version = await runCli(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
