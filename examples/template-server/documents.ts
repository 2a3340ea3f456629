/**
 * Filled documents in an artifact store: saved behind a signed, expiring
 * download link, and read back by its download id. Behind a gateway that
 * shares its store (`"artifacts": "shared"`), the store is the gateway's,
 * reached through its put API with the capability it gave this process
 * (`artifactStoreFromEnvironment()`): the gateway keeps the bytes, signs the
 * links and serves them at its own /api/download, and this process never
 * sees the gateway's folder, database or keys. On its own, the server keeps
 * a store in a folder of its own (`FolderArtifactPublisher`).
 */
import type { DownloadHandler } from '../../src/artifacts/download-handler.ts';
import {
  type ArtifactPublisher,
  artifactStoreFromEnvironment,
  createDownloadHandler,
  FolderArtifactPublisher,
} from '../../src/artifacts/index.ts';
import type { DownloadIdFailure } from '../../src/artifacts/types.ts';
import { describeErrorCode, EnvelopeError } from '../../src/errors/index.ts';
import { type HostedCode, ToolFailure } from './failure.ts';
import { DOCX_MEDIA_TYPE } from './render.ts';

/** Label of the artifacts this server stores in a store of its own. */
export const OWNER = 'template-server';
/** Largest document kept: far above what the value limits let a template grow to. */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

export interface SavedDocument {
  downloadId: string;
  /** The store's link, when it serves downloads itself (a gateway serving HTTP). */
  downloadUrl: string | undefined;
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
  DOWNLOAD_LIFETIME_EXCEEDED: { code: 'DOWNLOAD_LINK_INVALID', message: 'Invalid download_id expiry.' },
  DOWNLOAD_EXPIRED: { code: 'DOWNLOAD_LINK_EXPIRED', message: 'Download link expired.' },
  DOWNLOAD_NOT_FOUND: { code: 'DOWNLOAD_LINK_NOT_FOUND', message: 'Download link not found.' },
};

function linkFailure(failure: DownloadIdFailure): ToolFailure {
  const { code, message } = LINK_FAILURES[failure];
  return new ToolFailure(code, message, { download_error: failure });
}

/**
 * A store failure (folder gone, disk full, gateway unreachable) as the tool's error:
 * ARTIFACT_STORE_UNAVAILABLE (retriable) as the store says it, anything else the store
 * refuses as INTERNAL_ERROR.
 */
function storeFailure(error: unknown): unknown {
  if (!(error instanceof EnvelopeError)) return error;
  const code: HostedCode = error.code === 'ARTIFACT_STORE_UNAVAILABLE' ? error.code : 'INTERNAL_ERROR';
  // The store's message may name local paths: it goes to the server's log, the caller gets the code.
  process.stderr.write(`document store: ${error.code}: ${error.message}\n`);
  return new ToolFailure(
    code,
    'The document store is unavailable; the document was not kept.',
    undefined,
    describeErrorCode(code).retriable,
  );
}

export interface FilledDocumentsOptions {
  /** The folder of the server's own store, used only when no gateway shares its store. */
  dir: string;
  databasePath?: string;
  ttlMs: number;
  /** Where a sharing gateway's capability is read from; default process.env. */
  env?: NodeJS.ProcessEnv;
  now?: () => number;
}

export class FilledDocuments {
  readonly publisher: ArtifactPublisher;
  /** The server's own store, when it keeps one (undefined behind a sharing gateway). */
  readonly local: FolderArtifactPublisher | undefined;

  constructor(options: FilledDocumentsOptions) {
    const shared = artifactStoreFromEnvironment(options.env ?? process.env);
    this.local = shared
      ? undefined
      : FolderArtifactPublisher.open({
          dir: options.dir,
          ...(options.databasePath === undefined ? {} : { databasePath: options.databasePath }),
          ttlMs: options.ttlMs,
          maxBytes: MAX_DOCUMENT_BYTES,
          owner: OWNER,
          ...(options.now === undefined ? {} : { now: options.now }),
        });
    this.publisher = shared ?? (this.local as FolderArtifactPublisher);
  }

  /** Serves this server's own store's links (its /api/download); undefined when the store is a gateway's. */
  downloadHandler(onError: (error: unknown) => void): DownloadHandler | undefined {
    if (!this.local) return undefined;
    return createDownloadHandler({ store: this.local.store, keyring: this.local.store.keyring, onError });
  }

  async save(bytes: Buffer, filename: string): Promise<SavedDocument> {
    try {
      const descriptor = await this.publisher.publish(bytes, { mediaType: DOCX_MEDIA_TYPE, filename });
      return {
        downloadId: descriptor.downloadId,
        downloadUrl: descriptor.downloadUrl,
        expiresAt: descriptor.expiresAt,
        digest: descriptor.sha256,
      };
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /** The document a download id names; DOWNLOAD_LINK_INVALID, _EXPIRED or _NOT_FOUND when it names none. */
  async load(downloadId: string): Promise<LoadedDocument> {
    let read: Awaited<ReturnType<ArtifactPublisher['read']>>;
    try {
      read = await this.publisher.read(downloadId);
    } catch (error) {
      throw storeFailure(error);
    }
    if (!read.ok) throw linkFailure(read.code);
    return {
      bytes: read.bytes,
      filename: read.descriptor.filename,
      mediaType: read.descriptor.mediaType,
      digest: read.descriptor.sha256,
      expiresAt: read.descriptor.expiresAt,
    };
  }

  close(): Promise<void> {
    return this.publisher.close();
  }
}
