/**
 * The artifact service's contract: what a store keeps, what a download id
 * grants, and what the HTTP download surface needs. The folder store, the id
 * signer and the download handler implement it; the gateway's return modes and
 * any server author's tools use it, so that a shared store for several
 * instances can be added behind the same interface without touching callers.
 */
import type { Readable } from 'node:stream';

/** What is kept beside an artifact's bytes. */
export interface ArtifactInfo {
  /** SHA-256 of the bytes, lower-case hex: the artifact's name. */
  digest: string;
  size: number;
  /** The media type the bytes were stored with, e.g. application/pdf. */
  mediaType: string;
  /** The principal that stored it (`token:<name>`, `anonymous:session:<id>` or `anonymous:<address>`, `local`, or a server's own label). */
  owner: string;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601: after this the store may delete the bytes. */
  expiresAt: string;
}

export interface PutOptions {
  mediaType: string;
  owner: string;
  /** How long the bytes are kept, in milliseconds. */
  ttlMs: number;
  /** Largest accepted size; a bigger input fails with INPUT_TOO_LARGE and leaves nothing behind. */
  maxBytes?: number;
}

/** Bytes to store: a buffer, or a stream (read once, hashed as it is written). */
export type ArtifactSource = Uint8Array | Readable | AsyncIterable<Uint8Array>;

/** An inclusive byte range of an artifact, as HTTP Range requests name it. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface ArtifactStore {
  /**
   * Stores the bytes under their digest (storing the same bytes twice keeps one
   * copy and extends its expiry to the later of the two). Written to a temporary
   * name and renamed, so a reader never sees a partial file.
   */
  put(source: ArtifactSource, options: PutOptions): Promise<ArtifactInfo>;
  /** The metadata of a stored, unexpired artifact, or undefined. */
  info(digest: string, now?: number): Promise<ArtifactInfo | undefined>;
  /** The bytes (or a range of them), streamed in constant memory; undefined when gone. */
  open(digest: string, range?: ByteRange): Promise<Readable | undefined>;
  /** Deletes expired artifacts; returns how many went. */
  sweep(now?: number): Promise<number>;
  close(): Promise<void>;
}

/** What a download id grants: one artifact, until a time, under a filename. */
export interface DownloadGrant {
  /** Random, 128 bits, hex: names the grant. */
  grantId: string;
  digest: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** The filename offered in Content-Disposition. */
  filename: string;
  mediaType: string;
  owner: string;
}

/** Why a download id does not verify, told apart before any bytes are read. */
export type DownloadIdFailure =
  | 'DOWNLOAD_ID_MISSING'
  | 'DOWNLOAD_ID_MALFORMED'
  | 'DOWNLOAD_SIGNATURE_INVALID'
  | 'DOWNLOAD_LIFETIME_EXCEEDED'
  | 'DOWNLOAD_EXPIRED'
  | 'DOWNLOAD_NOT_FOUND';

/** What a download grant is asked for. */
export interface GrantRequest {
  digest: string;
  /** Offered in Content-Disposition; sanitized when stored. */
  filename: string;
  mediaType: string;
  owner: string;
  /** How long the link works, in milliseconds (at most the keyring's longest link lifetime). */
  ttlMs: number;
}

/** A stored grant and the signed download id that names it. */
export interface IssuedGrant {
  grant: DownloadGrant;
  downloadId: string;
}

/** A grant found by its id, with the artifact it names. */
export interface ResolvedGrant {
  grant: DownloadGrant;
  artifact: ArtifactInfo;
}

/** Grants of downloads: stored beside the artifacts, named by signed ids. */
export interface GrantStore {
  createGrant(request: GrantRequest): Promise<IssuedGrant>;
  /** The grant and its artifact, or undefined when either is gone (expired grants are still returned). */
  resolveGrant(grantId: string, now?: number): Promise<ResolvedGrant | undefined>;
}

/** An artifact's file, open for reading, checked to hold the recorded size. */
export interface OpenedArtifactFile {
  handle: import('node:fs/promises').FileHandle;
  size: number;
}

/**
 * A store keeping artifacts in local files may offer their open handles, so
 * that downloads read into reused buffers instead of a fresh one per chunk.
 */
export interface FileBackedStore {
  /** The open file (the caller closes it), or undefined when gone; a short file fails with DOWNLOAD_RENDER_FAILED. */
  openFile(digest: string): Promise<OpenedArtifactFile | undefined>;
}
