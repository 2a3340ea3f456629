/**
 * mcp-envelope/artifacts: large results kept as files and handed out as
 * signed, expiring download links. The folder store keeps bytes on disk and
 * metadata in SQLite (node:sqlite, so it is kept off the package root);
 * download ids verify with the keyring alone; the handler serves them on
 * node:http. A tool server puts files through an `ArtifactPublisher`: its own
 * folder (`FolderArtifactPublisher`), or the store a gateway shares with it
 * (`artifactStoreFromEnvironment()`, a `RemoteArtifactStore`).
 */
export {
  createDownloadHandler,
  type DownloadHandler,
  type DownloadHandlerOptions,
  parseRange,
} from './download-handler.ts';
export {
  DOWNLOAD_ID_MAX_LENGTH,
  type DownloadIdCheck,
  type DownloadIdKeys,
  type SigningKey,
  signDownloadId,
  verifyDownloadId,
} from './download-ids.ts';
export { FolderArtifactStore, type FolderStoreOptions } from './folder-store.ts';
export { contentDisposition, isMediaType, sanitizeFilename } from './headers.ts';
export {
  type FolderKeyringOptions,
  KEYS_FILE,
  Keyring,
  type KeyringKey,
  type KeySpec,
  MIN_SECRET_BYTES,
  type Rotation,
} from './keyring.ts';
export {
  type ArtifactDescriptor,
  type ArtifactLookup,
  type ArtifactPublisher,
  type ArtifactRead,
  FolderArtifactPublisher,
  type FolderPublisherOptions,
  type PublishOptions,
} from './publisher.ts';
export {
  ARTIFACTS_TOKEN_ENV,
  ARTIFACTS_URL_ENV,
  artifactStoreFromEnvironment,
  RemoteArtifactStore,
  type RemoteArtifactStoreOptions,
} from './remote-store.ts';
export { type DownloadResolution, resolveDownload } from './resolve-download.ts';
export {
  type ArtifactService,
  type ArtifactServiceOptions,
  type GrantedArtifact,
  type GrantOptions,
  openArtifactService,
  type ReturnMode,
} from './service.ts';
export type {
  ArtifactInfo,
  ArtifactSource,
  ArtifactStore,
  ByteRange,
  DownloadGrant,
  DownloadIdFailure,
  GrantRequest,
  GrantStore,
  IssuedGrant,
  PutOptions,
  ResolvedGrant,
} from './types.ts';
