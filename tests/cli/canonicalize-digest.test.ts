import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, hasStackTrace, runCli, type TempDir, tempDir } from '../helpers/cli.ts';

let dir: TempDir;
let doc: string;
beforeAll(async () => {
  dir = await tempDir();
  doc = await dir.file('doc.json', '{ "b": [1.0, 1e21], "a": "\\u00e9" }\n');
});
afterAll(async () => {
  await dir.remove();
});

const CANONICAL = '{"a":"é","b":[1,1e+21]}';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('canonicalize', () => {
  it('prints exactly the canonical bytes, from a file and from stdin', async () => {
    const fromFile = await runCli(['canonicalize', doc]);
    expect(fromFile).toMatchObject({ code: 0, stdout: CANONICAL, stderr: '' });
    const fromStdin = await runCli(['canonicalize'], { input: '{"b":[1.0,1e21],"a":"é"}' });
    expect(fromStdin.stdoutBytes.equals(Buffer.from(CANONICAL))).toBe(true);
    expect((await runCli(['canonicalize', '-'], { input: '[]' })).stdout).toBe('[]');
  });

  it('--json wraps the output in a parseable object', async () => {
    const run = await runCli(['--json', 'canonicalize', doc]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ canonical: CANONICAL });
  });
});

describe('digest', () => {
  it('digests the canonical form with every algorithm', async () => {
    const expected = {
      sha256: sha256(CANONICAL),
      sha512: createHash('sha512').update(CANONICAL).digest('hex'),
      blake3: undefined,
    };
    for (const alg of ['sha256', 'sha512', 'blake3'] as const) {
      const run = await runCli(['--json', 'digest', '--alg', alg, doc]);
      expect(run.code).toBe(0);
      const parsed = JSON.parse(run.stdout);
      expect(parsed.alg).toBe(alg);
      expect(parsed.value).toMatch(alg === 'sha512' ? /^[0-9a-f]{128}$/ : /^[0-9a-f]{64}$/);
      if (expected[alg]) expect(parsed.value).toBe(expected[alg]);
    }
  });

  it('prints alg:hex in human mode and defaults to sha256', async () => {
    const run = await runCli(['digest', doc]);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(`sha256:${sha256(CANONICAL)}`);
  });

  it('--raw digests the bytes as they are, also from stdin, and matches known vectors', async () => {
    const raw = await runCli(['--json', 'digest', '--raw', '-'], { input: 'abc' });
    expect(JSON.parse(raw.stdout).value).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    const empty = await runCli(['--json', 'digest', '--raw', '--alg', 'blake3'], { input: '' });
    expect(JSON.parse(empty.stdout).value).toBe(
      'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
    );
    const file = await runCli(['--json', 'digest', '--raw', doc]);
    expect(JSON.parse(file.stdout).value).toBe(sha256('{ "b": [1.0, 1e21], "a": "\\u00e9" }\n'));
    // --raw accepts any bytes, JSON or not.
    expect((await runCli(['digest', '--raw'], { input: Buffer.from([0xff, 0xfe]) })).code).toBe(0);
  });

  it('rejects an unknown algorithm as a usage error', async () => {
    const run = await runCli(['digest', '--alg', 'md5', doc]);
    expect(run.code).toBe(2);
    expect(errorCode(run)).toBe('DIGEST_ALG_UNSUPPORTED');
    expect(hasStackTrace(run.stderr)).toBe(false);
  });
});
