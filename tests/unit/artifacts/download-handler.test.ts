import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDownloadHandler } from '../../../src/artifacts/download-handler.ts';
import { signDownloadId } from '../../../src/artifacts/download-ids.ts';
import { FolderArtifactStore } from '../../../src/artifacts/folder-store.ts';
import { contentDisposition, sanitizeFilename } from '../../../src/artifacts/headers.ts';
import { Keyring } from '../../../src/artifacts/keyring.ts';

const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 1);
let now = START;
let dir: string;
let store: FolderArtifactStore;
let server: Server;
let base: string;
const keyring = Keyring.fromKeys([{ id: 'k1', secret: 's'.repeat(32) }], { maxTtlMs: 2 * HOUR });
const reported: unknown[] = [];

const BYTES = Buffer.from('0123456789abcdefghij');

async function grant(bytes: Uint8Array | Readable, filename = 'report.pdf', mediaType = 'application/pdf') {
  const info = await store.put(bytes, { mediaType, owner: 'token:alice', ttlMs: HOUR });
  const issued = await store.createGrant({
    digest: info.digest,
    filename,
    mediaType,
    owner: 'token:alice',
    ttlMs: HOUR,
  });
  return { info, ...issued, url: `${base}/api/download?id=${issued.downloadId}` };
}

async function errorOf(response: Response): Promise<{ status: number; code: string | null; body: unknown }> {
  return {
    status: response.status,
    code: response.headers.get('x-download-error-code'),
    body: await response.json(),
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'download-handler-'));
  store = FolderArtifactStore.open({ dir, keyring, now: () => now });
  const handler = createDownloadHandler({
    store,
    keyring,
    now: () => now,
    onError: (error) => reported.push(error),
  });
  server = createServer((req, res) => {
    handler(req, res).catch((error) => {
      reported.push(error);
      res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET and HEAD', () => {
  it('streams the bytes with their headers; HEAD answers the same without a body', async () => {
    const { url, info } = await grant(BYTES);
    const got = await fetch(url);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer())).toEqual(BYTES);
    const expected = {
      'content-type': 'application/pdf',
      'content-length': String(BYTES.length),
      'content-disposition': `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
      etag: `"${info.digest}"`,
      'accept-ranges': 'bytes',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    };
    for (const [name, value] of Object.entries(expected)) expect(got.headers.get(name), name).toBe(value);
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    for (const [name, value] of Object.entries(expected)) expect(head.headers.get(name), name).toBe(value);
    expect(await head.text()).toBe('');
  });

  it('serves one range in each form, the whole file for several, and 416 past the end', async () => {
    const { url } = await grant(BYTES);
    const ranged = async (range: string, method = 'GET') => {
      const response = await fetch(url, { method, headers: { range } });
      return {
        status: response.status,
        contentRange: response.headers.get('content-range'),
        length: response.headers.get('content-length'),
        body: await response.text(),
      };
    };
    expect(await ranged('bytes=2-5')).toEqual({
      status: 206,
      contentRange: 'bytes 2-5/20',
      length: '4',
      body: '2345',
    });
    expect(await ranged('bytes=15-')).toEqual({
      status: 206,
      contentRange: 'bytes 15-19/20',
      length: '5',
      body: 'fghij',
    });
    expect(await ranged('bytes=-3')).toEqual({
      status: 206,
      contentRange: 'bytes 17-19/20',
      length: '3',
      body: 'hij',
    });
    expect(await ranged('bytes=18-100')).toEqual({
      status: 206,
      contentRange: 'bytes 18-19/20',
      length: '2',
      body: 'ij',
    });
    expect(await ranged('bytes=-100')).toMatchObject({
      status: 206,
      contentRange: 'bytes 0-19/20',
      body: BYTES.toString(),
    });
    expect(await ranged('bytes=0-1,5-6')).toMatchObject({
      status: 200,
      contentRange: null,
      body: BYTES.toString(),
    });
    expect(await ranged('items=0-1')).toMatchObject({ status: 200, body: BYTES.toString() });
    expect(await ranged('bytes=20-')).toMatchObject({ status: 416, contentRange: 'bytes */20', body: '' });
    expect(await ranged('bytes=-0')).toMatchObject({ status: 416, contentRange: 'bytes */20' });
    // HEAD with a range: the same status and headers.
    expect(await ranged('bytes=2-5', 'HEAD')).toEqual({
      status: 206,
      contentRange: 'bytes 2-5/20',
      length: '4',
      body: '',
    });
    // If-Range naming another version: the whole file.
    const other = await fetch(url, { headers: { range: 'bytes=2-5', 'if-range': '"other"' } });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
  });

  it('answers 304 to If-None-Match naming the digest', async () => {
    const { url, info } = await grant(BYTES);
    for (const tag of [`"${info.digest}"`, `W/"${info.digest}"`, `"x", "${info.digest}"`, '*']) {
      const response = await fetch(url, { headers: { 'if-none-match': tag } });
      expect(response.status, tag).toBe(304);
      expect(response.headers.get('etag')).toBe(`"${info.digest}"`);
    }
    const changed = await fetch(url, { headers: { 'if-none-match': '"something-else"' } });
    expect(changed.status).toBe(200);
    await changed.arrayBuffer();
  });

  it('answers OPTIONS with Allow, other methods with 405 JSON', async () => {
    const { url } = await grant(BYTES);
    const options = await fetch(url, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const response = await fetch(url, { method });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      expect(await errorOf(response)).toMatchObject({
        code: 'METHOD_NOT_ALLOWED',
        body: { error: { code: 'METHOD_NOT_ALLOWED' } },
      });
    }
  });

  it('serves an empty artifact', async () => {
    const { url } = await grant(Buffer.alloc(0), 'empty.txt', 'text/plain');
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe('0');
    expect(await response.text()).toBe('');
  });
});

describe('filenames and media types', () => {
  it('offers a sanitized filename, so no header can be injected', async () => {
    for (const [given, offered] of [
      ['../../etc/passwd', '_.._etc_passwd'],
      ['%2e%2e%2fpasswd', '%2e%2e%2fpasswd'],
      ['a\u0000b.pdf', 'a_b.pdf'],
      ['evil\r\nSet-Cookie: x=1.pdf', 'evil__Set-Cookie: x=1.pdf'],
      ['quote".pdf', 'quote_.pdf'],
      ['..', 'download'],
      ['', 'download'],
      ['.hidden', 'hidden'],
      ['x'.repeat(500), 'x'.repeat(200)],
    ] as const) {
      expect(sanitizeFilename(given), JSON.stringify(given)).toBe(offered);
    }
    const { url } = await grant(BYTES, 'évil\r\nSet-Cookie: x=1; "résumé"%.pdf');
    const response = await fetch(url);
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="_vil__Set-Cookie: x=1; _r_sum___.pdf"; filename*=UTF-8''%C3%A9vil__Set-Cookie%3A%20x%3D1%3B%20_r%C3%A9sum%C3%A9_%25.pdf`,
    );
    await response.arrayBuffer();
    expect(contentDisposition("it's (1).txt")).toContain(`filename*=UTF-8''it%27s%20%281%29.txt`);
  });
});

describe('refusals, told apart before any byte is read', () => {
  it('each code with its status, as JSON and in X-Download-Error-Code', async () => {
    const { downloadId, grant: granted } = await grant(BYTES);
    const [grantId, expiry, kid, signature] = downloadId.split('.') as [string, string, string, string];
    const stranger = Keyring.fromKeys([{ id: 'k2', secret: 't'.repeat(32) }]);
    const cases: [string, number, string][] = [
      ['/api/download', 400, 'DOWNLOAD_ID_MISSING'],
      ['/api/download?id=', 400, 'DOWNLOAD_ID_MISSING'],
      ['/api/download?id=nonsense', 400, 'DOWNLOAD_ID_MALFORMED'],
      [`/api/download?id=${downloadId.slice(0, -2)}`, 400, 'DOWNLOAD_ID_MALFORMED'],
      [`/api/download?id=${downloadId}&id=${downloadId}`, 400, 'DOWNLOAD_ID_MALFORMED'],
      [`/api/download?id=%2e%2e%2f%2e%2e%2fetc%2fpasswd`, 400, 'DOWNLOAD_ID_MALFORMED'],
      [`/api/download?id=${downloadId}%00`, 400, 'DOWNLOAD_ID_MALFORMED'],
      [
        `/api/download?id=${grantId}.${Number(expiry) + 60}.${kid}.${signature}`,
        403,
        'DOWNLOAD_SIGNATURE_INVALID',
      ],
      [
        `/api/download?id=${signDownloadId(grantId, granted.expiresAt, stranger)}`,
        403,
        'DOWNLOAD_SIGNATURE_INVALID',
      ],
      [
        `/api/download?id=${signDownloadId('f'.repeat(32), granted.expiresAt, keyring)}`,
        404,
        'DOWNLOAD_NOT_FOUND',
      ],
      // Signed with the right key, but to live longer than any link may (the keyring's 2 hours).
      [
        `/api/download?id=${signDownloadId(grantId, now + 2 * HOUR + 5000, keyring)}`,
        403,
        'DOWNLOAD_LIFETIME_EXCEEDED',
      ],
    ];
    for (const [path, status, code] of cases) {
      const response = await fetch(`${base}${path}`);
      const answer = await errorOf(response);
      expect(answer, path).toMatchObject({
        status,
        code,
        body: { error: { code, message: expect.any(String) } },
      });
      expect(response.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('DOWNLOAD_EXPIRED once the link is past its time, on the injected clock', async () => {
    const { url } = await grant(BYTES);
    now += HOUR;
    try {
      expect(await errorOf(await fetch(url))).toMatchObject({ status: 410, code: 'DOWNLOAD_EXPIRED' });
    } finally {
      now = START;
    }
  });

  it('DOWNLOAD_RENDER_FAILED when the recorded file is gone or short', async () => {
    const gone = await grant(randomBytes(1000));
    unlinkSync(join(dir, 'blobs', gone.info.digest.slice(0, 2), gone.info.digest));
    expect(await errorOf(await fetch(gone.url))).toMatchObject({
      status: 500,
      code: 'DOWNLOAD_RENDER_FAILED',
    });
    const short = await grant(randomBytes(1000));
    truncateSync(join(dir, 'blobs', short.info.digest.slice(0, 2), short.info.digest), 10);
    expect(await errorOf(await fetch(short.url))).toMatchObject({
      status: 500,
      code: 'DOWNLOAD_RENDER_FAILED',
    });
  });

  it('ARTIFACT_STORE_UNAVAILABLE (503) when the store cannot be read, and serves again once it can', async () => {
    const own = mkdtempSync(join(tmpdir(), 'download-handler-closed-'));
    try {
      const closing = FolderArtifactStore.open({ dir: own, keyring });
      const info = await closing.put(BYTES, { mediaType: 'text/plain', owner: 'x', ttlMs: HOUR });
      const { downloadId } = await closing.createGrant({
        digest: info.digest,
        filename: 'a.txt',
        mediaType: 'text/plain',
        owner: 'x',
        ttlMs: HOUR,
      });
      await closing.close();
      const handler = createDownloadHandler({ store: closing, keyring });
      const local = createServer((req, res) => void handler(req, res));
      await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(local.address() as AddressInfo).port}/d?id=${downloadId}`;
        expect(await errorOf(await fetch(url))).toMatchObject({
          status: 503,
          code: 'ARTIFACT_STORE_UNAVAILABLE',
        });
      } finally {
        local.closeAllConnections();
        await new Promise((resolve) => local.close(resolve));
      }
      // The shared handler still serves.
      const { url } = await grant(BYTES);
      expect((await fetch(url)).status).toBe(200);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});

describe('while downloading', () => {
  it('a download that started finishes while its artifact is swept; a new one is refused', async () => {
    const bytes = randomBytes(24 * 1024 * 1024);
    const { url, info } = await grant(bytes);
    const first = await fetch(url);
    const reader = (first.body as ReadableStream<Uint8Array>).getReader();
    const hash = createHash('sha256');
    const firstChunk = await reader.read();
    hash.update(firstChunk.value as Uint8Array);
    // Expired and swept, the clock moved on.
    now += HOUR;
    try {
      expect(await store.sweep()).toBeGreaterThan(0);
      expect(await errorOf(await fetch(url))).toMatchObject({ status: 410, code: 'DOWNLOAD_EXPIRED' });
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        hash.update(value);
      }
      expect(hash.digest('hex')).toBe(info.digest);
    } finally {
      now = START;
    }
    // Swept with the clock still inside the link's life: the id verifies, the grant is gone.
    const later = await grant(randomBytes(100));
    await store.sweep(START + 2 * HOUR);
    expect(await errorOf(await fetch(later.url))).toMatchObject({ status: 404, code: 'DOWNLOAD_NOT_FOUND' });
  });

  it('never passes a file that shrank mid-download off as whole: the connection is cut', async () => {
    const { url, info } = await grant(randomBytes(32 * 1024 * 1024));
    const response = await fetch(url);
    expect(response.headers.get('content-length')).toBe(String(32 * 1024 * 1024));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    truncateSync(join(dir, 'blobs', info.digest.slice(0, 2), info.digest), 2 * 1024 * 1024);
    const readAll = async () => {
      for (;;) if ((await reader.read()).done) return;
    };
    await expect(readAll()).rejects.toThrow();
    expect(reported.some((error) => /ended after|premature|truncat/i.test(String(error)))).toBe(true);
  });
});

/** Where the store keeps an artifact's bytes. */
function blobOf(digest: string): string {
  return join(dir, 'blobs', digest.slice(0, 2), digest);
}

/**
 * Overwrites `length` bytes of a stored file at `offset`, in place: same file,
 * same size, every byte flipped (so each differs, whatever it was).
 */
function rewrite(digest: string, offset: number, length: number): void {
  const fd = openSync(blobOf(digest), 'r+');
  try {
    const bytes = Buffer.alloc(length);
    readSync(fd, bytes, 0, length, offset);
    for (let i = 0; i < length; i++) bytes[i] = (bytes[i] as number) ^ 0xff;
    writeSync(fd, bytes, 0, length, offset);
  } finally {
    closeSync(fd);
  }
}

/** Everything a download delivers before it ends, and whether it ended cleanly. */
async function received(response: Response): Promise<{ bytes: number; cut: boolean }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes, cut: false };
      bytes += value.length;
    }
  } catch {
    return { bytes, cut: true };
  }
}

describe('bytes that do not match the digest they are served under', () => {
  it('have their connection cut before the last bytes, whole or in part, the ETag notwithstanding', async () => {
    const size = 5 * 1024 * 1024;
    const { url, info } = await grant(randomBytes(size));
    // Same size, other bytes, far from the parts asked for: only the whole file's hash tells.
    rewrite(info.digest, size - 100, 10);
    const before = reported.length;
    for (const range of [undefined, 'bytes=0-99', 'bytes=2097152-3145727', `bytes=-${size}`]) {
      // A part sent in one piece is held back whole, headers and all: then nothing arrives.
      const response = await fetch(url, range ? { headers: { range } } : {}).catch(() => undefined);
      if (!response) continue;
      expect(response.status, range).toBe(range ? 206 : 200);
      expect(response.headers.get('etag')).toBe(`"${info.digest}"`);
      const got = await received(response);
      expect(got.cut, range).toBe(true);
      expect(got.bytes).toBeLessThan(Number(response.headers.get('content-length')));
    }
    const codes = reported.slice(before).map((error) => (error as { code?: string }).code);
    expect(codes).toEqual(Array(4).fill('ARTIFACT_INTEGRITY_FAILED'));
  });

  it('are caught after earlier downloads verified the file: a write changes what was verified', async () => {
    const size = 3 * 1024 * 1024;
    const bytes = randomBytes(size);
    const { url, info } = await grant(bytes);
    // Verified whole once; the next downloads of the unchanged file are not hashed again.
    for (const range of [undefined, 'bytes=1024-2047']) {
      const response = await fetch(url, range ? { headers: { range } } : {});
      const body = Buffer.from(await response.arrayBuffer());
      expect(body.equals(range ? bytes.subarray(1024, 2048) : bytes), range).toBe(true);
    }
    // Rewritten in place, same size: its change time moved, so it is hashed again, and refused.
    rewrite(info.digest, size - 100, 10);
    for (const range of [undefined, 'bytes=1024-2047']) {
      const got = await fetch(url, range ? { headers: { range } } : {}).then(received, () => ({
        bytes: 0,
        cut: true,
      }));
      expect(got.cut, range).toBe(true);
    }
  });

  it('cut a small file before any byte of it goes out', async () => {
    const { url, info } = await grant(Buffer.from('a small document'));
    rewrite(info.digest, 0, 1);
    await expect(fetch(url).then((response) => response.arrayBuffer())).rejects.toThrow();
  });

  it('are cut when the file changes during the download, the stream-only way too', async () => {
    const size = 24 * 1024 * 1024;
    const { url, info, downloadId } = await grant(randomBytes(size));
    const response = await fetch(url);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    rewrite(info.digest, size - 1024 * 1024, 1);
    let cut = false;
    try {
      for (;;) if ((await reader.read()).done) break;
    } catch {
      cut = true;
    }
    expect(cut).toBe(true);
    // A store offering streams only: read whole and hashed by the handler.
    const streaming = { open: store.open.bind(store), resolveGrant: store.resolveGrant.bind(store) };
    const handler = createDownloadHandler({ store: streaming, keyring, now: () => now });
    const local = createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    try {
      const at = `http://127.0.0.1:${(local.address() as AddressInfo).port}/d?id=${downloadId}`;
      for (const range of [undefined, 'bytes=0-9']) {
        const got = await fetch(at, range ? { headers: { range } } : {}).then(received, () => ({
          cut: true,
        }));
        expect(got.cut, range).toBe(true);
      }
    } finally {
      local.closeAllConnections();
      await new Promise((resolve) => local.close(resolve));
    }
  });

  it('a link planted at its name is refused before any byte (ARTIFACT_INTEGRITY_FAILED)', async () => {
    const secret = join(dir, 'secret.pem');
    writeFileSync(secret, 'not for download!');
    const linked = await grant(Buffer.from('same length bytes'));
    unlinkSync(blobOf(linked.info.digest));
    symlinkSync(secret, blobOf(linked.info.digest));
    const answer = await fetch(linked.url);
    expect([answer.status, answer.headers.get('x-download-error-code')]).toEqual([
      500,
      'ARTIFACT_INTEGRITY_FAILED',
    ]);
    expect(await answer.text()).not.toContain('not for download');
  });
});

describe('a store that offers streams only', () => {
  it('is piped: whole, in part, and cut when the stream ends short', async () => {
    const streaming = { open: store.open.bind(store), resolveGrant: store.resolveGrant.bind(store) };
    const handler = createDownloadHandler({ store: streaming, keyring, now: () => now });
    const local = createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const at = (id: string) => `http://127.0.0.1:${(local.address() as AddressInfo).port}/d?id=${id}`;
    try {
      const { downloadId } = await grant(BYTES);
      expect(await (await fetch(at(downloadId))).text()).toBe(BYTES.toString());
      const part = await fetch(at(downloadId), { headers: { range: 'bytes=3-4' } });
      expect([part.status, await part.text()]).toEqual([206, '34']);
      const big = await grant(randomBytes(32 * 1024 * 1024));
      const response = await fetch(at(big.downloadId));
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      truncateSync(join(dir, 'blobs', big.info.digest.slice(0, 2), big.info.digest), 2 * 1024 * 1024);
      const readAll = async () => {
        for (;;) if ((await reader.read()).done) return;
      };
      await expect(readAll()).rejects.toThrow();
    } finally {
      local.closeAllConnections();
      await new Promise((resolve) => local.close(resolve));
    }
  });
});
