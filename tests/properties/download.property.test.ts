import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDownloadHandler } from '../../src/artifacts/download-handler.ts';
import { FolderArtifactStore } from '../../src/artifacts/folder-store.ts';
import { Keyring } from '../../src/artifacts/keyring.ts';

/**
 * /api/download against generated requests, on a real node:http server: any
 * id (the real one altered anywhere, or any text at all), any Range header,
 * any method. Each request gets one answer; a refusal is JSON naming its
 * DOWNLOAD_* code (HEAD: the code in the header only); only the real id is
 * ever served, and what is served is exactly the bytes, or the range, asked.
 */

const HOUR = 3_600_000;
const BYTES = randomBytes(5000);
const CODES = [
  'DOWNLOAD_ID_MISSING',
  'DOWNLOAD_ID_MALFORMED',
  'DOWNLOAD_SIGNATURE_INVALID',
  'DOWNLOAD_EXPIRED',
  'DOWNLOAD_NOT_FOUND',
  'METHOD_NOT_ALLOWED',
];

let dir: string;
let store: FolderArtifactStore;
let server: Server;
let port: number;
let realId: string;
const failures: unknown[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'download-property-'));
  const keyring = Keyring.fromKeys([{ id: 'k1', secret: 'p'.repeat(32) }], { maxTtlMs: 2 * HOUR });
  store = FolderArtifactStore.open({ dir, keyring });
  const info = await store.put(BYTES, { mediaType: 'application/pdf', owner: 'token:a', ttlMs: HOUR });
  realId = (
    await store.createGrant({
      digest: info.digest,
      filename: 'report.pdf',
      mediaType: 'application/pdf',
      owner: 'token:a',
      ttlMs: HOUR,
    })
  ).downloadId;
  const handler = createDownloadHandler({ store, keyring, onError: (error) => failures.push(error) });
  server = createServer((req, res) => {
    handler(req, res).catch((error) => {
      failures.push(error);
      res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The real id with one character replaced, one removed, or text added. */
const alteredId = fc
  .tuple(fc.nat(), fc.constantFrom('replace', 'remove', 'append'), fc.string({ minLength: 1, maxLength: 3 }))
  .map(([at, how, text]) => {
    const index = at % realId.length;
    if (how === 'remove') return realId.slice(0, index) + realId.slice(index + 1);
    if (how === 'append') return realId + text;
    const replaced = realId.slice(0, index) + text + realId.slice(index + 1);
    return replaced === realId ? `${realId}x` : replaced;
  });

const idQuery = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ real: true, query: () => `id=${encodeURIComponent(realId)}` }) },
  {
    weight: 3,
    arbitrary: alteredId.map((id) => ({ real: false, query: () => `id=${encodeURIComponent(id)}` })),
  },
  {
    weight: 2,
    arbitrary: fc
      .string({ maxLength: 300 })
      .map((text) => ({ real: false, query: () => `id=${encodeURIComponent(text)}` })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      { real: false, query: () => '' },
      { real: false, query: () => 'id=' },
      { real: false, query: () => `id=${encodeURIComponent(realId)}&id=${encodeURIComponent(realId)}` },
      { real: false, query: () => 'id=%2e%2e%2f%2e%2e%2fetc%2fpasswd' },
      { real: false, query: () => 'id=%00' },
    ),
  },
);

const range = fc.option(
  fc.oneof(
    fc.tuple(fc.nat(6000), fc.nat(6000)).map(([a, b]) => `bytes=${a}-${b}`),
    fc.nat(6000).map((a) => `bytes=${a}-`),
    fc.nat(6000).map((n) => `bytes=-${n}`),
    fc.string({ maxLength: 20 }).map((text) => `bytes=${text}`),
    fc.constantFrom('bytes=0-1,5-9', 'items=0-4', 'bytes=--', 'bytes=99999999999999999999-'),
  ),
  { nil: undefined },
);

const method = fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH');

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function send(path: string, verb: string, rangeHeader: string | undefined): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: verb, headers: rangeHeader ? { range: rangeHeader } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The slice a Range header asks of the bytes, as the handler reads it; undefined: the whole file. */
function expectedSlice(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'none' | undefined {
  const match = header === undefined ? null : /^\s*bytes\s*=\s*(\d{0,15})\s*-\s*(\d{0,15})\s*$/i.exec(header);
  if (!match) return undefined;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return undefined;
  if (first === '') {
    const suffix = Number(last);
    return suffix === 0 ? 'none' : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return undefined;
  if (start >= size) return 'none';
  return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
}

describe('/api/download under generated requests', () => {
  it('serves only the real id, exactly what is asked, and refuses the rest with its code', async () => {
    await fc.assert(
      fc.asyncProperty(idQuery, range, method, async (id, rangeHeader, verb) => {
        const reply = await send(`/api/download?${id.query()}`, verb, rangeHeader);
        const context = `${verb} ${id.query().slice(0, 120)} ${rangeHeader ?? ''} -> ${reply.status}`;
        if (!['GET', 'HEAD'].includes(verb)) {
          expect(reply.status, context).toBe(405);
          return;
        }
        if (reply.status >= 400 && reply.status !== 416) {
          expect(id.real, context).toBe(false);
          const code = reply.headers['x-download-error-code'];
          expect(CODES, context).toContain(code);
          if (verb === 'GET') expect(JSON.parse(reply.body.toString()).error.code, context).toBe(code);
          else expect(reply.body.length, context).toBe(0);
          return;
        }
        expect(id.real, context).toBe(true);
        const slice = expectedSlice(rangeHeader, BYTES.length);
        if (slice === 'none') {
          expect(reply.status, context).toBe(416);
          expect(reply.headers['content-range'], context).toBe(`bytes */${BYTES.length}`);
          return;
        }
        const wanted = slice === undefined ? BYTES : BYTES.subarray(slice.start, slice.end + 1);
        expect(reply.status, context).toBe(slice === undefined ? 200 : 206);
        expect(Number(reply.headers['content-length']), context).toBe(wanted.length);
        if (verb === 'GET') expect(reply.body.equals(wanted), context).toBe(true);
        else expect(reply.body.length, context).toBe(0);
      }),
      { numRuns: 400 },
    );
    expect(failures).toEqual([]);
  });
});
