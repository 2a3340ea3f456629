/**
 * The gateway's artifact service as the pipeline sees it: an ArtifactSink the
 * return modes store files in (owned by the caller, kept for the service's
 * TTL, linked from its download route), resolving download ids against the
 * same keyring and store, and the resources/read answer for the gateway's own
 * `mcp-envelope://artifacts/` URIs.
 */
import { resolveDownload } from '../../artifacts/resolve-download.ts';
import type { ArtifactService } from '../../artifacts/service.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { ArtifactSink, StoredArtifact } from '../../mcp/pipeline/types.ts';
import type { OwnResources } from '../relay/relay.ts';
import {
  ARTIFACT_RESOURCE_PREFIX,
  type ArtifactResourceSource,
  artifactResourceUri,
  isArtifactResource,
  RESOURCE_READ_MAX_BYTES,
  readArtifactResource,
} from './resources.ts';

export function artifactSink(service: ArtifactService, now: () => number = Date.now): ArtifactSink {
  return {
    inlineMaxBytes: service.inlineMaxBytes,
    defaultReturnMode: service.defaultReturnMode,
    maxBytes: service.maxBytes,
    async store(bytes, what): Promise<StoredArtifact> {
      const granted = await service.grant(bytes, what);
      return {
        downloadId: granted.downloadId,
        digest: granted.artifact.digest,
        sizeBytes: granted.artifact.size,
        mediaType: granted.grant.mediaType,
        filename: granted.grant.filename,
        expiresAt: new Date(granted.grant.expiresAt).toISOString(),
        downloadUrl: granted.url,
        resourceUri: artifactResourceUri(granted.downloadId),
      };
    },
    async resolve(downloadId): Promise<StoredArtifact | undefined> {
      const found = await resolveDownload(downloadId, service, now());
      if (!found.ok) return undefined;
      return {
        downloadId,
        digest: found.artifact.digest,
        sizeBytes: found.artifact.size,
        mediaType: found.grant.mediaType,
        filename: found.grant.filename,
        expiresAt: new Date(found.grant.expiresAt).toISOString(),
        downloadUrl: service.downloadUrl(downloadId),
        resourceUri: artifactResourceUri(downloadId),
      };
    },
  };
}

/** Bytes of artifact resources held at once, all reads together: a read past it waits its turn by failing. */
export const RESOURCE_READS_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The gateway's own resources: its artifacts, read by their `mcp-envelope://artifacts/` URI.
 * Reads in flight hold at most RESOURCE_READS_MAX_BYTES of artifacts between them; one that
 * would go past it is RESOURCE_EXHAUSTED (retriable), so many concurrent reads cannot take
 * memory without bound.
 */
export function artifactResources(service: ArtifactService, now: () => number = Date.now): OwnResources {
  let held = 0;
  return {
    owns: isArtifactResource,
    read: async (uri, caller) => {
      const source = { store: service.store, keyring: service.keyring, now };
      // Sized from the grant before any byte is read; at most the per-read limit.
      const size = Math.min((await sizeOf(uri, source)) ?? 0, RESOURCE_READ_MAX_BYTES);
      if (held + size > RESOURCE_READS_MAX_BYTES) {
        throw new EnvelopeError(
          'RESOURCE_EXHAUSTED',
          `Too many artifact reads at once (${held} bytes held); try again shortly`,
          { held_bytes: held, max_bytes: RESOURCE_READS_MAX_BYTES },
        );
      }
      held += size;
      try {
        return await readArtifactResource(uri, source, caller);
      } finally {
        held -= size;
      }
    },
  };
}

/** The size of the artifact a resource URI names, when its id resolves. */
async function sizeOf(uri: string, source: ArtifactResourceSource): Promise<number | undefined> {
  const found = await resolveDownload(
    uri.slice(ARTIFACT_RESOURCE_PREFIX.length),
    source,
    (source.now ?? Date.now)(),
  );
  return found.ok ? found.artifact.size : undefined;
}
