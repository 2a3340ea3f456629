/**
 * The client of a gateway's artifact put API: how an upstream the gateway
 * shares its store with (`"artifacts": "shared"`) puts files behind the
 * gateway's download links. The gateway gives each start of such an upstream
 * a loopback URL and a bearer capability in its environment
 * (MCP_ENVELOPE_ARTIFACTS_URL, MCP_ENVELOPE_ARTIFACTS_TOKEN), never its
 * folder, its database or its keys: the gateway hashes and stores what is
 * sent, and signs the link itself.
 *
 * The API, under the URL given (`<url>`), with `Authorization: Bearer <token>`:
 *
 * - `POST <url>?filename=NAME[&owner=LABEL]`, the bytes as the body and their
 *   media type as Content-Type: 201 and the descriptor;
 * - `GET <url>?id=DOWNLOAD_ID`: the descriptor of a file this upstream put;
 * - `GET <url>/content?id=DOWNLOAD_ID`: its bytes (as `/api/download` serves them).
 *
 * A descriptor is `{download_id, download_url?, resource_uri, expires_at,
 * sha256, size_bytes, filename, content_type}`. A refusal is
 * `{error: {code, message}}` with the code in `X-Error-Code`; an id the
 * upstream did not put is DOWNLOAD_NOT_FOUND, as an unknown one.
 */
import { createHash } from 'node:crypto';
import { describeErrorCode, EnvelopeError, type ErrorCode, isErrorCode } from '../errors/index.ts';
import {
  type ArtifactDescriptor,
  type ArtifactLookup,
  type ArtifactPublisher,
  type ArtifactRead,
  checkOwnerLabel,
  type PublishOptions,
} from './publisher.ts';
import type { DownloadIdFailure } from './types.ts';

/** The put API's URL, as a gateway gives it to an upstream. */
export const ARTIFACTS_URL_ENV = 'MCP_ENVELOPE_ARTIFACTS_URL';
/** The bearer capability that goes with it: this start of this upstream's, and no one else's. */
export const ARTIFACTS_TOKEN_ENV = 'MCP_ENVELOPE_ARTIFACTS_TOKEN';
/** The header a refusal's code is repeated in. */
export const ARTIFACT_ERROR_HEADER = 'x-error-code';

/** A descriptor as the put API writes it. */
export interface DescriptorJson {
  download_id: string;
  download_url?: string;
  resource_uri?: string;
  expires_at: string;
  sha256: string;
  size_bytes: number;
  filename: string;
  content_type: string;
}

export function descriptorJson(descriptor: ArtifactDescriptor): DescriptorJson {
  return {
    download_id: descriptor.downloadId,
    ...(descriptor.downloadUrl === undefined ? {} : { download_url: descriptor.downloadUrl }),
    ...(descriptor.resourceUri === undefined ? {} : { resource_uri: descriptor.resourceUri }),
    expires_at: descriptor.expiresAt,
    sha256: descriptor.sha256,
    size_bytes: descriptor.sizeBytes,
    filename: descriptor.filename,
    content_type: descriptor.mediaType,
  };
}

const DOWNLOAD_FAILURES: readonly string[] = [
  'DOWNLOAD_ID_MISSING',
  'DOWNLOAD_ID_MALFORMED',
  'DOWNLOAD_SIGNATURE_INVALID',
  'DOWNLOAD_LIFETIME_EXCEEDED',
  'DOWNLOAD_EXPIRED',
  'DOWNLOAD_NOT_FOUND',
] satisfies DownloadIdFailure[];

function isDownloadFailure(code: string): code is DownloadIdFailure {
  return DOWNLOAD_FAILURES.includes(code);
}

function unavailable(message: string, cause?: unknown): EnvelopeError {
  return new EnvelopeError('ARTIFACT_STORE_UNAVAILABLE', message, {}, { cause });
}

/** A descriptor read back from JSON, every member checked: what the API answered is not taken on trust. */
function descriptorFrom(value: unknown): ArtifactDescriptor {
  const json = value as Partial<DescriptorJson> | null;
  const text = (member: unknown) => typeof member === 'string';
  if (
    !json ||
    !text(json.download_id) ||
    !text(json.expires_at) ||
    !text(json.sha256) ||
    !/^[0-9a-f]{64}$/.test(json.sha256 as string) ||
    !Number.isSafeInteger(json.size_bytes) ||
    (json.size_bytes as number) < 0 ||
    !text(json.filename) ||
    !text(json.content_type) ||
    (json.download_url !== undefined && !text(json.download_url)) ||
    (json.resource_uri !== undefined && !text(json.resource_uri))
  ) {
    throw unavailable("The artifact store's answer is not a descriptor");
  }
  return {
    downloadId: json.download_id as string,
    ...(json.download_url === undefined ? {} : { downloadUrl: json.download_url }),
    ...(json.resource_uri === undefined ? {} : { resourceUri: json.resource_uri }),
    expiresAt: json.expires_at as string,
    sha256: json.sha256 as string,
    sizeBytes: json.size_bytes as number,
    filename: json.filename as string,
    mediaType: json.content_type as string,
  };
}

export interface RemoteArtifactStoreOptions {
  /** The put API's URL (MCP_ENVELOPE_ARTIFACTS_URL). */
  url: string;
  /** The bearer capability (MCP_ENVELOPE_ARTIFACTS_TOKEN). */
  token: string;
  /** How long one request may take; default 60 s. */
  timeoutMs?: number;
}

/**
 * A gateway's artifact store, reached through its put API. Store failures
 * throw EnvelopeError with the gateway's code (ARTIFACT_STORE_UNAVAILABLE
 * when it cannot be reached, INPUT_TOO_LARGE, RESOURCE_EXHAUSTED,
 * UNAUTHORIZED for a capability that no longer holds); an id that names
 * nothing this upstream put is a DOWNLOAD_* code in the lookup's answer.
 */
export class RemoteArtifactStore implements ArtifactPublisher {
  readonly url: string;
  readonly #token: string;
  readonly #timeoutMs: number;

  constructor(options: RemoteArtifactStoreOptions) {
    let parsed: URL;
    try {
      parsed = new URL(options.url);
    } catch {
      throw new EnvelopeError('INVALID_ARGUMENT', 'The artifact store URL is not a URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new EnvelopeError('INVALID_ARGUMENT', 'The artifact store URL must be http or https');
    if (typeof options.token !== 'string' || options.token.length === 0)
      throw new EnvelopeError('INVALID_ARGUMENT', 'The artifact store needs its bearer token');
    this.url = parsed.href.replace(/\/+$/, '');
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  async publish(bytes: Uint8Array, options: PublishOptions): Promise<ArtifactDescriptor> {
    checkOwnerLabel(options.owner);
    const query = new URLSearchParams({ filename: options.filename });
    if (options.owner !== undefined) query.set('owner', options.owner);
    const response = await this.#request(`${this.url}?${query}`, {
      method: 'POST',
      headers: { 'content-type': options.mediaType },
      body: bytes,
    });
    if (response.status !== 201) throw await this.#failure(response);
    const descriptor = descriptorFrom(await response.json().catch(() => undefined));
    const digest = createHash('sha256').update(bytes).digest('hex');
    if (descriptor.sha256 !== digest || descriptor.sizeBytes !== bytes.byteLength)
      throw unavailable('The artifact store recorded other bytes than those sent');
    return descriptor;
  }

  async lookup(downloadId: string): Promise<ArtifactLookup> {
    const response = await this.#request(`${this.url}?${new URLSearchParams({ id: downloadId })}`, {
      method: 'GET',
    });
    if (response.status !== 200) return this.#refusal(response);
    return { ok: true, descriptor: descriptorFrom(await response.json().catch(() => undefined)) };
  }

  async read(downloadId: string): Promise<ArtifactRead> {
    const found = await this.lookup(downloadId);
    if (!found.ok) return found;
    const response = await this.#request(`${this.url}/content?${new URLSearchParams({ id: downloadId })}`, {
      method: 'GET',
    });
    if (response.status !== 200) return this.#refusal(response);
    let bytes: Buffer;
    try {
      bytes = Buffer.from(await response.arrayBuffer());
    } catch (error) {
      // The gateway cuts a download whose bytes do not match their digest.
      throw unavailable('The artifact could not be read whole from the artifact store', error);
    }
    if (createHash('sha256').update(bytes).digest('hex') !== found.descriptor.sha256) {
      throw new EnvelopeError('ARTIFACT_INTEGRITY_FAILED', 'The bytes read do not match their digest');
    }
    return { ok: true, descriptor: found.descriptor, bytes };
  }

  async close(): Promise<void> {}

  async #request(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, {
        ...init,
        headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${this.#token}` },
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      throw unavailable(`The artifact store at ${this.url} cannot be reached`, error);
    }
  }

  /** A refusal as an EnvelopeError with the gateway's code (ARTIFACT_STORE_UNAVAILABLE when it names none). */
  async #failure(response: Response): Promise<EnvelopeError> {
    const body = (await response.json().catch(() => undefined)) as
      | { error?: { code?: unknown; message?: unknown } }
      | undefined;
    const code = body?.error?.code ?? response.headers.get(ARTIFACT_ERROR_HEADER);
    const message = typeof body?.error?.message === 'string' ? body.error.message : undefined;
    if (typeof code === 'string' && isErrorCode(code))
      return new EnvelopeError(code as ErrorCode, message ?? describeErrorCode(code).message);
    return unavailable(`The artifact store answered ${response.status}`);
  }

  async #refusal(response: Response): Promise<{ ok: false; code: DownloadIdFailure }> {
    const failure = await this.#failure(response);
    if (isDownloadFailure(failure.code)) return { ok: false, code: failure.code };
    throw failure;
  }
}

/**
 * The store a gateway shares with this process, from its environment
 * (MCP_ENVELOPE_ARTIFACTS_URL and MCP_ENVELOPE_ARTIFACTS_TOKEN); undefined
 * when it gave none (no gateway, or an upstream not set to `shared`).
 */
export function artifactStoreFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): RemoteArtifactStore | undefined {
  const url = env[ARTIFACTS_URL_ENV];
  const token = env[ARTIFACTS_TOKEN_ENV];
  if (!url || !token) return undefined;
  return new RemoteArtifactStore({ url, token });
}
