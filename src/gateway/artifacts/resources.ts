/**
 * The gateway's own resources: `mcp-envelope://artifacts/{download_id}`, the
 * `resource_uri` of a result returned with return mode `mcp_resource`. The
 * gateway answers resources/read for them itself (they never reach an
 * upstream), with the same checks as `/api/download`: the signed id first
 * (shape, key, signature, expiry), then its grant and the artifact. A refusal
 * is a JSON-RPC error carrying the canonical DOWNLOAD_* code. The bytes read
 * are hashed before they are answered: bytes that do not match the digest
 * they are served under are ARTIFACT_INTEGRITY_FAILED, never content.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { DownloadIdKeys } from '../../artifacts/download-ids.ts';
import { resolveDownload } from '../../artifacts/resolve-download.ts';
import type { ArtifactStore, GrantStore } from '../../artifacts/types.ts';
import { EnvelopeError } from '../../errors/index.ts';

export const ARTIFACT_RESOURCE_PREFIX = 'mcp-envelope://artifacts/';

export function artifactResourceUri(downloadId: string): string {
  return `${ARTIFACT_RESOURCE_PREFIX}${downloadId}`;
}

/** Whether a URI names one of the gateway's own artifact resources. */
export function isArtifactResource(uri: unknown): uri is string {
  return typeof uri === 'string' && uri.startsWith(ARTIFACT_RESOURCE_PREFIX);
}

/** Media types whose bytes are read back as `text` rather than base64 `blob`. */
function isTextual(mediaType: string): boolean {
  const type = mediaType.split(';')[0]?.trim().toLowerCase() ?? '';
  return type.startsWith('text/') || type === 'application/json' || type.endsWith('+json');
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text when they are well-formed UTF-8, else undefined. */
function utf8(bytes: Buffer): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface ArtifactResourceSource {
  store: Pick<ArtifactStore, 'open'> & Pick<GrantStore, 'resolveGrant'>;
  keyring: DownloadIdKeys;
  /** Epoch milliseconds. */
  now?: () => number;
  /** The largest artifact answered inline; default RESOURCE_READ_MAX_BYTES. */
  maxBytes?: number;
}

/**
 * The largest artifact resources/read answers: its bytes are held whole, and
 * as base64 in the answer (about 2.7 times its size per read in all). A larger
 * one is TOO_LARGE, naming its download link's route: /api/download streams.
 */
export const RESOURCE_READ_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Whether `caller` may read a grant through resources/read. A download id is
 * a bearer capability, as a link is, for callers no token names (stdio, an
 * anonymous client); a caller a bearer token authenticated reads only what its
 * own calls stored, or what an upstream stored for the call it made, so a
 * token's holder cannot read another tenant's files by their ids.
 */
export function grantReadableBy(owner: string, caller: string | undefined): boolean {
  if (caller === undefined || !caller.startsWith('token:')) return true;
  return owner === caller || owner.startsWith('upstream:');
}

/** Bytes and their type for an artifact resource URI, or the DOWNLOAD_* error saying why not. */
export async function readArtifact(
  uri: string,
  source: ArtifactResourceSource,
  caller?: string,
): Promise<{ bytes: Buffer; mediaType: string; filename: string }> {
  const now = source.now ?? Date.now;
  const found = await resolveDownload(uri.slice(ARTIFACT_RESOURCE_PREFIX.length), source, now());
  if (!found.ok) throw new EnvelopeError(found.code, `Cannot read ${uri}: ${found.code}`, { uri });
  // Another tenant's file reads as an unknown one: its existence is not told.
  if (!grantReadableBy(found.grant.owner, caller))
    throw new EnvelopeError('DOWNLOAD_NOT_FOUND', `Cannot read ${uri}: DOWNLOAD_NOT_FOUND`, { uri });
  const maxBytes = source.maxBytes ?? RESOURCE_READ_MAX_BYTES;
  if (found.artifact.size > maxBytes) {
    throw new EnvelopeError(
      'TOO_LARGE',
      `Cannot read ${uri}: ${found.artifact.size} bytes is more than resources/read answers (${maxBytes}); download it from its link instead`,
      { uri, size_bytes: found.artifact.size, max_bytes: maxBytes },
    );
  }
  const { digest } = found.artifact;
  const stream = await source.store.open(digest);
  if (!stream)
    throw new EnvelopeError('DOWNLOAD_NOT_FOUND', `Cannot read ${uri}: the artifact is gone`, { uri });
  const bytes = await readAll(stream);
  // Checked here too, whatever store this is: the resource is the bytes its digest names, or nothing.
  if (createHash('sha256').update(bytes).digest('hex') !== digest) {
    throw new EnvelopeError(
      'ARTIFACT_INTEGRITY_FAILED',
      `Cannot read ${uri}: the stored bytes do not match`,
      {
        uri,
      },
    );
  }
  return { bytes, mediaType: found.grant.mediaType, filename: found.grant.filename };
}

/** The resources/read result for an artifact resource. */
export async function readArtifactResource(
  uri: string,
  source: ArtifactResourceSource,
  caller?: string,
): Promise<{ contents: Record<string, unknown>[] }> {
  const { bytes, mediaType } = await readArtifact(uri, source, caller);
  // Text only when the bytes are UTF-8 as well as labelled text: decoding anything else would alter them.
  const text = isTextual(mediaType) ? utf8(bytes) : undefined;
  const content =
    text === undefined
      ? { uri, mimeType: mediaType, blob: bytes.toString('base64') }
      : { uri, mimeType: mediaType, text };
  return { contents: [content] };
}
