/**
 * Filled documents in the artifact store: saved with a signed, expiring
 * download grant, and read back by its download id. The store's folder and
 * database may be the gateway's (TEMPLATE_SERVER_ARTIFACTS_DIR / _DB), so the
 * gateway's own /api/download serves the links this server hands out: the
 * signing keys live in that folder's keys.json, shared by both.
 */
import { buffer } from 'node:stream/consumers';
import { FolderArtifactStore } from '../../src/artifacts/folder-store.ts';
import { type DownloadResolution, resolveDownload } from '../../src/artifacts/resolve-download.ts';
import type { DownloadIdFailure } from '../../src/artifacts/types.ts';
import { describeErrorCode, EnvelopeError } from '../../src/errors/index.ts';
import { type HostedCode, ToolFailure } from './failure.ts';
import { DOCX_MEDIA_TYPE } from './render.ts';

/** Label of the artifacts this server stores. */
export const OWNER = 'template-server';
/** Largest document kept: far above what the value limits let a template grow to. */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

export interface SavedDocument {
  downloadId: string;
  /** ISO 8601. */
  expiresAt: string;
  /** SHA-256 of the bytes, hex. */
  digest: string;
}

export interface LoadedDocument {
  bytes: Buffer;
  filename: string;
  mediaType: string;
  digest: string;
  /** ISO 8601: when the download id stops working. */
  expiresAt: string;
}

/** The library's download id failures as seed 003's tool error codes. */
const LINK_FAILURES: Record<DownloadIdFailure, { code: HostedCode; message: string }> = {
  DOWNLOAD_ID_MISSING: { code: 'DOWNLOAD_LINK_INVALID', message: 'Missing download_id.' },
  DOWNLOAD_ID_MALFORMED: { code: 'DOWNLOAD_LINK_INVALID', message: 'Malformed download_id.' },
  DOWNLOAD_SIGNATURE_INVALID: { code: 'DOWNLOAD_LINK_INVALID', message: 'Invalid download_id signature.' },
  DOWNLOAD_EXPIRED: { code: 'DOWNLOAD_LINK_EXPIRED', message: 'Download link expired.' },
  DOWNLOAD_NOT_FOUND: { code: 'DOWNLOAD_LINK_NOT_FOUND', message: 'Download link not found.' },
};

function linkFailure(failure: DownloadIdFailure): ToolFailure {
  const { code, message } = LINK_FAILURES[failure];
  return new ToolFailure(code, message, { download_error: failure });
}

/**
 * A store failure (folder gone, disk full) as the tool's error: ARTIFACT_STORE_UNAVAILABLE
 * (retriable) as the store says it, anything else the store refuses as INTERNAL_ERROR.
 */
function storeFailure(error: unknown): unknown {
  if (!(error instanceof EnvelopeError)) return error;
  const code: HostedCode = error.code === 'ARTIFACT_STORE_UNAVAILABLE' ? error.code : 'INTERNAL_ERROR';
  // The store's message names local paths: it goes to the server's log, the caller gets the code.
  process.stderr.write(`document store: ${error.code}: ${error.message}\n`);
  return new ToolFailure(
    code,
    'The document store is unavailable; the document was not kept.',
    undefined,
    describeErrorCode(code).retriable,
  );
}

export interface FilledDocumentsOptions {
  dir: string;
  databasePath?: string;
  ttlMs: number;
  now?: () => number;
}

export class FilledDocuments {
  readonly store: FolderArtifactStore;
  readonly ttlMs: number;
  readonly #now: () => number;

  constructor(options: FilledDocumentsOptions) {
    this.ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
    this.store = FolderArtifactStore.open({
      dir: options.dir,
      ...(options.databasePath === undefined ? {} : { databasePath: options.databasePath }),
      maxTtlMs: options.ttlMs,
      now: this.#now,
    });
  }

  async save(bytes: Buffer, filename: string): Promise<SavedDocument> {
    try {
      const options = { mediaType: DOCX_MEDIA_TYPE, owner: OWNER, ttlMs: this.ttlMs };
      const info = await this.store.put(bytes, { ...options, maxBytes: MAX_DOCUMENT_BYTES });
      const { grant, downloadId } = await this.store.createGrant({
        ...options,
        digest: info.digest,
        filename,
      });
      return { downloadId, expiresAt: new Date(grant.expiresAt).toISOString(), digest: info.digest };
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /** The document a download id names; DOWNLOAD_LINK_INVALID, _EXPIRED or _NOT_FOUND when it names none. */
  async load(downloadId: string): Promise<LoadedDocument> {
    let resolved: DownloadResolution;
    try {
      resolved = await resolveDownload(
        downloadId,
        { store: this.store, keyring: this.store.keyring },
        this.#now(),
      );
    } catch (error) {
      throw storeFailure(error);
    }
    if (!resolved.ok) throw linkFailure(resolved.code);
    try {
      const stream = await this.store.open(resolved.grant.digest);
      if (!stream) throw linkFailure('DOWNLOAD_NOT_FOUND');
      const bytes = await buffer(stream);
      if (bytes.length !== resolved.artifact.size) throw linkFailure('DOWNLOAD_NOT_FOUND');
      return {
        bytes,
        filename: resolved.grant.filename,
        mediaType: resolved.grant.mediaType,
        digest: resolved.grant.digest,
        expiresAt: new Date(resolved.grant.expiresAt).toISOString(),
      };
    } catch (error) {
      throw storeFailure(error);
    }
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
