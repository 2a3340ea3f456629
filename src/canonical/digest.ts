import { createHash, type Hash, hash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { createBLAKE3, type IHasher } from 'hash-wasm';
import { EnvelopeError } from '../errors/index.ts';
import { canonicalize } from './canonicalize.ts';

/**
 * Digests in prov-spec form: `{alg, value}` with lowercase hex of the exact
 * length for the algorithm. SHA-2 comes from node:crypto; BLAKE3 from hash-wasm
 * (WASM, about 30x the pure-JS alternatives). JSON values are digested over their
 * RFC 8785 canonical UTF-8 bytes.
 */

export const DIGEST_ALGORITHMS = ['sha256', 'sha512', 'blake3'] as const;
export type DigestAlg = (typeof DIGEST_ALGORITHMS)[number];

export interface Digest {
  alg: DigestAlg;
  value: string;
}

/** Hex length of each algorithm's digest (BLAKE3 at its default 256-bit output). */
export const DIGEST_HEX_LENGTH: Readonly<Record<DigestAlg, number>> = { sha256: 64, sha512: 128, blake3: 64 };

export function isDigestAlg(value: unknown): value is DigestAlg {
  return typeof value === 'string' && (DIGEST_ALGORITHMS as readonly string[]).includes(value);
}

export function assertDigestAlg(value: string): DigestAlg {
  if (!isDigestAlg(value)) {
    throw new EnvelopeError(
      'DIGEST_ALG_UNSUPPORTED',
      `Unsupported digest algorithm "${value}" (expected one of ${DIGEST_ALGORITHMS.join(', ')})`,
      { alg: value },
    );
  }
  return value;
}

const LOWER_HEX = /^[0-9a-f]+$/;

/** Why a digest value is not well-formed for its algorithm, or undefined when it is. */
export function digestFormatProblem(alg: string, value: string): string | undefined {
  if (!isDigestAlg(alg)) return `unsupported algorithm "${alg}"`;
  if (!LOWER_HEX.test(value)) {
    return /^[0-9a-fA-F]+$/.test(value) ? 'hex is not lowercase' : 'value is not hexadecimal';
  }
  const expected = DIGEST_HEX_LENGTH[alg];
  if (value.length !== expected) return `${alg} needs ${expected} hex characters, got ${value.length}`;
  return undefined;
}

// One BLAKE3 instance for synchronous one-shot digests. Single-threaded JS means
// init/update/digest cannot interleave; streams get their own instance.
const sharedBlake3: IHasher = await createBLAKE3();

interface Hasher {
  update(chunk: Uint8Array | string): void;
  hex(): string;
}

function nodeHasher(alg: 'sha256' | 'sha512'): Hasher {
  const hash: Hash = createHash(alg);
  return {
    update: (chunk) => {
      hash.update(chunk);
    },
    hex: () => hash.digest('hex'),
  };
}

function wasmHasher(instance: IHasher): Hasher {
  instance.init();
  return {
    update: (chunk) => {
      instance.update(chunk);
    },
    hex: () => instance.digest('hex'),
  };
}

/** A synchronous hasher; BLAKE3 uses the shared instance, so finish it before starting another. */
function oneShotHasher(alg: DigestAlg): Hasher {
  return alg === 'blake3' ? wasmHasher(sharedBlake3) : nodeHasher(alg);
}

/** Digest of raw bytes, or of a string's UTF-8 encoding. */
export function digestBytes(data: Uint8Array | string, alg: DigestAlg = 'sha256'): Digest {
  // The platform's one-shot hash skips a Hash object per call (most digests here are of small texts).
  if (alg === 'sha256' || alg === 'sha512') return { alg, value: hash(alg, data, 'hex') };
  const hasher = oneShotHasher(assertDigestAlg(alg));
  hasher.update(data);
  return { alg, value: hasher.hex() };
}

/** Digest of a JSON value over its RFC 8785 canonical UTF-8 bytes. */
export function digestValue(value: unknown, alg: DigestAlg = 'sha256'): Digest {
  return digestBytes(canonicalize(value), alg);
}

export interface StreamDigest extends Digest {
  size: number;
}

/** A hasher that is safe to keep across awaits. */
async function streamingHasher(alg: DigestAlg): Promise<Hasher> {
  return alg === 'blake3' ? wasmHasher(await createBLAKE3()) : nodeHasher(alg);
}

/** Digest of a byte stream in constant memory (chunks are hashed as they arrive). */
export async function digestStream(
  stream: AsyncIterable<Uint8Array | string>,
  alg: DigestAlg = 'sha256',
): Promise<StreamDigest> {
  const hasher = await streamingHasher(assertDigestAlg(alg));
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    size += bytes.byteLength;
    hasher.update(bytes);
  }
  return { alg, value: hasher.hex(), size };
}

/** Read size for file digests: large enough to amortize syscalls, small enough to stay in cache. */
const FILE_CHUNK_BYTES = 1 << 20;

/** A file-system failure as the stable INPUT_UNREADABLE, naming the file and the reason only. */
function unreadable(path: string, error: unknown): EnvelopeError {
  const code = (error as NodeJS.ErrnoException).code;
  const reason =
    code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (error as Error).message;
  return new EnvelopeError('INPUT_UNREADABLE', `Cannot read ${path}: ${reason}`, { path }, { cause: error });
}

/** What a file that is not a regular file is, in words. */
function fileKind(info: Stats): string {
  if (info.isDirectory()) return 'directory';
  if (info.isFIFO()) return 'named pipe (FIFO)';
  if (info.isSocket()) return 'socket';
  if (info.isCharacterDevice()) return 'character device';
  if (info.isBlockDevice()) return 'block device';
  return 'special file';
}

/**
 * Opens a regular file for reading, and nothing else: a named pipe would block
 * the read until some writer came (forever, if none does) and a device such as
 * /dev/zero never ends. Opened without blocking, so a pipe is seen for what it
 * is instead of waited on; then the open file itself is checked, so a path
 * swapped after a check cannot slip through. Anything else is INPUT_UNREADABLE
 * with `reason: "not_a_regular_file"`.
 */
export async function openRegularFile(path: string): Promise<{ handle: FileHandle; size: number }> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw unreadable(path, error);
  }
  let info: Stats;
  try {
    info = await handle.stat();
  } catch (error) {
    await handle.close();
    throw unreadable(path, error);
  }
  if (!info.isFile()) {
    await handle.close();
    const kind = fileKind(info);
    throw new EnvelopeError('INPUT_UNREADABLE', `Cannot read ${path}: it is a ${kind}, not a regular file`, {
      path,
      reason: 'not_a_regular_file',
      file_type: kind,
    });
  }
  return { handle, size: info.size };
}

/**
 * Digest of a regular file's bytes (see openRegularFile), reading into one
 * reused buffer so memory does not grow with the file. A file that cannot be
 * read is INPUT_UNREADABLE.
 */
export async function digestFile(path: string, alg: DigestAlg = 'sha256'): Promise<StreamDigest> {
  const hasher = await streamingHasher(assertDigestAlg(alg));
  const { handle } = await openRegularFile(path);
  try {
    const buffer = Buffer.allocUnsafe(FILE_CHUNK_BYTES);
    let size = 0;
    for (;;) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(buffer, 0, FILE_CHUNK_BYTES, null));
      } catch (error) {
        throw unreadable(path, error);
      }
      if (bytesRead === 0) break;
      size += bytesRead;
      hasher.update(bytesRead === FILE_CHUNK_BYTES ? buffer : buffer.subarray(0, bytesRead));
    }
    return { alg, value: hasher.hex(), size };
  } finally {
    await handle.close();
  }
}
