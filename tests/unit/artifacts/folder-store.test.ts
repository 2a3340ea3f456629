import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderArtifactStore } from '../../../src/artifacts/folder-store.ts';
import { Keyring } from '../../../src/artifacts/keyring.ts';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { LEDGER_SCHEMA_VERSION, Ledger } from '../../../src/ledger/index.ts';
import { callRecord } from '../ledger/fixtures.ts';

const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'artifact-store-'));
  folders.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

const HOUR = 3_600_000;
const OPTIONS = { mediaType: 'application/pdf', owner: 'token:alice', ttlMs: HOUR };
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function text(stream: Readable | undefined): Promise<string> {
  if (!stream) throw new Error('no stream');
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
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

/** What is left in the store's folder for temporary files. */
function temporaries(dir: string): string[] {
  return existsSync(join(dir, 'tmp')) ? readdirSync(join(dir, 'tmp')) : [];
}

describe('FolderArtifactStore', () => {
  it('puts bytes under their digest and reads them back, whole or in part', async () => {
    let now = Date.UTC(2026, 0, 1);
    const dir = folder();
    const store = FolderArtifactStore.open({ dir, now: () => now });
    const bytes = Buffer.from('hello, artifact');
    const info = await store.put(bytes, OPTIONS);
    expect(info).toEqual({
      digest: sha256(bytes),
      size: bytes.length,
      mediaType: 'application/pdf',
      owner: 'token:alice',
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + HOUR).toISOString(),
    });
    expect(existsSync(join(dir, 'blobs', info.digest.slice(0, 2), info.digest))).toBe(true);
    expect(await store.info(info.digest)).toEqual(info);
    expect(await text(await store.open(info.digest))).toBe('hello, artifact');
    expect(await text(await store.open(info.digest, { start: 7, end: 14 }))).toBe('artifact');
    expect(temporaries(dir)).toEqual([]);
    now += HOUR;
    expect(await store.info(info.digest)).toBeUndefined();
    await store.close();
  });

  it('streams a source into place, and keeps one copy of the same bytes, expiring at the later time', async () => {
    let now = Date.UTC(2026, 0, 1);
    const dir = folder();
    const store = FolderArtifactStore.open({ dir, now: () => now });
    const chunks = Array.from({ length: 8 }, () => randomBytes(64 * 1024));
    const first = await store.put(Readable.from(chunks), OPTIONS);
    expect(first.digest).toBe(sha256(Buffer.concat(chunks)));
    now += 1000;
    const again = await store.put(Buffer.concat(chunks), { ...OPTIONS, ttlMs: 2 * HOUR });
    expect(again.digest).toBe(first.digest);
    expect(again.createdAt).toBe(first.createdAt);
    expect(again.expiresAt).toBe(new Date(now + 2 * HOUR).toISOString());
    // An earlier expiry never shortens a later one.
    const shorter = await store.put(Buffer.concat(chunks), { ...OPTIONS, ttlMs: 1000 });
    expect(shorter.expiresAt).toBe(again.expiresAt);
    expect(readdirSync(join(dir, 'blobs', first.digest.slice(0, 2)))).toEqual([first.digest]);
    await store.close();
  });

  it('refuses a source larger than maxBytes, leaving no file and no row', async () => {
    const dir = folder();
    const store = FolderArtifactStore.open({ dir });
    const source = Readable.from([randomBytes(1000), randomBytes(1000)]);
    const refused = await failure(store.put(source, { ...OPTIONS, maxBytes: 1500 }));
    expect(refused.code).toBe('INPUT_TOO_LARGE');
    expect(source.destroyed).toBe(true);
    expect(temporaries(dir)).toEqual([]);
    expect(existsSync(join(dir, 'blobs'))).toBe(false);
    await store.close();
  });

  it('removes its temporary file when the source fails', async () => {
    const dir = folder();
    const store = FolderArtifactStore.open({ dir });
    const source = new PassThrough();
    const put = store.put(source, OPTIONS);
    source.write(randomBytes(4096));
    await new Promise((resolve) => setImmediate(resolve));
    source.destroy(new Error('the producer crashed'));
    const refused = await failure(put);
    expect(refused.code).toBe('INPUT_UNREADABLE');
    expect(refused.message).toContain('the producer crashed');
    expect(temporaries(dir)).toEqual([]);
    await store.close();
  });

  it('refuses digests that are not SHA-256 hex, so no path can be named', async () => {
    const store = FolderArtifactStore.open({ dir: folder() });
    for (const digest of ['../../etc/passwd', '%2e%2e', `${'a'.repeat(63)}\u0000`, 'A'.repeat(64), '']) {
      expect((await failure(store.info(digest))).code).toBe('INVALID_ARGUMENT');
      expect((await failure(store.open(digest))).code).toBe('INVALID_ARGUMENT');
    }
    await store.close();
  });

  it('refuses media types that could break a header', async () => {
    const store = FolderArtifactStore.open({ dir: folder() });
    for (const mediaType of ['text/plain\r\nx-injected: 1', 'pdf', 'text/plain; charset="a\u0000"']) {
      expect((await failure(store.put(Buffer.from('x'), { ...OPTIONS, mediaType }))).code).toBe(
        'INVALID_ARGUMENT',
      );
    }
    expect(
      (await store.put(Buffer.from('x'), { ...OPTIONS, mediaType: 'text/plain; charset=utf-8' })).size,
    ).toBe(1);
    await store.close();
  });

  it('sweeps expired artifacts, their grants and their files; a file opened before keeps reading', async () => {
    let now = Date.UTC(2026, 0, 1);
    const dir = folder();
    const store = FolderArtifactStore.open({ dir, now: () => now });
    const kept = await store.put(Buffer.from('kept'), { ...OPTIONS, ttlMs: 3 * HOUR });
    const gone = await store.put(randomBytes(3 * 1024 * 1024), OPTIONS);
    const { grant } = await store.createGrant({
      digest: gone.digest,
      filename: 'report.pdf',
      mediaType: 'application/pdf',
      owner: 'token:alice',
      ttlMs: HOUR,
    });
    const reading = await store.open(gone.digest);
    now += HOUR + 1000;
    expect(await store.sweep()).toBe(1);
    expect(existsSync(join(dir, 'blobs', gone.digest.slice(0, 2), gone.digest))).toBe(false);
    expect(await store.resolveGrant(grant.grantId)).toBeUndefined();
    expect(await store.open(gone.digest)).toBeUndefined();
    expect(await store.info(kept.digest)).toBeDefined();
    // POSIX: the unlinked file stays readable through the descriptor opened before.
    let read = 0;
    for await (const chunk of reading as Readable) read += (chunk as Buffer).length;
    expect(read).toBe(gone.size);
    await store.close();
  });

  it('grants downloads: the grant row, a signed id, the bytes kept at least as long', async () => {
    let now = Date.UTC(2026, 0, 1);
    const store = FolderArtifactStore.open({
      dir: folder(),
      now: () => now,
      keyring: Keyring.fromKeys([{ id: 'k1', secret: 'k'.repeat(32) }], { maxTtlMs: 2 * HOUR }),
    });
    const info = await store.put(Buffer.from('pdf bytes'), { ...OPTIONS, ttlMs: 1000 });
    const issued = await store.createGrant({
      digest: info.digest,
      filename: '../../etc/passwd',
      mediaType: 'application/pdf',
      owner: 'token:alice',
      ttlMs: 2 * HOUR,
    });
    expect(issued.grant.filename).toBe('_.._etc_passwd');
    expect(issued.downloadId.startsWith(`${issued.grant.grantId}.`)).toBe(true);
    expect(issued.downloadId.split('.')[2]).toBe('k1');
    const resolved = await store.resolveGrant(issued.grant.grantId);
    expect(resolved?.grant).toEqual(issued.grant);
    expect(resolved?.artifact.expiresAt).toBe(new Date(issued.grant.expiresAt).toISOString());
    // Longer than any link the keyring's rotation allows for: refused.
    const tooLong = await failure(
      store.createGrant({ ...issued.grant, digest: info.digest, ttlMs: 3 * HOUR }),
    );
    expect(tooLong.code).toBe('INVALID_ARGUMENT');
    // No such artifact.
    now += 3 * HOUR;
    const missing = await failure(store.createGrant({ ...issued.grant, ttlMs: HOUR }));
    expect(missing.code).toBe('NOT_FOUND');
    expect(await store.resolveGrant('not-a-grant')).toBeUndefined();
    await store.close();
  });

  it('fails with DOWNLOAD_RENDER_FAILED when the file on disk is shorter than recorded', async () => {
    const dir = folder();
    const store = FolderArtifactStore.open({ dir });
    const bytes = randomBytes(10_000);
    const info = await store.put(bytes, OPTIONS);
    truncateSync(join(dir, 'blobs', info.digest.slice(0, 2), info.digest), 5000);
    expect((await failure(store.open(info.digest))).code).toBe('DOWNLOAD_RENDER_FAILED');
    // A second put of the same bytes puts the whole file back.
    await store.put(bytes, OPTIONS);
    expect((await text(await store.open(info.digest))).length).toBeGreaterThan(0);
    let read = 0;
    for await (const chunk of (await store.open(info.digest)) as Readable) read += (chunk as Buffer).length;
    expect(read).toBe(10_000);
    await store.close();
  });

  it('says ARTIFACT_STORE_UNAVAILABLE when its folder is removed under it, and recovers when it is back', async () => {
    const root = folder();
    const dir = join(root, 'artifacts');
    const store = FolderArtifactStore.open({ dir, databasePath: join(root, 'meta.sqlite') });
    await store.put(Buffer.from('before'), OPTIONS);
    // Removed while a put is streaming (its temporary file open, its source being read): the rename into place fails.
    let reading: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      reading = resolve;
    });
    const source = new Readable({ read: () => reading() });
    const put = store.put(source, OPTIONS);
    await started;
    // Retried: the put's own file operations may still be under way on other threads.
    rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    source.push(Buffer.from('during'));
    source.push(null);
    const refused = await failure(put);
    expect(refused.code).toBe('ARTIFACT_STORE_UNAVAILABLE');
    expect(refused.message).toMatch(/folder is gone/);
    // The next put makes its folders again.
    expect((await store.put(Buffer.from('after'), OPTIONS)).size).toBe(5);
    await store.close();
  });

  it('says ARTIFACT_STORE_UNAVAILABLE with ENOSPC when the disk is full, leaving no temporary file', async (context) => {
    const root = folder();
    const dir = join(root, 'small');
    mkdirSync(dir);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir], { stdio: 'ignore' });
    } catch {
      context.skip('a small file system cannot be mounted here (needs root)');
      return;
    }
    try {
      const store = FolderArtifactStore.open({ dir, databasePath: join(root, 'meta.sqlite') });
      const refused = await failure(
        store.put(Readable.from([randomBytes(200_000), randomBytes(200_000)]), OPTIONS),
      );
      expect(refused.code).toBe('ARTIFACT_STORE_UNAVAILABLE');
      expect(refused.details).toMatchObject({ errno: 'ENOSPC' });
      expect(refused.message).toMatch(/disk is full/);
      expect(temporaries(dir)).toEqual([]);
      // Space is back once the partial file is gone: a smaller artifact fits.
      expect((await store.put(randomBytes(100_000), OPTIONS)).size).toBe(100_000);
      await store.close();
    } finally {
      execFileSync('umount', [dir]);
    }
  });

  it('leaves nothing on disk until something is put', async () => {
    const dir = join(folder(), 'lazy');
    const store = FolderArtifactStore.open({ dir });
    expect(await store.info('a'.repeat(64))).toBeUndefined();
    expect(await store.sweep()).toBe(0);
    expect(existsSync(dir)).toBe(false);
    await store.close();
  });
});

describe('what the store serves: only the files it wrote, only as they were hashed', () => {
  const blob = (dir: string, digest: string) => join(dir, 'blobs', digest.slice(0, 2), digest);

  it('never follows a link planted at a blob: refused with ARTIFACT_INTEGRITY_FAILED, never read', async () => {
    const dir = folder();
    const store = FolderArtifactStore.open({ dir });
    const secret = join(dir, 'private.pem');
    writeFileSync(secret, 'the signing key, 36 bytes of secret!');
    const info = await store.put(Buffer.alloc(36, 'p'), OPTIONS);
    rmSync(blob(dir, info.digest));
    symlinkSync(secret, blob(dir, info.digest));
    // The size recorded and the linked file's agree: only refusing the link keeps it in.
    expect((await failure(store.openFile(info.digest))).code).toBe('ARTIFACT_INTEGRITY_FAILED');
    expect((await failure(store.open(info.digest))).code).toBe('ARTIFACT_INTEGRITY_FAILED');
    // A put of the same bytes puts the file back in place of the link.
    await store.put(Buffer.alloc(36, 'p'), OPTIONS);
    expect(await text(await store.open(info.digest))).toBe('p'.repeat(36));
    await store.close();
  });

  it('reads only a regular file: a folder or a pipe at its name is refused at once', async (context) => {
    const dir = folder();
    const store = FolderArtifactStore.open({ dir });
    const folderAt = await store.put(Buffer.from('a folder now'), OPTIONS);
    rmSync(blob(dir, folderAt.digest));
    mkdirSync(blob(dir, folderAt.digest));
    expect((await failure(store.openFile(folderAt.digest))).code).toBe('ARTIFACT_INTEGRITY_FAILED');
    if (process.platform === 'win32') context.skip('no named pipes in the file system');
    const pipeAt = await store.put(Buffer.from('a pipe now'), OPTIONS);
    rmSync(blob(dir, pipeAt.digest));
    execFileSync('mkfifo', [blob(dir, pipeAt.digest)]);
    // Opened without waiting for a writer, then refused: no download hangs on it.
    expect((await failure(store.openFile(pipeAt.digest))).code).toBe('ARTIFACT_INTEGRITY_FAILED');
    await store.close();
  });

  it('fails a stream before its last bytes when the file no longer matches its digest, a range too', async () => {
    const dir = folder();
    const store = FolderArtifactStore.open({ dir });
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const info = await store.put(bytes, OPTIONS);
    // Same size, in place, far from the range read below: the last byte flipped, so it differs
    // whatever it was (a fixed 'X' left the file unchanged once in 256 runs).
    const fd = openSync(blob(dir, info.digest), 'r+');
    writeSync(fd, Buffer.from([(bytes.at(-1) as number) ^ 0xff]), 0, 1, bytes.length - 1);
    closeSync(fd);
    for (const range of [undefined, { start: 0, end: 9 }, { start: 1024 * 1024, end: 2 * 1024 * 1024 }]) {
      let received = 0;
      const reading = (async () => {
        for await (const chunk of (await store.open(info.digest, range)) as Readable)
          received += (chunk as Buffer).length;
      })();
      expect((await failure(reading)).code).toBe('ARTIFACT_INTEGRITY_FAILED');
      expect(received).toBeLessThan(range ? range.end - range.start + 1 : bytes.length);
    }
    await store.close();
  });
});

describe('sharing the ledger file', () => {
  it('ledger first: the store adds its tables, the ledger still opens, for writing and read-only', async () => {
    const dir = folder();
    const file = join(dir, 'ledger.sqlite');
    const ledger = Ledger.open(file);
    ledger.insert(callRecord('11111111-1111-4111-8111-111111111111', 'echo').record);
    const store = FolderArtifactStore.open({ dir: join(dir, 'artifacts'), databasePath: file });
    const info = await store.put(Buffer.from('shared'), OPTIONS);
    ledger.close();
    const version = new DatabaseSync(file, { readOnly: true });
    // The store's tables leave the ledger's schema version as the ledger set it.
    expect(version.prepare('PRAGMA user_version').get()).toEqual({ user_version: LEDGER_SCHEMA_VERSION });
    version.close();
    const reader = Ledger.open(file, { readOnly: true });
    expect(reader.list()).toHaveLength(1);
    reader.close();
    const writer = Ledger.open(file);
    writer.insert(callRecord('22222222-2222-4222-8222-222222222222', 'echo').record);
    writer.close();
    expect(await store.info(info.digest)).toMatchObject({ size: 6 });
    await store.close();
  });

  it('store first: a file holding only the store is not taken for a ledger', async () => {
    const dir = folder();
    const file = join(dir, 'store.sqlite');
    const store = FolderArtifactStore.open({ dir: join(dir, 'artifacts'), databasePath: file });
    await store.put(Buffer.from('alone'), OPTIONS);
    await store.close();
    for (const options of [{}, { readOnly: true }]) {
      let code: string | undefined;
      try {
        Ledger.open(file, options).close();
      } catch (error) {
        code = (error as EnvelopeError).code;
      }
      expect(code).toBe('LEDGER_NOT_A_LEDGER');
    }
  });

  it('refuses a database file that is not SQLite with a clear code', () => {
    const dir = folder();
    const file = join(dir, 'not.sqlite');
    writeFileSync(file, 'plain text, not SQLite at all; long enough for a header\n');
    expect(() => FolderArtifactStore.open({ dir, databasePath: file })).toThrow(
      expect.objectContaining({ code: 'ARTIFACT_STORE_UNAVAILABLE' }),
    );
  });
});

describe('FolderArtifactStore after a crash of the machine', () => {
  /** The store's row for an artifact, read from its database. */
  function rowOf(databasePath: string, digest: string): Record<string, unknown> | undefined {
    const db = new DatabaseSync(databasePath, { readOnly: true });
    try {
      return db.prepare('SELECT * FROM artifacts WHERE digest = ?').get(digest) as
        | Record<string, unknown>
        | undefined;
    } finally {
      db.close();
    }
  }

  it('names the boot a put was written in until a sweep has flushed its file', async () => {
    const dir = folder();
    const databasePath = join(dir, 'meta.sqlite');
    const store = FolderArtifactStore.open({ dir, databasePath });
    const { digest } = await store.put(Buffer.from('flushed by the sweep'), OPTIONS);
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    expect(rowOf(databasePath, digest)).toMatchObject({ digest, unsynced_boot: boot });
    await store.sweep();
    expect(rowOf(databasePath, digest)).toMatchObject({ digest, unsynced_boot: null });
    await store.close();
  });

  it('hashes bytes written unflushed in another boot before reading them: damaged, they go; whole, they stay', async () => {
    const dir = folder();
    const databasePath = join(dir, 'meta.sqlite');
    const before = FolderArtifactStore.open({ dir, databasePath });
    const damaged = await before.put(Buffer.from('lost in the crash'), OPTIONS);
    const whole = await before.put(Buffer.from('reached the disk'), OPTIONS);
    const { downloadId } = await before.createGrant({
      digest: damaged.digest,
      filename: 'lost.pdf',
      mediaType: 'application/pdf',
      owner: 'token:alice',
      ttlMs: HOUR,
    });
    await before.close();
    // As a power cut leaves them: rows written in a boot that is over, one file's bytes zeroed.
    const db = new DatabaseSync(databasePath);
    db.prepare("UPDATE artifacts SET unsynced_boot = 'an-earlier-boot'").run();
    db.close();
    const blob = (digest: string) => join(dir, 'blobs', digest.slice(0, 2), digest);
    writeFileSync(blob(damaged.digest), Buffer.alloc(damaged.size));

    const after = FolderArtifactStore.open({ dir, databasePath });
    expect(await after.open(damaged.digest)).toBeUndefined();
    expect(rowOf(databasePath, damaged.digest)).toBeUndefined();
    expect(existsSync(blob(damaged.digest))).toBe(false);
    // Its grant went with it.
    expect(await after.resolveGrant(downloadId.split('.')[0] as string)).toBeUndefined();
    expect(await text(await after.open(whole.digest))).toBe('reached the disk');
    expect(rowOf(databasePath, whole.digest)).toMatchObject({ unsynced_boot: null });
    await after.close();
  });

  it('adds its column to a table made before rows could be unflushed', async () => {
    const dir = folder();
    const databasePath = join(dir, 'meta.sqlite');
    const db = new DatabaseSync(databasePath);
    db.exec(`CREATE TABLE artifacts (digest TEXT PRIMARY KEY, size INTEGER NOT NULL, media_type TEXT NOT NULL,
      owner TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL) STRICT`);
    db.close();
    const store = FolderArtifactStore.open({ dir, databasePath });
    const { digest } = await store.put(Buffer.from('new column'), OPTIONS);
    expect(await text(await store.open(digest))).toBe('new column');
    await store.close();
  });
});
