/**
 * The artifact store on one machine: bytes in a folder, named by their
 * SHA-256 (`<dir>/blobs/<first 2 hex>/<64 hex>`), metadata and download
 * grants in SQLite (the gateway's ledger file, or `<dir>/artifacts.sqlite`).
 *
 * A put streams into `<dir>/tmp/` while hashing, then renames into place in
 * the same synchronous step that records the row, so neither a reader nor the
 * sweeper ever sees a row without its bytes or half a file; a put that fails
 * leaves neither. A put does not wait for its bytes to reach the disk (an
 * fsync costs more than the rest of a put): its row names the boot it was
 * written in (`unsynced_boot`) until a sweep has flushed the file. Only a
 * crash of the machine loses unflushed bytes, and it changes the boot id, so a
 * row written unflushed in another boot is hashed again before its bytes are
 * read, and dropped if they no longer match: an artifact is lost, never served
 * damaged. Where no boot id can be read, a put flushes before it returns.
 *
 * A blob is opened without following a link, and only a regular file is read
 * (a link, a folder or a pipe planted at its name is refused); what `open`
 * streams is hashed as it goes and fails before its last bytes unless the
 * whole file matches its digest. So the store serves only the bytes it hashed
 * when they were put, whoever else can write to its folder.
 *
 * The store's tables sit beside the ledger's without touching its schema
 * version (the ledger's migrations own PRAGMA user_version). The database file is created on first write only, so
 * a store nothing was put in leaves nothing behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Readable } from 'node:stream';
import { EnvelopeError } from '../errors/index.ts';
import { signDownloadId } from './download-ids.ts';
import { isMediaType, sanitizeFilename } from './headers.ts';
import { Keyring } from './keyring.ts';
import type {
  ArtifactInfo,
  ArtifactSource,
  ArtifactStore,
  ByteRange,
  DownloadGrant,
  FileBackedStore,
  GrantRequest,
  GrantStore,
  IssuedGrant,
  OpenedArtifactFile,
  PutOptions,
  ResolvedGrant,
} from './types.ts';

export interface FolderStoreOptions {
  /** The folder holding blobs/, tmp/ and (by default) artifacts.sqlite and keys.json. */
  dir: string;
  /** The SQLite file for metadata: the ledger's file may be shared. Default `<dir>/artifacts.sqlite`. */
  databasePath?: string;
  /** Signs download ids. Default: keys kept in `<dir>/keys.json`. */
  keyring?: Keyring;
  /** The longest lifetime of a download link (for the default keyring). Default one hour. */
  maxTtlMs?: number;
  /** Epoch milliseconds. */
  now?: () => number;
}

const DIGEST = /^[0-9a-f]{64}$/;
const GRANT_ID = /^[0-9a-f]{32}$/;
/** Read-stream chunk size: large chunks keep a download's syscalls and event-loop turns few. */
export const READ_CHUNK_BYTES = 1 << 20;
/** Temporary files older than this are leftovers of a crashed put; sweep removes them. */
const STALE_TEMPORARY_MS = 3_600_000;
const MAX_OWNER_LENGTH = 512;
/**
 * How a blob is opened: never through a symbolic link (O_NOFOLLOW), and
 * without waiting for a writer should a pipe have been planted at its name
 * (O_NONBLOCK, which regular files ignore). Both are 0 where the system has
 * no such flag.
 */
const BLOB_OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS artifacts (
    digest TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    unsynced_boot TEXT
  ) STRICT;
  CREATE INDEX IF NOT EXISTS artifacts_expires_at ON artifacts (expires_at);
  CREATE TABLE IF NOT EXISTS download_grants (
    grant_id TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    filename TEXT NOT NULL,
    media_type TEXT NOT NULL,
    owner TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX IF NOT EXISTS download_grants_digest ON download_grants (digest);
`;

interface ArtifactRow {
  digest: string;
  size: number;
  media_type: string;
  owner: string;
  created_at: number;
  expires_at: number;
}

/** This boot of the machine (Linux), or undefined where the system does not say. */
const BOOT_ID: string | undefined = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
})();

interface GrantRow {
  grant_id: string;
  digest: string;
  filename: string;
  media_type: string;
  owner: string;
  expires_at: number;
}

const REASONS: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  ENOENT: 'its folder is gone',
  ENOTDIR: 'its folder is gone',
  EACCES: 'it may not be written',
  EPERM: 'it may not be written',
  EROFS: 'it is on a read-only file system',
  EIO: 'the disk failed',
};

/** A file-system or SQLite failure as ARTIFACT_STORE_UNAVAILABLE; EnvelopeErrors pass through. */
function storeError(error: unknown, dir: string): unknown {
  if (error instanceof EnvelopeError) return error;
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_SQLITE_ERROR') {
    const sqlite = (error as { errstr?: string }).errstr ?? (error as Error).message;
    return new EnvelopeError(
      'ARTIFACT_STORE_UNAVAILABLE',
      `Artifact store ${dir}: its database failed (${sqlite})`,
      { dir, sqlite },
      { cause: error },
    );
  }
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) {
    return new EnvelopeError(
      'ARTIFACT_STORE_UNAVAILABLE',
      `Artifact store ${dir} cannot be used: ${REASONS[code] ?? `the file system said ${code}`}`,
      { dir, errno: code },
      { cause: error },
    );
  }
  return error;
}

function checkDigest(digest: unknown): asserts digest is string {
  if (typeof digest !== 'string' || !DIGEST.test(digest)) {
    throw new EnvelopeError('INVALID_ARGUMENT', 'An artifact digest is 64 lower-case hex digits (SHA-256)', {
      digest: typeof digest === 'string' ? digest.slice(0, 80) : typeof digest,
    });
  }
}

function checkTtl(ttlMs: unknown, limit = Number.MAX_SAFE_INTEGER): asserts ttlMs is number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs <= 0 || ttlMs > limit) {
    throw new EnvelopeError(
      'INVALID_ARGUMENT',
      `ttlMs must be a whole number of milliseconds from 1 to ${limit}`,
      { ttlMs: String(ttlMs), limit },
    );
  }
}

function checkLabels(mediaType: unknown, owner: unknown): void {
  if (!isMediaType(mediaType)) {
    throw new EnvelopeError('INVALID_ARGUMENT', 'mediaType must be a media type such as application/pdf', {
      mediaType: String(mediaType).slice(0, 80),
    });
  }
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > MAX_OWNER_LENGTH) {
    throw new EnvelopeError(
      'INVALID_ARGUMENT',
      `owner must be a label of 1 to ${MAX_OWNER_LENGTH} characters`,
    );
  }
}

function infoOf(row: ArtifactRow): ArtifactInfo {
  return {
    digest: row.digest,
    size: row.size,
    mediaType: row.media_type,
    owner: row.owner,
    createdAt: new Date(row.created_at).toISOString(),
    expiresAt: new Date(row.expires_at).toISOString(),
  };
}

function grantOf(row: GrantRow): DownloadGrant {
  return {
    grantId: row.grant_id,
    digest: row.digest,
    expiresAt: row.expires_at,
    filename: row.filename,
    mediaType: row.media_type,
    owner: row.owner,
  };
}

async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  let written = 0;
  while (written < chunk.byteLength) {
    written += (await handle.write(chunk, written, chunk.byteLength - written)).bytesWritten;
  }
}

/** A source as chunks of bytes, however it came. */
async function* chunksOf(source: ArtifactSource): AsyncGenerator<Uint8Array> {
  if (source instanceof Uint8Array) {
    yield source;
    return;
  }
  for await (const chunk of source as AsyncIterable<Uint8Array | string>) {
    yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
  }
}

/** What was found at a blob's name that is not a file the store wrote: never read. */
function notAFile(digest: string, what: string): EnvelopeError {
  return new EnvelopeError(
    'ARTIFACT_INTEGRITY_FAILED',
    `Artifact ${digest} is ${what} on disk, not the file the store wrote; it is not served`,
    { digest },
  );
}

/**
 * The whole file's bytes, or a range of them, hashed from its first byte to
 * its last; the last bytes handed out wait until the whole file matched its
 * digest (ARTIFACT_INTEGRITY_FAILED otherwise, DOWNLOAD_RENDER_FAILED when it
 * ended early). Chunks are fresh buffers, since the reader keeps them.
 */
async function* verifiedChunks(
  handle: FileHandle,
  size: number,
  digest: string,
  range: ByteRange | undefined,
): AsyncGenerator<Buffer> {
  const hash = createHash('sha256');
  const start = range?.start ?? 0;
  const end = range ? range.end + 1 : size;
  let position = 0;
  let held: Buffer | undefined;
  try {
    while (position < size) {
      const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, size - position));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      const from = Math.max(position, start);
      const to = Math.min(position + bytesRead, end);
      const at = position;
      position += bytesRead;
      if (from >= to) continue;
      if (held) yield held;
      held = chunk.subarray(from - at, to - at);
    }
    if (position < size) {
      throw new EnvelopeError(
        'DOWNLOAD_RENDER_FAILED',
        `Artifact ${digest} ended after ${position} of ${size} bytes`,
        { digest, size: position, recorded: size },
      );
    }
    if (hash.digest('hex') !== digest) {
      throw new EnvelopeError(
        'ARTIFACT_INTEGRITY_FAILED',
        `Artifact ${digest} on disk does not match its digest`,
        {
          digest,
        },
      );
    }
    if (held) yield held;
  } finally {
    await handle.close().catch(() => {});
  }
}

export class FolderArtifactStore implements ArtifactStore, GrantStore, FileBackedStore {
  readonly dir: string;
  readonly databasePath: string;
  readonly keyring: Keyring;
  private readonly now: () => number;
  private db: DatabaseSync | undefined;
  private closed = false;

  private constructor(options: FolderStoreOptions) {
    this.dir = resolve(options.dir);
    this.databasePath = resolve(options.databasePath ?? join(this.dir, 'artifacts.sqlite'));
    this.now = options.now ?? Date.now;
    this.keyring =
      options.keyring ??
      Keyring.inFolder({
        dir: this.dir,
        now: this.now,
        ...(options.maxTtlMs === undefined ? {} : { maxTtlMs: options.maxTtlMs }),
      });
  }

  /**
   * A store over `dir`. The database is opened now when its file exists (so a
   * file that is not a database fails here), else when the first artifact is put.
   */
  static open(options: FolderStoreOptions): FolderArtifactStore {
    const store = new FolderArtifactStore(options);
    if (existsSync(store.databasePath)) store.database(true);
    return store;
  }

  async put(source: ArtifactSource, options: PutOptions): Promise<ArtifactInfo> {
    checkLabels(options.mediaType, options.owner);
    checkTtl(options.ttlMs);
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    const temporaries = join(this.dir, 'tmp');
    const temporary = join(temporaries, `${randomBytes(16).toString('hex')}.part`);
    let handle: FileHandle | undefined;
    const chunks = chunksOf(source);
    // A stream that fails before it is read must not become an uncaught error; the read below still sees it.
    const readable = source instanceof Readable ? source : undefined;
    const ignore = () => {};
    readable?.on('error', ignore);
    try {
      await mkdir(temporaries, { recursive: true });
      handle = await open(temporary, 'wx', 0o600);
      const hash = createHash('sha256');
      let size = 0;
      for (;;) {
        let step: IteratorResult<Uint8Array>;
        try {
          step = await chunks.next();
        } catch (error) {
          throw new EnvelopeError(
            'INPUT_UNREADABLE',
            `The artifact's bytes could not be read: ${(error as Error).message}`,
            {},
            { cause: error },
          );
        }
        if (step.done) break;
        const chunk = step.value;
        size += chunk.byteLength;
        if (size > maxBytes) {
          throw new EnvelopeError('INPUT_TOO_LARGE', `The artifact exceeds ${maxBytes} bytes`, {
            limit_bytes: maxBytes,
          });
        }
        // The write runs on the thread pool while this thread hashes the same bytes.
        const writing = writeAll(handle, chunk);
        hash.update(chunk);
        await writing;
      }
      // Without a boot id a crash could not be told afterwards: flush before the row is written.
      if (BOOT_ID === undefined) await handle.datasync();
      await handle.close();
      handle = undefined;
      const digest = hash.digest('hex');
      await mkdir(dirname(this.blobPath(digest)), { recursive: true });
      return this.commit(temporary, digest, size, options);
    } catch (error) {
      // Stop a stream that is still producing, and leave no temporary file behind.
      await chunks.return(undefined).catch(() => {});
      readable?.destroy();
      await handle?.close().catch(() => {});
      await rm(temporary, { force: true }).catch(() => {});
      throw storeError(error, this.dir);
    } finally {
      readable?.off('error', ignore);
    }
  }

  async info(digest: string, now: number = this.now()): Promise<ArtifactInfo | undefined> {
    checkDigest(digest);
    const row = this.run((db) =>
      db.prepare('SELECT * FROM artifacts WHERE digest = ? AND expires_at > ?').get(digest, now),
    ) as ArtifactRow | undefined;
    return row ? infoOf(row) : undefined;
  }

  /**
   * The bytes of a recorded artifact, or of a range of them; undefined when no
   * row names it or its file is gone. A file shorter than the recorded size
   * (damaged on disk) fails with DOWNLOAD_RENDER_FAILED rather than being read
   * as if whole, and anything but a regular file at its name with
   * ARTIFACT_INTEGRITY_FAILED. The stream reads the whole file, a range
   * included, and errors (ARTIFACT_INTEGRITY_FAILED) before its last bytes
   * unless they all match the digest. The file is open once this resolves, so
   * deleting it afterwards (sweep) does not cut the stream short.
   */
  async open(digest: string, range?: ByteRange): Promise<Readable | undefined> {
    const file = await this.openFile(digest);
    if (!file) return undefined;
    if (range && !(range.start >= 0 && range.end >= range.start && range.end < file.size)) {
      await file.handle.close();
      throw new EnvelopeError(
        'INVALID_ARGUMENT',
        `Range ${range.start}-${range.end} is outside 0-${file.size - 1}`,
      );
    }
    return Readable.from(verifiedChunks(file.handle, file.size, digest, range), { objectMode: false });
  }

  /**
   * The open file of a recorded artifact (the caller closes it), checked to be
   * a regular file (opened without following a link) holding the recorded
   * size; undefined when no row names it or its file is gone. Its bytes are
   * not checked here: whoever reads them hashes them (send-file.ts). Open, it
   * survives a sweep that deletes the file (POSIX unlink).
   */
  async openFile(digest: string): Promise<OpenedArtifactFile | undefined> {
    checkDigest(digest);
    const row = this.run((db) =>
      db.prepare('SELECT size, unsynced_boot FROM artifacts WHERE digest = ?').get(digest),
    ) as { size: number; unsynced_boot: string | null } | undefined;
    if (!row) return undefined;
    if (row.unsynced_boot !== null && row.unsynced_boot !== BOOT_ID && !(await this.survived(digest)))
      return undefined;
    const handle = await this.openBlob(digest);
    if (!handle) return undefined;
    const size = (await handle.stat()).size;
    if (size !== row.size) {
      await handle.close();
      throw new EnvelopeError(
        'DOWNLOAD_RENDER_FAILED',
        `Artifact ${digest} is ${size} bytes on disk but ${row.size} were stored`,
        { digest, size, recorded: row.size },
      );
    }
    return { handle, size };
  }

  /**
   * A blob's file, opened without following a link and checked (on the open
   * descriptor, so nothing can be swapped in between) to be a regular file;
   * undefined when there is none.
   */
  private async openBlob(digest: string): Promise<FileHandle | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.blobPath(digest), BLOB_OPEN_FLAGS);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      // What O_NOFOLLOW answers for a link: ELOOP on Linux and macOS, EMLINK on FreeBSD.
      if (code === 'ELOOP' || code === 'EMLINK') throw notAFile(digest, 'a symbolic link');
      throw storeError(error, this.dir);
    }
    const info = await handle.stat().catch(async (error: unknown) => {
      await handle.close().catch(() => {});
      throw storeError(error, this.dir);
    });
    if (!info.isFile()) {
      await handle.close();
      throw notAFile(digest, info.isDirectory() ? 'a folder' : 'not a regular file');
    }
    return handle;
  }

  /** Deletes expired artifacts, their grants and their files, and expired grants; returns how many artifacts went. */
  async sweep(now: number = this.now()): Promise<number> {
    const db = this.database(false);
    let removed = 0;
    if (db) {
      // One synchronous step: a put of the same bytes cannot slip between the row's deletion and the file's.
      try {
        const expired = (
          db.prepare('SELECT digest FROM artifacts WHERE expires_at <= ?').all(now) as { digest: string }[]
        ).map((row) => row.digest);
        db.exec('BEGIN IMMEDIATE');
        try {
          db.prepare(
            'DELETE FROM download_grants WHERE expires_at <= ? OR digest IN (SELECT digest FROM artifacts WHERE expires_at <= ?)',
          ).run(now, now);
          db.prepare('DELETE FROM artifacts WHERE expires_at <= ?').run(now);
          db.exec('COMMIT');
        } catch (error) {
          db.exec('ROLLBACK');
          throw error;
        }
        // Whatever is at the name goes, a folder planted there included (a link goes, not its target).
        for (const digest of expired) rmSync(this.blobPath(digest), { recursive: true, force: true });
        removed = expired.length;
      } catch (error) {
        throw storeError(error, this.dir);
      }
    }
    await this.removeStaleTemporaries(now);
    await this.flushWritten();
    return removed;
  }

  async createGrant(request: GrantRequest): Promise<IssuedGrant> {
    checkDigest(request.digest);
    checkLabels(request.mediaType, request.owner);
    checkTtl(request.ttlMs, this.keyring.maxTtlMs);
    const now = this.now();
    // Whole seconds: the id carries its expiry in seconds, and both must agree.
    const expiresAt = Math.ceil((now + request.ttlMs) / 1000) * 1000;
    const grant: DownloadGrant = {
      grantId: randomBytes(16).toString('hex'),
      digest: request.digest,
      expiresAt,
      filename: sanitizeFilename(request.filename),
      mediaType: request.mediaType,
      owner: request.owner,
    };
    try {
      const db = this.database(true) as DatabaseSync;
      db.exec('BEGIN IMMEDIATE');
      try {
        const present = db
          .prepare('SELECT 1 AS present FROM artifacts WHERE digest = ? AND expires_at > ?')
          .get(grant.digest, now);
        if (!present) {
          throw new EnvelopeError('NOT_FOUND', `No stored artifact ${grant.digest}`, {
            digest: grant.digest,
          });
        }
        db.prepare(
          'INSERT INTO download_grants (grant_id, digest, filename, media_type, owner, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
        ).run(grant.grantId, grant.digest, grant.filename, grant.mediaType, grant.owner, grant.expiresAt);
        // The bytes live at least as long as a link to them.
        db.prepare('UPDATE artifacts SET expires_at = max(expires_at, ?) WHERE digest = ?').run(
          grant.expiresAt,
          grant.digest,
        );
        const downloadId = signDownloadId(grant.grantId, grant.expiresAt, this.keyring);
        db.exec('COMMIT');
        return { grant, downloadId };
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
    } catch (error) {
      throw storeError(error, this.dir);
    }
  }

  async resolveGrant(grantId: string, _now?: number): Promise<ResolvedGrant | undefined> {
    if (typeof grantId !== 'string' || !GRANT_ID.test(grantId)) return undefined;
    const row = this.run((db) =>
      db
        .prepare(
          `SELECT g.grant_id, g.digest, g.filename, g.media_type, g.owner, g.expires_at,
                  a.size, a.media_type AS artifact_media_type, a.owner AS artifact_owner,
                  a.created_at AS artifact_created_at, a.expires_at AS artifact_expires_at
             FROM download_grants g JOIN artifacts a ON a.digest = g.digest
            WHERE g.grant_id = ?`,
        )
        .get(grantId),
    ) as
      | (GrantRow & {
          size: number;
          artifact_media_type: string;
          artifact_owner: string;
          artifact_created_at: number;
          artifact_expires_at: number;
        })
      | undefined;
    if (!row) return undefined;
    return {
      grant: grantOf(row),
      artifact: infoOf({
        digest: row.digest,
        size: row.size,
        media_type: row.artifact_media_type,
        owner: row.artifact_owner,
        created_at: row.artifact_created_at,
        expires_at: row.artifact_expires_at,
      }),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.db?.isOpen) this.db.close();
    this.db = undefined;
  }

  /**
   * Flushes the files of artifacts written unflushed in this boot (by this or
   * another process sharing the store) and marks their rows durable, at most
   * `limit` at a time. By a sweep, most of their pages have long been written
   * back by the kernel, so the flush is cheap; one that fails leaves its row as
   * it was, to be hashed again after a crash of the machine.
   */
  private async flushWritten(limit = 1000): Promise<void> {
    if (BOOT_ID === undefined) return;
    const rows = this.run((db) =>
      db.prepare('SELECT digest FROM artifacts WHERE unsynced_boot = ? LIMIT ?').all(BOOT_ID, limit),
    ) as { digest: string }[] | undefined;
    for (const { digest } of rows ?? []) {
      let handle: FileHandle | undefined;
      try {
        handle = await open(this.blobPath(digest), BLOB_OPEN_FLAGS);
        if (!(await handle.stat()).isFile()) continue;
        await handle.datasync();
      } catch {
        continue;
      } finally {
        await handle?.close().catch(() => {});
      }
      this.run((db) =>
        db
          .prepare('UPDATE artifacts SET unsynced_boot = NULL WHERE digest = ? AND unsynced_boot = ?')
          .run(digest, BOOT_ID),
      );
    }
  }

  /**
   * Whether an artifact written unflushed in an earlier boot still has its
   * bytes: hashed again; if they match its row is marked durable, if not (the
   * machine crashed before they reached the disk) the artifact and its grants go.
   */
  private async survived(digest: string): Promise<boolean> {
    const path = this.blobPath(digest);
    const hash = createHash('sha256');
    let handle: FileHandle | undefined;
    try {
      handle = await this.openBlob(digest);
      if (handle) {
        for await (const chunk of handle.createReadStream({
          highWaterMark: READ_CHUNK_BYTES,
          autoClose: false,
        }))
          hash.update(chunk as Buffer);
      }
    } catch (error) {
      // A link or other non-file at its name is no copy of the bytes: the artifact is dropped.
      if (!(error instanceof EnvelopeError && error.code === 'ARTIFACT_INTEGRITY_FAILED'))
        throw storeError(error, this.dir);
    } finally {
      await handle?.close().catch(() => {});
    }
    const whole = handle !== undefined && hash.digest('hex') === digest;
    this.run((db) => {
      if (whole) db.prepare('UPDATE artifacts SET unsynced_boot = NULL WHERE digest = ?').run(digest);
      else {
        db.prepare('DELETE FROM download_grants WHERE digest = ?').run(digest);
        db.prepare('DELETE FROM artifacts WHERE digest = ?').run(digest);
      }
    });
    if (!whole) await rm(path, { force: true });
    return whole;
  }

  /** Where an artifact's bytes are kept: only ever a checked digest, so no path can be named. */
  private blobPath(digest: string): string {
    checkDigest(digest);
    return join(this.dir, 'blobs', digest.slice(0, 2), digest);
  }

  /** Records the artifact and moves its bytes into place, in one synchronous step. */
  private commit(temporary: string, digest: string, size: number, options: PutOptions): ArtifactInfo {
    const db = this.database(true) as DatabaseSync;
    const now = this.now();
    const target = this.blobPath(digest);
    db.exec('BEGIN IMMEDIATE');
    try {
      // The bytes just hashed always replace what is at the name: a copy already there may have
      // been damaged, or swapped for a link, since it was written, and renaming costs no more.
      db.prepare(
        `INSERT INTO artifacts (digest, size, media_type, owner, created_at, expires_at, unsynced_boot)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (digest) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at),
           unsynced_boot = excluded.unsynced_boot`,
      ).run(digest, size, options.mediaType, options.owner, now, now + options.ttlMs, BOOT_ID ?? null);
      renameSync(temporary, target);
      const row = db
        .prepare('SELECT * FROM artifacts WHERE digest = ?')
        .get(digest) as unknown as ArtifactRow;
      db.exec('COMMIT');
      return infoOf(row);
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Runs a read; undefined when there is no database yet (nothing was ever stored). */
  private run<T>(body: (db: DatabaseSync) => T): T | undefined {
    try {
      const db = this.database(false);
      return db ? body(db) : undefined;
    } catch (error) {
      throw storeError(error, this.dir);
    }
  }

  /** The open database; with `create` false, undefined when its file does not exist yet. */
  private database(create: boolean): DatabaseSync | undefined {
    if (this.closed)
      throw new EnvelopeError('ARTIFACT_STORE_UNAVAILABLE', `Artifact store ${this.dir} is closed`);
    if (this.db) return this.db;
    if (!create && !existsSync(this.databasePath)) return undefined;
    let db: DatabaseSync | undefined;
    try {
      mkdirSync(dirname(this.databasePath), { recursive: true });
      db = new DatabaseSync(this.databasePath);
      db.exec('PRAGMA busy_timeout = 5000');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      db.exec(SCHEMA);
      // A table made before rows could be unflushed: every row in it was flushed.
      const columns = db.prepare("SELECT name FROM pragma_table_info('artifacts')").all() as {
        name: string;
      }[];
      if (!columns.some((column) => column.name === 'unsynced_boot'))
        db.exec('ALTER TABLE artifacts ADD COLUMN unsynced_boot TEXT');
    } catch (error) {
      db?.close();
      throw storeError(error, this.dir);
    }
    this.db = db;
    return db;
  }

  private async removeStaleTemporaries(now: number): Promise<void> {
    const folder = join(this.dir, 'tmp');
    let names: string[];
    try {
      names = await readdir(folder);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.endsWith('.part')) continue;
      const path = join(folder, name);
      const info = await stat(path).catch(() => undefined);
      if (info && now - info.mtimeMs > STALE_TEMPORARY_MS) await rm(path, { force: true }).catch(() => {});
    }
  }
}
