/**
 * Sends part of an open file to a writable (an HTTP response) through two
 * buffers used in turn: one is read into while the other is being written,
 * and a buffer is read into again only once its write has completed. A
 * download thus holds two chunks of memory whatever its size, and allocates
 * nothing per chunk (a fresh buffer per chunk costs page faults and
 * collector work, most of the CPU a download spends).
 */
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

/**
 * Writes bytes `start` to `start + length - 1` of `handle` to `out` and
 * returns how many were read: fewer than `length` when the file ended early
 * (the caller must not pass that off as whole). Rejects when `out` closes or
 * a read fails; `out` is never ended here.
 */
export async function sendFileRange(
  handle: FileHandle,
  start: number,
  length: number,
  out: Writable,
  chunkBytes: number = SEND_CHUNK_BYTES,
): Promise<number> {
  if (length <= 0) return 0;
  const size = Math.min(chunkBytes, length);
  const buffers = [takeBuffer(size), takeBuffer(size)];
  // A client that goes away ends the send at once, whatever is pending.
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
  let read = 0;
  let which = 0;
  let writing: Promise<void> | undefined;
  try {
    if (out.destroyed) throw new Error('the response closed before the file was sent');
    while (read < length) {
      const buffer = buffers[which] as Buffer;
      which ^= 1;
      const { bytesRead } = await Promise.race([
        handle.read(buffer, 0, Math.min(buffer.length, length - read), start + read),
        closed,
      ]);
      if (bytesRead === 0) break;
      read += bytesRead;
      // The other buffer's write is done before this one is handed over; this one was read into
      // only after its own previous write had completed (awaited one step earlier).
      if (writing) await writing;
      writing = write(buffer.subarray(0, bytesRead));
    }
    if (writing) await writing;
    giveBack(buffers);
    return read;
  } finally {
    out.off('close', onClose);
  }
}
