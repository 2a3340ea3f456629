/**
 * The gateway's artifact service as the pipeline sees it: an ArtifactSink the
 * return modes store files in (owned by the caller, kept for the service's
 * TTL, linked from its download route), resolving download ids against the
 * same keyring and store, and the resources/read answer for the gateway's own
 * `mcp-envelope://artifacts/` URIs.
 */
import { resolveDownload } from '../../artifacts/resolve-download.ts';
import type { ArtifactService } from '../../artifacts/service.ts';
import type { ArtifactSink, StoredArtifact } from '../../mcp/pipeline/types.ts';
import type { OwnResources } from '../relay/relay.ts';
import { artifactResourceUri, isArtifactResource, readArtifactResource } from './resources.ts';

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

/** The gateway's own resources: its artifacts, read by their `mcp-envelope://artifacts/` URI. */
export function artifactResources(service: ArtifactService, now: () => number = Date.now): OwnResources {
  return {
    owns: isArtifactResource,
    read: (uri) => readArtifactResource(uri, { store: service.store, keyring: service.keyring, now }),
  };
}
