import type { ServerResponse } from 'node:http';
import { MAX_QUEUED_BYTES } from '../relay/downstream.ts';

/** Waiting bytes past which a reply the client has stopped taking is ended. */
export const MAX_UNREAD_BYTES = 4 * MAX_QUEUED_BYTES;

/**
 * For replies the SDK's own transports write (resumable sessions, the stateless
 * 2026-07-28 path), which the gateway's writers cannot judge message by message.
 * Past `MAX_QUEUED_BYTES` waiting, the reply is watched: if the socket has sent
 * anything since (the client reads, only slower than the server writes) it goes
 * on; once more than `MAX_UNREAD_BYTES` wait and nothing was sent since the
 * watch began, the client has stopped reading, and the reply is destroyed
 * instead of buffered without limit. The SDK sees a client that went away; a
 * resumable client can resume.
 */
export function closeWhenUnread(res: ServerResponse, report: (message: string) => void): void {
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
