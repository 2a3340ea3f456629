import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { closeWhenUnread } from '../../../src/gateway/http/unread-bound.ts';
import { MAX_QUEUED_BYTES } from '../../../src/gateway/relay/downstream.ts';

const CHUNK = Buffer.alloc(1024 * 1024, 0x61);
/** Enough to pass the bound whatever the kernel's socket buffers absorb first. */
const CHUNKS = 96;

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server that writes CHUNKS megabytes through the guard, yielding to the event loop between writes but never waiting for a drain. */
async function serve(
  reports: string[],
): Promise<{ url: string; done: Promise<{ written: number; destroyed: boolean }> }> {
  let finish: (outcome: { written: number; destroyed: boolean }) => void = () => {};
  const done = new Promise<{ written: number; destroyed: boolean }>((resolve) => {
    finish = resolve;
  });
  server = createServer(async (_req: IncomingMessage, res: ServerResponse) => {
    closeWhenUnread(res, (message) => reports.push(message));
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    let written = 0;
    // Writes as the SDK's transports do, without waiting for the socket to drain.
    for (let i = 0; i < CHUNKS && !res.destroyed; i++) {
      res.write(CHUNK);
      if (!res.destroyed) written += CHUNK.length;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (!res.destroyed) res.end();
    finish({ written, destroyed: res.destroyed });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, done };
}

function get(url: string, read: boolean): Promise<{ res: IncomingMessage; received: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      let received = 0;
      const all = new Promise<number>((settle) => {
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
        });
        res.once('end', () => settle(received));
        res.once('close', () => settle(received));
        res.once('error', () => settle(received));
      });
      if (!read) res.pause();
      resolve({ res, received: all });
    });
    req.once('error', reject);
    req.end();
  });
}

describe('closeWhenUnread', () => {
  it('ends a reply whose client stopped reading once more than the bound waits, and says so once', async () => {
    const reports: string[] = [];
    const { url, done } = await serve(reports);
    const { res } = await get(url, false);
    const outcome = await done;
    expect(outcome.destroyed).toBe(true);
    expect(outcome.written).toBeLessThan(CHUNKS * CHUNK.length);
    expect(reports).toEqual([expect.stringMatching(/stopped reading \(more than 32 MiB waiting\)/)]);
    res.destroy();
  });

  it('lets a reply whose client reads carry everything, past the bound', async () => {
    const reports: string[] = [];
    const { url, done } = await serve(reports);
    const { received } = await get(url, true);
    const outcome = await done;
    expect(outcome.destroyed).toBe(false);
    expect(await received).toBe(CHUNKS * CHUNK.length);
    expect(CHUNKS * CHUNK.length).toBeGreaterThan(MAX_QUEUED_BYTES);
    expect(reports).toEqual([]);
  });
});
