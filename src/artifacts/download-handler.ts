/**
 * `GET /api/download?id=…` on node:http: the signed id is checked first (shape,
 * key, signature, expiry) without touching the store, then the grant and its
 * artifact are looked up, and only then are bytes read. Every refusal is JSON
 * `{ "error": { "code", "message" } }` with the code repeated in
 * `X-Download-Error-Code`, so a client can tell a forged link from an expired
 * one from a vanished file before reading a body.
 *
 * Bytes are streamed in constant memory, hashed as they go (with the rest of
 * the file, for a range), and the last of them are sent only once the whole
 * file matched the digest it is served under (its ETag). A file that turns out
 * shorter than announced, or whose bytes do not match, is never passed off as
 * whole: the connection is destroyed, so the client sees a body shorter than
 * its Content-Length.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { describeErrorCode, EnvelopeError, type ErrorCode } from '../errors/index.ts';
import type { DownloadIdKeys } from './download-ids.ts';
import { contentDisposition, isMediaType } from './headers.ts';
import { resolveDownload } from './resolve-download.ts';
import { type SendOutcome, type StoredFile, sendFileRange } from './send-file.ts';
import type { ArtifactStore, ByteRange, FileBackedStore, GrantStore, OpenedArtifactFile } from './types.ts';

export interface DownloadHandlerOptions {
  /** With `openFile` (a store of local files), bytes are sent through reused buffers; else `open`'s stream of the whole file is read. */
  store: Pick<ArtifactStore, 'open'> & Pick<GrantStore, 'resolveGrant'> & Partial<FileBackedStore>;
  keyring: DownloadIdKeys;
  /** Epoch milliseconds. */
  now?: () => number;
  /** Told of failures that are not the caller's (a file gone from disk, a read that failed). */
  onError?: (error: unknown) => void;
}

export type DownloadHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const ALLOW = 'GET, HEAD, OPTIONS';

/** What every answer carries: the bytes (or the error) are for this request only. */
const COMMON_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

type RangeAnswer = { kind: 'whole' } | { kind: 'part'; range: ByteRange } | { kind: 'unsatisfiable' };

/**
 * One `bytes=` range (`a-b`, `a-`, `-n`) against a size. Several ranges, other
 * units and syntax errors are answered with the whole file, as RFC 9110 allows.
 */
export function parseRange(header: string | undefined, size: number): RangeAnswer {
  if (header === undefined) return { kind: 'whole' };
  const match = /^\s*bytes\s*=\s*(\d{0,15})\s*-\s*(\d{0,15})\s*$/i.exec(header);
  if (!match) return { kind: 'whole' };
  const [, first, last] = match as unknown as [string, string, string];
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'part', range: { start: Math.max(0, size - suffix), end: size - 1 } };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  return { kind: 'part', range: { start, end } };
}

/** Whether If-None-Match names this entity tag (or `*`); weak tags compare equal, as RFC 9110 says for it. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

/** The `id` query parameters of a request target. */
function idsOf(target: string | undefined): string[] {
  const url = target ?? '';
  const query = url.indexOf('?');
  return query < 0 ? [] : new URLSearchParams(url.slice(query + 1)).getAll('id');
}

function sendFailure(
  res: ServerResponse,
  code: ErrorCode,
  message?: string,
  headers: Record<string, string> = {},
): void {
  const spec = describeErrorCode(code);
  const body = JSON.stringify({ error: { code, message: message ?? spec.message } });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(spec.httpStatus, {
    ...COMMON_HEADERS,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'x-download-error-code': code,
    ...headers,
  });
  res.end(body);
}

/** Sends from an open file through reused buffers, and closes it. */
async function sendFile(
  file: OpenedArtifactFile,
  start: number,
  length: number,
  res: ServerResponse,
  stored: StoredFile,
): Promise<SendOutcome> {
  try {
    return await sendFileRange(file.handle, start, length, res, stored);
  } finally {
    await file.handle.close().catch(() => {});
  }
}

/**
 * Sends bytes `start` to `start + length - 1` of a store's stream of the whole
 * file, hashing all of it, with the part's last chunk held back until the
 * digest matched (as sendFileRange does).
 */
async function pipeStream(
  stream: Readable,
  start: number,
  length: number,
  res: ServerResponse,
  stored: StoredFile,
): Promise<SendOutcome> {
  const hash = createHash('sha256');
  const end = start + length;
  let position = 0;
  let sent = 0;
  let held: Buffer | undefined;
  // A client that goes away ends the send at once, whatever is pending.
  let onClose: () => void = () => {};
  const closed = new Promise<never>((_resolve, reject) => {
    onClose = () => reject(new Error('the response closed before the file was sent'));
    res.once('close', onClose);
  });
  closed.catch(() => {});
  const write = (chunk: Buffer) =>
    Promise.race([
      new Promise<void>((resolve, reject) => {
        if (res.destroyed) reject(new Error('the response closed before the file was sent'));
        else res.write(chunk, (error) => (error ? reject(error) : resolve()));
      }),
      closed,
    ]);
  try {
    for await (const data of stream) {
      const chunk = data as Buffer;
      hash.update(chunk);
      const from = Math.max(position, start);
      const to = Math.min(position + chunk.length, end);
      const at = position;
      position += chunk.length;
      if (position > stored.size) return { sent, verdict: 'mismatch' };
      if (from >= to) continue;
      // The previous part goes once a later one exists: the last one waits for the digest.
      if (held) {
        await write(held);
        sent += held.length;
      }
      held = chunk.subarray(from - at, to - at);
    }
    if (position < stored.size) return { sent, verdict: 'short' };
    if (hash.digest('hex') !== stored.digest) return { sent, verdict: 'mismatch' };
    if (held) {
      await write(held);
      sent += held.length;
    }
    return { sent, verdict: sent === length ? 'whole' : 'short' };
  } finally {
    stream.destroy();
    res.off('close', onClose);
  }
}

export function createDownloadHandler(options: DownloadHandlerOptions): DownloadHandler {
  const now = options.now ?? Date.now;
  const report = options.onError ?? (() => {});

  return async function handleDownload(req, res) {
    const method = req.method ?? 'GET';
    if (method === 'OPTIONS') {
      res.writeHead(204, { ...COMMON_HEADERS, allow: ALLOW });
      res.end();
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      sendFailure(res, 'METHOD_NOT_ALLOWED', `${method} is not supported here; use GET or HEAD`, {
        allow: ALLOW,
      });
      return;
    }
    const ids = idsOf(req.url);
    if (ids.length > 1) {
      sendFailure(res, 'DOWNLOAD_ID_MALFORMED', 'Give one download id');
      return;
    }
    try {
      const found = await resolveDownload(ids[0], options, now());
      if (!found.ok) {
        sendFailure(res, found.code);
        return;
      }
      const { grant, artifact } = found;
      const etag = `"${artifact.digest}"`;
      const size = artifact.size;
      if (matchesEtag(req.headers['if-none-match'], etag)) {
        res.writeHead(304, { ...COMMON_HEADERS, etag, 'accept-ranges': 'bytes' });
        res.end();
        return;
      }
      const ifRange = req.headers['if-range'];
      const answer =
        ifRange === undefined || ifRange === etag
          ? parseRange(req.headers.range, size)
          : { kind: 'whole' as const };
      if (answer.kind === 'unsatisfiable') {
        res.writeHead(416, {
          ...COMMON_HEADERS,
          'content-range': `bytes */${size}`,
          'content-length': '0',
          etag,
        });
        res.end();
        return;
      }
      const range = answer.kind === 'part' ? answer.range : undefined;
      const length = range ? range.end - range.start + 1 : size;
      const file = options.store.openFile ? await options.store.openFile(artifact.digest) : undefined;
      // The whole file, even for a range: its digest names all of it.
      const stream = file || options.store.openFile ? undefined : await options.store.open(artifact.digest);
      if (!file && !stream) {
        const gone = new EnvelopeError(
          'DOWNLOAD_RENDER_FAILED',
          `Artifact ${artifact.digest} is recorded but its file is gone`,
        );
        report(gone);
        sendFailure(res, 'DOWNLOAD_RENDER_FAILED');
        return;
      }
      res.writeHead(range ? 206 : 200, {
        ...COMMON_HEADERS,
        'content-type': isMediaType(grant.mediaType) ? grant.mediaType : 'application/octet-stream',
        'content-length': String(length),
        'content-disposition': contentDisposition(grant.filename),
        etag,
        'accept-ranges': 'bytes',
        ...(range ? { 'content-range': `bytes ${range.start}-${range.end}/${size}` } : {}),
      });
      if (method === 'HEAD') {
        stream?.destroy();
        await file?.handle.close();
        res.end();
        return;
      }
      const stored = { size, digest: artifact.digest };
      let outcome: SendOutcome;
      try {
        outcome = file
          ? await sendFile(file, range?.start ?? 0, length, res, stored)
          : await pipeStream(stream as Readable, range?.start ?? 0, length, res, stored);
      } catch (error) {
        // The client went away, or the file could not be read: either way the body is not whole.
        if (!res.destroyed) report(error);
        res.destroy();
        return;
      }
      if (outcome.verdict !== 'whole') {
        report(
          outcome.verdict === 'mismatch'
            ? new EnvelopeError(
                'ARTIFACT_INTEGRITY_FAILED',
                `Artifact ${artifact.digest} on disk does not match its digest; its download was cut`,
                { digest: artifact.digest },
              )
            : new EnvelopeError(
                'DOWNLOAD_RENDER_FAILED',
                `Artifact ${artifact.digest} ended after ${outcome.sent} of ${length} bytes`,
              ),
        );
        res.destroy();
        return;
      }
      res.end();
    } catch (error) {
      if (
        error instanceof EnvelopeError &&
        (error.code === 'ARTIFACT_STORE_UNAVAILABLE' ||
          error.code === 'DOWNLOAD_RENDER_FAILED' ||
          error.code === 'ARTIFACT_INTEGRITY_FAILED')
      ) {
        report(error);
        sendFailure(res, error.code);
        return;
      }
      report(error);
      sendFailure(res, 'DOWNLOAD_RENDER_FAILED');
    }
  };
}
