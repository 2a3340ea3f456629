import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ArtifactService, openArtifactService } from '../../src/artifacts/service.ts';
import { artifactSink } from '../../src/gateway/artifacts/sink.ts';
import { type HttpGateway, startHttpGateway } from '../../src/gateway/http/server.ts';
import { UpstreamFleet } from '../../src/gateway/relay/upstream-fleet.ts';
import { FIXTURE, NODE } from './processes.ts';

/**
 * Peers that stop halfway hold what the gateway gave them: a download's
 * buffers and file, a request body's buffer. Their number must not decide the
 * gateway's memory: downloads are capped per address and cut when their
 * client stops reading, request bodies must arrive within a read timeout.
 */

const BIG = Buffer.alloc(32 << 20, 7);

let dir: string;
let service: ArtifactService;
let gateway: HttpGateway;
let link: URL;
/** What the gateway reported, as it reports it to the operator. */
const reports: string[] = [];
let reported: (message: string) => void = () => {};

/** A GET that reads the response head, then reads nothing more: a stalled reader. */
function stalledReader(url: URL): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
    });
    socket.once('data', () => {
      socket.pause();
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

const closed = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'stalled-peers-'));
  service = openArtifactService({
    dir,
    ttlMs: 600_000,
    maxBytes: 64 << 20,
    inlineMaxBytes: 1000,
    defaultReturnMode: 'url',
    downloadPath: '/api/download',
    sweepIntervalMs: 0,
  });
  gateway = await startHttpGateway({
    fleet: new UpstreamFleet({
      upstreams: [{ name: 'idle', kind: 'stdio', command: NODE, args: [FIXTURE] }],
    }),
    warmSpare: false,
    downloads: { path: '/api/download', handler: service.handler },
    downloadsPerAddress: 3,
    downloadSendTimeoutMs: 500,
    requestReadTimeoutMs: 500,
    onListening: (url) => service.useOrigin(new URL(url).origin),
    onError: (error) => {
      const message = error instanceof Error ? error.message : String(error);
      reports.push(message);
      reported(message);
    },
  });
  const stored = await artifactSink(service).store(BIG, {
    mediaType: 'application/octet-stream',
    filename: 'big.bin',
    owner: 'token:test',
  });
  link = new URL(stored.downloadUrl as string);
});

afterAll(async () => {
  await gateway?.close();
  service?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('stalled peers', () => {
  it('caps the downloads one address runs at once, and serves it again once one ends', async () => {
    const readers = await Promise.all([1, 2, 3].map(() => stalledReader(link)));
    const refused = await fetch(link);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-error-code') ?? (await refused.text())).toContain('RATE_LIMITED');
    const first = readers[0] as Socket;
    const gone = closed(first);
    first.destroy();
    await gone;
    // The gateway notices the closed connection on its own time: each try awaits a whole answer.
    let status = 0;
    for (let attempt = 0; attempt < 200 && status !== 200; attempt++) {
      const response = await fetch(link, { headers: { range: 'bytes=0-0' } });
      status = response.status === 206 ? 200 : response.status;
      await response.body?.cancel();
    }
    expect(status).toBe(200);
    for (const reader of readers) reader.destroy();
  });

  it('cuts a download whose client stops reading, and says so', async () => {
    const cut = new Promise<string>((resolve) => {
      reported = (message) => {
        if (message.includes('cut')) resolve(message);
      };
    });
    const reader = await stalledReader(link);
    // A paused socket does not see the gateway close it: the gateway's own report is the event.
    expect(await cut).toMatch(/download to .* cut: its client took nothing for 500 ms/);
    // Its place is free again: a fourth download from this address is served next to the others.
    const others = await Promise.all([1, 2].map(() => stalledReader(link)));
    const served = await fetch(link, { headers: { range: 'bytes=0-0' } });
    expect(served.status).toBe(206);
    for (const socket of [reader, ...others]) socket.destroy();
  });

  it('cuts a request whose body stops short of its length', async () => {
    const socket = connect(Number(link.port), link.hostname);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: ${link.host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length + 1}\r\n\r\n${body}`,
    );
    const answer: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => answer.push(chunk));
    await closed(socket);
    // Node answers 408 Request Timeout before it closes the connection.
    expect(Buffer.concat(answer).toString('latin1')).toMatch(/^HTTP\/1\.1 408/);
  });
});
