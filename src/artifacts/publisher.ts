/**
 * What a tool server needs of an artifact store: put a file behind a download
 * link, and look up or read back a file it put, by its download id. Nothing
 * more: no key, no path, no grant of someone else's bytes. Two stores offer
 * it: `RemoteArtifactStore` (remote-store.ts), the capability a gateway hands
 * an upstream it shares its store with, and `FolderArtifactPublisher` below,
 * a server's own folder store when it runs on its own.
 */
import { createHash } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { EnvelopeError } from '../errors/index.ts';
import { FolderArtifactStore } from './folder-store.ts';
import { resolveDownload } from './resolve-download.ts';
import type { DownloadIdFailure, ResolvedGrant } from './types.ts';

/** A stored file and the link to it. */
export interface ArtifactDescriptor {
  downloadId: string;
  /** Absent when the store knows no address that serves downloads (a gateway serving stdio only). */
  downloadUrl?: string;
  /** A URI the serving side's resources/read answers (`mcp-envelope://artifacts/…` for a gateway). */
  resourceUri?: string;
  /** ISO 8601: when the link stops working. */
  expiresAt: string;
  /** SHA-256 of the bytes, lower-case hex. */
  sha256: string;
  sizeBytes: number;
  /** As offered in Content-Disposition (sanitized). */
  filename: string;
  mediaType: string;
}

export interface PublishOptions {
  mediaType: string;
  filename: string;
  /** A label of who the file is for (1 to 128 of A-Z a-z 0-9 . _ : @ / -); the store adds who put it. */
  owner?: string;
}

export type ArtifactLookup =
  | { ok: true; descriptor: ArtifactDescriptor }
  | { ok: false; code: DownloadIdFailure };

export type ArtifactRead =
  | { ok: true; descriptor: ArtifactDescriptor; bytes: Buffer }
  | { ok: false; code: DownloadIdFailure };

export interface ArtifactPublisher {
  /** Stores the bytes and grants a download of them, for the store's own link lifetime. */
  publish(bytes: Uint8Array, options: PublishOptions): Promise<ArtifactDescriptor>;
  /** The file a download id names, if this publisher put it; a DOWNLOAD_* code otherwise. */
  lookup(downloadId: string): Promise<ArtifactLookup>;
  /** The bytes of a file this publisher put, checked against their digest. */
  read(downloadId: string): Promise<ArtifactRead>;
  close(): Promise<void>;
}

/** Owner labels a publisher may add: no separators a header or a path could take. */
export const OWNER_LABEL = /^[A-Za-z0-9._:@/-]{1,128}$/;

export function checkOwnerLabel(owner: unknown): void {
  if (owner !== undefined && (typeof owner !== 'string' || !OWNER_LABEL.test(owner))) {
    throw new EnvelopeError('INVALID_ARGUMENT', 'owner must be 1 to 128 of A-Z a-z 0-9 . _ : @ / -');
  }
}

export interface FolderPublisherOptions {
  /** The store's folder (blobs, and keys.json for its keys). */
  dir: string;
  /** Default `<dir>/artifacts.sqlite`. */
  databasePath?: string;
  /** How long a file and its link live, in milliseconds: also the longest link the store accepts. */
  ttlMs: number;
  /** Largest file kept; default unbounded. */
  maxBytes?: number;
  /** Who puts the files (the owner label is added after a `/`). */
  owner: string;
  now?: () => number;
}

function descriptorOf(found: ResolvedGrant, downloadId: string): ArtifactDescriptor {
  return {
    downloadId,
    expiresAt: new Date(found.grant.expiresAt).toISOString(),
    sha256: found.artifact.digest,
    sizeBytes: found.artifact.size,
    filename: found.grant.filename,
    mediaType: found.grant.mediaType,
  };
}

/**
 * A server's own store in a folder of its own: the keys, the database and the
 * bytes are this process's. For a server on its own (over HTTP it serves the
 * links itself, with `createDownloadHandler` on `store`); behind a gateway
 * that shares its store, use `artifactStoreFromEnvironment()` instead.
 */
export class FolderArtifactPublisher implements ArtifactPublisher {
  readonly store: FolderArtifactStore;
  readonly #ttlMs: number;
  readonly #maxBytes: number | undefined;
  readonly #owner: string;
  readonly #now: () => number;

  private constructor(options: FolderPublisherOptions) {
    this.#ttlMs = options.ttlMs;
    this.#maxBytes = options.maxBytes;
    this.#owner = options.owner;
    this.#now = options.now ?? Date.now;
    this.store = FolderArtifactStore.open({
      dir: options.dir,
      ...(options.databasePath === undefined ? {} : { databasePath: options.databasePath }),
      maxTtlMs: options.ttlMs,
      now: this.#now,
    });
  }

  static open(options: FolderPublisherOptions): FolderArtifactPublisher {
    return new FolderArtifactPublisher(options);
  }

  async publish(bytes: Uint8Array, options: PublishOptions): Promise<ArtifactDescriptor> {
    checkOwnerLabel(options.owner);
    const owner = options.owner === undefined ? this.#owner : `${this.#owner}/${options.owner}`;
    const common = { mediaType: options.mediaType, owner, ttlMs: this.#ttlMs };
    const info = await this.store.put(bytes, {
      ...common,
      ...(this.#maxBytes === undefined ? {} : { maxBytes: this.#maxBytes }),
    });
    const { grant, downloadId } = await this.store.createGrant({
      ...common,
      digest: info.digest,
      filename: options.filename,
    });
    return descriptorOf({ grant, artifact: info }, downloadId);
  }

  async lookup(downloadId: string): Promise<ArtifactLookup> {
    const found = await resolveDownload(
      downloadId,
      { store: this.store, keyring: this.store.keyring },
      this.#now(),
    );
    return found.ok ? { ok: true, descriptor: descriptorOf(found, downloadId) } : found;
  }

  async read(downloadId: string): Promise<ArtifactRead> {
    const found = await this.lookup(downloadId);
    if (!found.ok) return found;
    // The store's stream fails before its last bytes unless they match the digest.
    const stream = await this.store.open(found.descriptor.sha256);
    if (!stream) return { ok: false, code: 'DOWNLOAD_NOT_FOUND' };
    const bytes = await buffer(stream);
    if (createHash('sha256').update(bytes).digest('hex') !== found.descriptor.sha256) {
      throw new EnvelopeError(
        'ARTIFACT_INTEGRITY_FAILED',
        `Artifact ${found.descriptor.sha256} does not match`,
      );
    }
    return { ok: true, descriptor: found.descriptor, bytes };
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
