/**
 * Sends part of an open file to a writable (an HTTP response) through two
 * buffers used in turn: one is read into while the other is being written,
 * and a buffer is read into again only once its write has completed. A
 * download thus holds two chunks of memory whatever its size, and allocates
 * nothing per chunk (a fresh buffer per chunk costs page faults and
 * collector work, most of the CPU a download spends).
 *
 * Every byte sent is hashed on its way, and so is the rest of the file, since
 * a digest names the whole file: the last bytes of the part asked for are
 * held back until the whole file has been hashed, and go out only if it
 * matches the digest it is served under. A file changed on disk, whether
 * before the download or during it, so never reaches a client whole.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';

/** Bytes read per step. */
export const SEND_CHUNK_BYTES = 1 << 20;
/** Buffers kept between downloads (two per download): downloads in a row then allocate nothing. */
const SPARE_BUFFERS = 4;
const spare: Buffer[] = [];

function takeBuffer(size: number): Buffer {
  if (size === SEND_CHUNK_BYTES) return spare.pop() ?? Buffer.allocUnsafeSlow(size);
  return Buffer.allocUnsafeSlow(size);
}

/** Only buffers no write can still hold come back: those of a send that completed. */
function giveBack(buffers: Buffer[]): void {
  for (const buffer of buffers) {
    if (buffer.length === SEND_CHUNK_BYTES && spare.length < SPARE_BUFFERS) spare.push(buffer);
  }
}

/** The whole file a part is sent from, as it was stored. */
export interface StoredFile {
  /** Its size in bytes, as recorded. */
  size: number;
  /** SHA-256 of all its bytes, lower-case hex, as recorded. */
  digest: string;
}

/**
 * How a send ended: `sent` bytes went out; `whole` when they are all that
 * was asked and the file matched its digest, `short` when the file ended
 * early, `mismatch` when its bytes do not hash to the digest (the held-back
 * last bytes were not sent). Anything but `whole` must not pass for complete.
 */
export interface SendOutcome {
  sent: number;
  verdict: 'whole' | 'short' | 'mismatch';
}

/**
 * Files whose bytes were hashed whole and matched their digest, by digest:
 * the identity of the file as it was then (device, inode, size, and its
 * modification and change times in nanoseconds). A file with that identity
 * still holds those bytes: any write changes its change time, which no
 * process but root can set back. Such a file is sent without hashing it
 * again (hashing every download cost about a gigabyte per second of CPU,
 * two fifths of the throughput); any other is hashed, as a first send is.
 */
const verified = new Map<string, string>();
/** Identities kept at most: each is a few dozen bytes; the oldest goes first. */
const MAX_VERIFIED = 10_000;

/**
 * A change time this recent may not be told from the next write's: file
 * times come from a clock that advances in ticks (a jiffy, up to 10 ms), so a
 * write in the same tick keeps it. Only a file changed longer ago than this is
 * remembered as verified (the rule `git` follows for its index).
 */
const SETTLED_CHANGE_MS = 1000;

async function identityOf(handle: FileHandle): Promise<{ key: string; settled: boolean } | undefined> {
  try {
    const stat = await handle.stat({ bigint: true });
    return {
      key: `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`,
      settled: Number(stat.ctimeNs / 1_000_000n) < Date.now() - SETTLED_CHANGE_MS,
    };
  } catch {
    return undefined;
  }
}

/**
 * Writes bytes `start` to `start + length - 1` of `handle` to `out`. A file
 * not yet seen whole with this identity is read and hashed from its first
 * byte to its last, and the part's final bytes go out only once it matched
 * `file.digest`; one that was (see `verified`) is read for the part alone.
 * Rejects when `out` closes or a read fails; `out` is never ended here.
 */
export async function sendFileRange(
  handle: FileHandle,
  start: number,
  length: number,
  out: Writable,
  file: StoredFile,
  chunkBytes: number = SEND_CHUNK_BYTES,
): Promise<SendOutcome> {
  const identity = await identityOf(handle);
  if (identity !== undefined && verified.get(file.digest) === identity.key)
    return sendTrusted(handle, start, length, out, file, chunkBytes);
  const outcome = await sendHashed(handle, start, length, out, file, chunkBytes);
  // Seen whole and matching, and changed long enough ago that a write would show: the same
  // file, unchanged, need not be hashed again.
  if (identity?.settled && outcome.verdict !== 'mismatch' && outcome.hashedWhole) {
    if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value as string);
    verified.set(file.digest, identity.key);
  }
  return { sent: outcome.sent, verdict: outcome.verdict };
}

/** The response's close as a rejection, and a write that loses to it. */
function closing(out: Writable): {
  closed: Promise<never>;
  write: (chunk: Buffer) => Promise<void>;
  dispose: () => void;
} {
  let onClose: () => void = () => {};
  const closed = new Promise<never>((_resolve, reject) => {
    onClose = () => reject(new Error('the response closed before the file was sent'));
    out.once('close', onClose);
  });
  closed.catch(() => {});
  const write = (chunk: Buffer) =>
    Promise.race([
      new Promise<void>((resolve, reject) => {
        out.write(chunk, (error) => (error ? reject(error) : resolve()));
      }),
      closed,
    ]);
  return { closed, write, dispose: () => out.off('close', onClose) };
}

/** The part alone, through the two buffers, from a file already verified with this identity. */
async function sendTrusted(
  handle: FileHandle,
  start: number,
  length: number,
  out: Writable,
  file: StoredFile,
  chunkBytes: number,
): Promise<SendOutcome> {
  const end = Math.min(file.size, start + Math.max(0, length));
  const size = Math.max(1, Math.min(chunkBytes, end - start));
  const buffers = [takeBuffer(size), takeBuffer(size)];
  const { closed, write, dispose } = closing(out);
  let position = start;
  let sent = 0;
  let which = 0;
  let writing: Promise<void> | undefined;
  try {
    if (out.destroyed) throw new Error('the response closed before the file was sent');
    while (position < end) {
      const buffer = buffers[which] as Buffer;
      which ^= 1;
      const { bytesRead } = await Promise.race([
        handle.read(buffer, 0, Math.min(buffer.length, end - position), position),
        closed,
      ]);
      if (bytesRead === 0) break;
      position += bytesRead;
      // This buffer was written from two steps ago; that write is awaited before it is reused.
      if (writing) await writing;
      writing = write(buffer.subarray(0, bytesRead));
      sent += bytesRead;
    }
    if (writing) await writing;
    giveBack(buffers);
    return { sent, verdict: sent === Math.max(0, length) ? 'whole' : 'short' };
  } finally {
    dispose();
  }
}

async function sendHashed(
  handle: FileHandle,
  start: number,
  length: number,
  out: Writable,
  file: StoredFile,
  chunkBytes: number,
): Promise<SendOutcome & { hashedWhole: boolean }> {
  const hash = createHash('sha256');
  const end = start + Math.max(0, length);
  const size = Math.max(1, Math.min(chunkBytes, file.size));
  const buffers = [takeBuffer(size), takeBuffer(size)];
  // A client that goes away ends the send at once, whatever is pending.
  const { closed, write, dispose } = closing(out);
  let position = 0;
  let sent = 0;
  let which = 0;
  let writing: Promise<void> | undefined;
  /** The part's last bytes, waiting for the file's digest; the buffer holding them is read into no more. */
  let held: Buffer | undefined;
  try {
    if (out.destroyed) throw new Error('the response closed before the file was sent');
    while (position < file.size) {
      const buffer = buffers[which] as Buffer;
      if (!held) which ^= 1;
      const { bytesRead } = await Promise.race([
        handle.read(buffer, 0, Math.min(buffer.length, file.size - position), position),
        closed,
      ]);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      const from = Math.max(position, start);
      const to = Math.min(position + bytesRead, end);
      const at = position;
      position += bytesRead;
      // The other buffer's write is done before this one is handed over; this one was read into
      // only after its own previous write had completed (awaited one step earlier).
      if (writing) await writing;
      writing = undefined;
      if (from >= to) continue;
      const part = chunk.subarray(from - at, to - at);
      if (to === end) held = part;
      else {
        writing = write(part);
        sent += part.length;
      }
    }
    if (writing) await writing;
    let verdict: SendOutcome['verdict'] = 'short';
    if (position === file.size) verdict = hash.digest('hex') === file.digest ? 'whole' : 'mismatch';
    if (verdict === 'whole' && held) {
      await write(held);
      sent += held.length;
    }
    giveBack(buffers);
    return {
      sent,
      verdict: verdict === 'whole' && sent !== Math.max(0, length) ? 'short' : verdict,
      hashedWhole: position === file.size && verdict !== 'mismatch',
    };
  } finally {
    dispose();
  }
}
