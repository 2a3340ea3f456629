import type { IncomingMessage, ServerResponse } from 'node:http';
import { EnvelopeError } from '../../errors/index.ts';
import { sendError } from './reply.ts';
import type { RequestScope } from './scope.ts';

/**
 * Downloads of artifacts on the HTTP surface, bounded. They need no bearer
 * token (the signed id is the capability), so they are counted by address:
 * stalled readers could otherwise hold buffers and file handles without limit
 * (1,500 of them took 2.2 GB).
 */

/** How long a download may go without its client taking a byte before it is cut. */
export const DOWNLOAD_SEND_TIMEOUT_MS = 30_000;
/** Downloads one address may have running at once (needing no token, they are counted by address). */
export const DOWNLOADS_PER_ADDRESS = 8;

export type DownloadHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface DownloadBounds {
  perAddress: number;
  sendTimeoutMs: number;
  /** Told of each download cut for its client taking nothing. */
  onCut: (address: string) => void;
}

/** The downloads running, by the address they come from: one table per gateway. */
export type RunningDownloads = Map<string, number>;

/**
 * Serves a download, bounded: an address gets `perAddress` at once (429
 * RATE_LIMITED past them), and one whose client stops reading is cut after
 * `sendTimeoutMs`.
 */
export async function downloadBounded(
  scope: RequestScope,
  handler: DownloadHandler,
  running: RunningDownloads,
  bounds: DownloadBounds,
): Promise<void> {
  const { req, res } = scope;
  const address = req.socket.remoteAddress ?? 'unknown';
  const now = running.get(address) ?? 0;
  if (now >= bounds.perAddress) {
    sendError(
      res,
      new EnvelopeError(
        'RATE_LIMITED',
        `${now} downloads are running from this address; try again once one ends`,
        {
          limit: DOWNLOADS_PER_ADDRESS,
        },
      ),
      { 'retry-after': '1' },
    );
    return;
  }
  running.set(address, now + 1);
  res.setTimeout(bounds.sendTimeoutMs, () => {
    res.destroy();
    bounds.onCut(address);
  });
  try {
    await handler(req, res);
  } finally {
    const left = (running.get(address) ?? 1) - 1;
    if (left > 0) running.set(address, left);
    else running.delete(address);
  }
}
