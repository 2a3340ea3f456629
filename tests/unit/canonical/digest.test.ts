import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIGEST_ALGORITHMS,
  DIGEST_HEX_LENGTH,
  digestBytes,
  digestFile,
  digestFormatProblem,
  digestStream,
  digestValue,
} from '../../../src/canonical/digest.ts';
import { EnvelopeError } from '../../../src/errors/index.ts';

// Published test vectors: FIPS 180-2 examples for SHA-2, the BLAKE3 reference for empty input.
const KNOWN = {
  sha256: {
    '': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    abc: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
  },
  sha512: {
    '': 'cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e',
    abc: 'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
  },
  blake3: {
    '': 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262',
    abc: '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85',
  },
} as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mcp-envelope-digest-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('digests of bytes and strings', () => {
  for (const alg of DIGEST_ALGORITHMS) {
    it(`${alg} matches the known vectors, as lowercase hex of the exact length`, () => {
      for (const [input, hex] of Object.entries(KNOWN[alg])) {
        expect(digestBytes(input, alg)).toEqual({ alg, value: hex });
        expect(digestBytes(Buffer.from(input), alg).value).toBe(hex);
        expect(hex).toHaveLength(DIGEST_HEX_LENGTH[alg]);
        expect(digestFormatProblem(alg, hex)).toBeUndefined();
      }
    });
  }

  it('defaults to sha256', () => {
    expect(digestBytes('abc').alg).toBe('sha256');
  });

  it('hashes strings as UTF-8', () => {
    expect(digestBytes('é').value).toBe(digestBytes(Buffer.from([0xc3, 0xa9])).value);
  });

  it('rejects an unknown algorithm with DIGEST_ALG_UNSUPPORTED', () => {
    expect(() => digestBytes('x', 'md5' as never)).toThrow(
      expect.objectContaining({ code: 'DIGEST_ALG_UNSUPPORTED' }),
    );
  });

  it('keeps the shared BLAKE3 hasher clean between one-shot digests', () => {
    digestBytes('something else', 'blake3');
    expect(digestBytes('', 'blake3').value).toBe(KNOWN.blake3['']);
  });
});

describe('digestValue', () => {
  it('hashes the canonical form, so member order does not matter', () => {
    const a = digestValue({ b: 1, a: [1.0, 'x'] });
    const b = digestValue({ a: [1, 'x'], b: 1 });
    expect(a).toEqual(b);
    expect(a.value).toBe(digestBytes('{"a":[1,"x"],"b":1}').value);
  });

  it('propagates canonicalization errors with their codes', () => {
    expect(() => digestValue({ a: Number.NaN })).toThrow(EnvelopeError);
  });
});

describe('digestFormatProblem', () => {
  it.each([
    ['sha256', 'A'.repeat(64), /lowercase/],
    ['sha256', 'g'.repeat(64), /hexadecimal/],
    ['sha256', 'a'.repeat(63), /64/],
    ['sha512', 'a'.repeat(64), /128/],
    ['blake3', 'a'.repeat(128), /64/],
    ['md5', 'a'.repeat(32), /unsupported/],
  ])('%s %s is reported', (alg, value, why) => {
    expect(digestFormatProblem(alg, value)).toMatch(why);
  });
});

describe('streams and files', () => {
  it('digests a stream in chunks and reports its size', async () => {
    for (const alg of DIGEST_ALGORITHMS) {
      const stream = Readable.from([Buffer.from('a'), 'b', new Uint8Array([0x63])]);
      expect(await digestStream(stream, alg)).toEqual({ alg, value: KNOWN[alg].abc, size: 3 });
    }
  });

  it('digests files of several sizes like digestBytes does', async () => {
    const sizes = [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 7];
    for (const size of sizes) {
      const bytes = Buffer.alloc(size, size % 251);
      const path = join(dir, `f${size}`);
      await writeFile(path, bytes);
      for (const alg of DIGEST_ALGORITHMS) {
        expect(await digestFile(path, alg)).toEqual({ ...digestBytes(bytes, alg), size });
      }
    }
  });

  it('keeps concurrent BLAKE3 streams independent', async () => {
    const [one, two] = await Promise.all([
      digestStream(Readable.from(['a', 'b', 'c']), 'blake3'),
      digestStream(Readable.from([]), 'blake3'),
    ]);
    expect(one.value).toBe(KNOWN.blake3.abc);
    expect(two.value).toBe(KNOWN.blake3['']);
  });

  it('fails on a missing file or a folder with INPUT_UNREADABLE', async () => {
    await expect(digestFile(join(dir, 'missing'))).rejects.toMatchObject({ code: 'INPUT_UNREADABLE' });
    await expect(digestFile(dir)).rejects.toMatchObject({
      code: 'INPUT_UNREADABLE',
      message: /is a directory/,
    });
  });
});
