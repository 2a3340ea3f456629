import type { ServerResponse } from 'node:http';
import { MAX_QUEUED_BYTES } from '../relay/downstream.ts';
import { processResultBudget, type Reservation } from '../upstreams/result-budget.ts';

/** Writes from this size on count against the process's answer budget until they have left the process. */
export const COUNTED_REPLY_BYTES = 64 * 1024;

/** Waiting bytes past which a reply the client has stopped taking is ended. */
export const MAX_UNREAD_BYTES = 4 * MAX_QUEUED_BYTES;

/**
 * Counts a reply's large writes (COUNTED_REPLY_BYTES or more) against the
 * process's answer budget until the reply has handed them to the system or
 * closed: a reply nobody reads stays in memory, and without this 14 unread
 * 40 MiB answers held 1.3 GB uncounted. The bytes are held even past the limit
 * (the answer was admitted already); new answers are refused until they leave.
 */
export function countUnreadBytes(res: ServerResponse): void {
  const held: Reservation[] = [];
  const releaseAll = () => {
    for (const reservation of held.splice(0)) reservation.release();
  };
  res.on('drain', releaseAll);
  res.once('finish', releaseAll);
  res.once('close', releaseAll);
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  res.write = ((...args: unknown[]) => {
    const size = countedSize(args[0]);
    const reservation = size > 0 && !res.destroyed ? processResultBudget().hold(size) : undefined;
    const flushed = write(...args);
    if (reservation) {
      if (flushed) reservation.release();
      else held.push(reservation);
    }
    return flushed;
  }) as ServerResponse['write'];
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.end = ((...args: unknown[]) => {
    const size = countedSize(args[0]);
    if (size > 0 && !res.destroyed) held.push(processResultBudget().hold(size));
    return end(...args);
  }) as ServerResponse['end'];
}

function countedSize(chunk: unknown): number {
  const size = typeof chunk === 'string' ? chunk.length : chunk instanceof Uint8Array ? chunk.byteLength : 0;
  return size >= COUNTED_REPLY_BYTES ? size : 0;
}

/**
 * For replies the SDK's own transports write (resumable sessions, the stateless
 * 2026-07-28 path), which the gateway's writers cannot judge message by message.
 * Past `MAX_QUEUED_BYTES` waiting, the reply is watched: if the socket has sent
 * anything since (the client reads, only slower than the server writes) it goes
 * on; once more than `MAX_UNREAD_BYTES` wait and nothing was sent since the
 * watch began, the client has stopped reading, and the reply is destroyed
 * instead of buffered without limit. The SDK sees a client that went away; a
 * resumable client can resume. Its large writes are counted (`countUnreadBytes`).
 */
export function closeWhenUnread(res: ServerResponse, report: (message: string) => void): void {
  countUnreadBytes(res);
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  let sentWhenWatched: number | undefined;
  res.write = ((...args: unknown[]) => {
    if (res.destroyed) return false;
    const waiting = res.writableLength;
    // What the kernel took: the socket counts what it still buffers as written too.
    const sent = (res.socket?.bytesWritten ?? 0) - (res.socket?.writableLength ?? 0);
    if (waiting <= MAX_QUEUED_BYTES) sentWhenWatched = undefined;
    else if (sentWhenWatched === undefined) sentWhenWatched = sent;
    else if (sent === sentWhenWatched && waiting > MAX_UNREAD_BYTES) {
      report(
        `ended a reply stream the client stopped reading (more than ${MAX_UNREAD_BYTES / (1024 * 1024)} MiB waiting)`,
      );
      res.destroy();
      return false;
    }
    return write(...args);
  }) as ServerResponse['write'];
}
