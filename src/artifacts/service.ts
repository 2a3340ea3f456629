/**
 * The artifact service as the gateway holds it: one store and keyring opened
 * at startup, the settings that bound them, and the two things callers need,
 * storing bytes behind a download link (`grant`) and the link's URL. Return
 * modes and tools call this one object; the HTTP route serves `handler`.
 */
import { createDownloadHandler, type DownloadHandler } from './download-handler.ts';
import { FolderArtifactStore } from './folder-store.ts';
import { Keyring, type KeySpec } from './keyring.ts';
import type { ArtifactInfo, ArtifactSource, DownloadGrant } from './types.ts';

/** How a large tool result reaches the client: a download link, inline base64, or an MCP resource. */
export type ReturnMode = 'url' | 'base64' | 'mcp_resource';

/** Sweeps run this often at most (and more often when links live shorter). */
const SWEEP_INTERVAL_MS = 60_000;

export interface GrantOptions {
  /** Offered in Content-Disposition (sanitized). */
  filename: string;
  mediaType: string;
  /** Whose it is: `token:<name>`, `anonymous:session:<id>` or `anonymous:<address>`, `local`, or a server's label. */
  owner: string;
  /** Default: the service's ttlMs. */
  ttlMs?: number;
}

/** Stored bytes and a link to them. */
export interface GrantedArtifact {
  artifact: ArtifactInfo;
  grant: DownloadGrant;
  downloadId: string;
  /** Undefined when the service knows no address to put in links (no HTTP listener, no publicUrl). */
  url: string | undefined;
}

export interface ArtifactService {
  store: FolderArtifactStore;
  keyring: Keyring;
  /** How long links (and the bytes behind them) live, in milliseconds. */
  ttlMs: number;
  /** Largest artifact accepted, in bytes. */
  maxBytes: number;
  /** Results larger than this become artifacts (read by the return modes). */
  inlineMaxBytes: number;
  defaultReturnMode: ReturnMode;
  /** The path the download route is served at. */
  downloadPath: string;
  /** The link for a download id, or undefined when no address is known. */
  downloadUrl(downloadId: string): string | undefined;
  /** The download route's URL (links are it plus `?id=…`), or undefined when no address is known. */
  downloadRoute(): string | undefined;
  /** Stores the bytes (at most maxBytes) and grants a download of them. */
  grant(source: ArtifactSource, options: GrantOptions): Promise<GrantedArtifact>;
  /** Serves `downloadPath`. */
  handler: DownloadHandler;
  /** Where links point when no publicUrl is set: the listener's own origin, once it listens. */
  useOrigin(origin: string): void;
  close(): Promise<void>;
}

export interface ArtifactServiceOptions {
  dir: string;
  /** Default `<dir>/artifacts.sqlite`; the gateway passes its ledger file. */
  databasePath?: string;
  ttlMs: number;
  maxBytes: number;
  inlineMaxBytes: number;
  defaultReturnMode: ReturnMode;
  downloadPath: string;
  /** The base URL links start with, when the service sits behind a proxy. */
  publicUrl?: string;
  /** Configured keys (the first signs); default: generated and kept in `<dir>/keys.json`. */
  keys?: readonly KeySpec[];
  /** Expired artifacts are swept this often; 0 turns sweeping off. */
  sweepIntervalMs?: number;
  now?: () => number;
  onError?: (error: unknown) => void;
}

/** Joins a base URL (which may carry a path prefix) and the download path. */
function linkBase(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

export function openArtifactService(options: ArtifactServiceOptions): ArtifactService {
  const now = options.now ?? Date.now;
  const report = options.onError ?? (() => {});
  const keyring = options.keys
    ? Keyring.fromKeys(options.keys, { maxTtlMs: options.ttlMs })
    : Keyring.inFolder({ dir: options.dir, maxTtlMs: options.ttlMs, now });
  const store = FolderArtifactStore.open({
    dir: options.dir,
    keyring,
    now,
    ...(options.databasePath === undefined ? {} : { databasePath: options.databasePath }),
  });
  let base = options.publicUrl === undefined ? undefined : linkBase(options.publicUrl, options.downloadPath);
  const interval = options.sweepIntervalMs ?? Math.min(SWEEP_INTERVAL_MS, options.ttlMs);
  const sweeping = interval > 0 ? setInterval(() => store.sweep().catch(report), interval) : undefined;
  sweeping?.unref();

  const service: ArtifactService = {
    store,
    keyring,
    ttlMs: options.ttlMs,
    maxBytes: options.maxBytes,
    inlineMaxBytes: options.inlineMaxBytes,
    defaultReturnMode: options.defaultReturnMode,
    downloadPath: options.downloadPath,
    downloadUrl: (downloadId) =>
      base === undefined ? undefined : `${base}?id=${encodeURIComponent(downloadId)}`,
    downloadRoute: () => base,
    async grant(source, grantOptions) {
      const ttlMs = grantOptions.ttlMs ?? options.ttlMs;
      const artifact = await store.put(source, {
        mediaType: grantOptions.mediaType,
        owner: grantOptions.owner,
        ttlMs,
        maxBytes: options.maxBytes,
      });
      const { grant, downloadId } = await store.createGrant({
        digest: artifact.digest,
        filename: grantOptions.filename,
        mediaType: grantOptions.mediaType,
        owner: grantOptions.owner,
        ttlMs,
      });
      return { artifact, grant, downloadId, url: service.downloadUrl(downloadId) };
    },
    handler: createDownloadHandler({ store, keyring, now, onError: report }),
    useOrigin(origin) {
      if (options.publicUrl === undefined) base = linkBase(origin, options.downloadPath);
    },
    async close() {
      if (sweeping) clearInterval(sweeping);
      await store.close();
    },
  };
  return service;
}
