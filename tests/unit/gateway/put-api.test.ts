import { mkdirSync, mkdtempSync, rmSync, watch, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteArtifactStore } from '../../../src/artifacts/remote-store.ts';
import { type ArtifactService, openArtifactService } from '../../../src/artifacts/service.ts';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { type PutApi, type SharingUpstream, startPutApi } from '../../../src/gateway/artifacts/put-api.ts';

/**
 * The gateway's artifact put API, in process over real loopback HTTP, with
 * the client upstreams use (RemoteArtifactStore): what a capability may do,
 * whose files it reaches, and every bound with its code.
 */

const HOUR = 3_600_000;
const folders: string[] = [];
let service: ArtifactService;
let api: PutApi;
let dir: string;

/** An upstream as the API sees one: a name, and a state that can turn `closed`. */
function upstream(name: string): SharingUpstream & { close(): void } {
  const listeners = new Set<(state: string) => void>();
  return {
    name,
    onStateChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      for (const listener of [...listeners]) listener('closed');
    },
  };
}

/** The client for one start of an upstream. */
function started(of: SharingUpstream): RemoteArtifactStore {
  const env = api.environmentFor(of);
  return new RemoteArtifactStore({
    url: env.MCP_ENVELOPE_ARTIFACTS_URL as string,
    token: env.MCP_ENVELOPE_ARTIFACTS_TOKEN as string,
  });
}

async function failure(promise: Promise<unknown>): Promise<EnvelopeError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

const TEXT = { mediaType: 'text/plain', filename: 'note.txt' };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'put-api-'));
  folders.push(dir);
  service = openArtifactService({
    dir: join(dir, 'store'),
    ttlMs: HOUR,
    maxBytes: 1024,
    inlineMaxBytes: 1024,
    defaultReturnMode: 'url',
    downloadPath: '/api/download',
    sweepIntervalMs: 0,
  });
  service.useOrigin('http://127.0.0.1:9');
  api = await startPutApi(service, { maxInFlight: 1, maxLive: 3 });
});

afterAll(async () => {
  await api?.close();
  await service?.close();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

describe('the put API', () => {
  it('stores what is put, hashed and signed by the gateway, for the gateway lifetime, owned by the upstream', async () => {
    const files = started(upstream('files'));
    const before = Date.now();
    const put = await files.publish(Buffer.from('hello'), { ...TEXT, owner: 'token:alice' });
    expect(put).toMatchObject({
      sha256: '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
      sizeBytes: 5,
      filename: 'note.txt',
      mediaType: 'text/plain',
      downloadUrl: `http://127.0.0.1:9/api/download?id=${encodeURIComponent(put.downloadId)}`,
      resourceUri: `mcp-envelope://artifacts/${put.downloadId}`,
    });
    // The id's expiry is in whole seconds, rounded up, from the moment of the put.
    const after = Date.now();
    expect(Date.parse(put.expiresAt)).toBeLessThanOrEqual(after + HOUR + 1000);
    expect(Date.parse(put.expiresAt)).toBeGreaterThanOrEqual(before + HOUR - 1000);
    const stored = await service.store.resolveGrant(put.downloadId.split('.')[0] as string);
    expect(stored?.grant.owner).toMatch(/^upstream:files#[0-9a-f]{16}\/token:alice$/);
    const read = await files.read(put.downloadId);
    expect(read.ok && read.bytes.toString()).toBe('hello');
  });

  it("answers another upstream's files, and files stored by the gateway itself, as unknown", async () => {
    const mine = started(upstream('mine'));
    const theirs = started(upstream('theirs'));
    const put = await theirs.publish(Buffer.from('theirs'), TEXT);
    const own = await service.grant(Buffer.from('the gateway'), { ...TEXT, owner: 'token:bob' });
    for (const id of [put.downloadId, own.downloadId]) {
      expect(await mine.lookup(id)).toEqual({ ok: false, code: 'DOWNLOAD_NOT_FOUND' });
      expect(await mine.read(id)).toEqual({ ok: false, code: 'DOWNLOAD_NOT_FOUND' });
    }
    expect(await mine.lookup('not-an-id')).toEqual({ ok: false, code: 'DOWNLOAD_ID_MALFORMED' });
  });

  it('revokes a start’s capability when the upstream starts again, and all when it closes; its files stay its own', async () => {
    const restarting = upstream('restarting');
    const first = started(restarting);
    const put = await first.publish(Buffer.from('before the restart'), TEXT);
    const second = started(restarting);
    expect((await failure(first.lookup(put.downloadId))).code).toBe('UNAUTHORIZED');
    expect((await second.lookup(put.downloadId)).ok).toBe(true);
    restarting.close();
    expect((await failure(second.publish(Buffer.from('after'), TEXT))).code).toBe('UNAUTHORIZED');
  });

  it('takes no lifetime, nor anything but a media type, a filename and an owner label', async () => {
    const files = started(upstream('params'));
    const { MCP_ENVELOPE_ARTIFACTS_URL: url, MCP_ENVELOPE_ARTIFACTS_TOKEN: token } = api.environmentFor(
      upstream('raw'),
    );
    for (const [query, type] of [
      ['filename=a&ttl_ms=2592000000', 'text/plain'],
      ['filename=a&expires_at=2099-01-01', 'text/plain'],
      ['filename=a', 'not a media type'],
      ['filename=a&owner=..%0d%0ax', 'text/plain'],
    ] as const) {
      const response = await fetch(`${url}?${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': type },
        body: 'x',
      });
      expect([response.status, response.headers.get('x-error-code')], query).toEqual([
        400,
        'INVALID_ARGUMENT',
      ]);
    }
    expect((await failure(files.publish(Buffer.from('x'), { ...TEXT, owner: 'a b' }))).code).toBe(
      'INVALID_ARGUMENT',
    );
  });

  it('refuses a body over artifacts.maxBytes with INPUT_TOO_LARGE, leaving nothing behind', async () => {
    const files = started(upstream('large'));
    expect((await failure(files.publish(Buffer.alloc(1025), TEXT))).code).toBe('INPUT_TOO_LARGE');
    expect((await files.publish(Buffer.alloc(1024), TEXT)).sizeBytes).toBe(1024);
  });

  it('holds each upstream to its live files and its puts at once (RESOURCE_EXHAUSTED, retriable)', async () => {
    const busy = upstream('busy');
    const files = started(busy);
    for (let index = 0; index < 3; index++) await files.publish(Buffer.from(`file ${index}`), TEXT);
    const over = await failure(files.publish(Buffer.from('one more'), TEXT));
    expect([over.code, over.retriable]).toEqual(['RESOURCE_EXHAUSTED', true]);
    // Another upstream has its own count.
    const other = started(upstream('other'));
    const { MCP_ENVELOPE_ARTIFACTS_URL: url, MCP_ENVELOPE_ARTIFACTS_TOKEN: token } = api.environmentFor(
      upstream('slow'),
    );
    // A put whose body is still coming holds its place until it ends.
    const temporaries = join(dir, 'store', 'tmp');
    mkdirSync(temporaries, { recursive: true });
    const watcher = watch(temporaries);
    const writing = new Promise<void>((resolve) => watcher.once('change', () => resolve()));
    let answered: (status: number) => void = () => {};
    const slowStatus = new Promise<number>((resolve) => {
      answered = resolve;
    });
    const slow = request(`${url}?filename=slow.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
    });
    slow.on('response', (response) => {
      response.resume();
      answered(response.statusCode ?? 0);
    });
    slow.write('the first half, ');
    await writing;
    watcher.close();
    const second = await fetch(`${url}?filename=second.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
      body: 'x',
    });
    expect([second.status, second.headers.get('x-error-code')]).toEqual([503, 'RESOURCE_EXHAUSTED']);
    slow.end('the second half');
    expect(await slowStatus).toBe(201);
    expect((await other.publish(Buffer.from('mine'), TEXT)).sizeBytes).toBe(4);
  });

  it('answers a store failure with its code and stock message: the folder is never named', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'put-api-broken-'));
    folders.push(folder);
    const broken = openArtifactService({
      dir: join(folder, 'store'),
      ttlMs: HOUR,
      maxBytes: 1024,
      inlineMaxBytes: 1024,
      defaultReturnMode: 'url',
      downloadPath: '/api/download',
      sweepIntervalMs: 0,
    });
    // A file where its folder should be: nothing can be written.
    writeFileSync(join(folder, 'store'), 'not a folder');
    const brokenApi = await startPutApi(broken);
    try {
      const env = brokenApi.environmentFor(upstream('files'));
      const client = new RemoteArtifactStore({
        url: env.MCP_ENVELOPE_ARTIFACTS_URL as string,
        token: env.MCP_ENVELOPE_ARTIFACTS_TOKEN as string,
      });
      const refused = await failure(client.publish(Buffer.from('x'), TEXT));
      expect(refused.code).toBe('ARTIFACT_STORE_UNAVAILABLE');
      expect(refused.message).not.toContain(folder);
    } finally {
      await brokenApi.close();
      await broken.close();
    }
  });
});
