/**
 * The artifact put API: how an upstream set to `"artifacts": "shared"` puts
 * files in the gateway's store without holding any of the gateway's secrets.
 * It is served on a loopback listener of its own (127.0.0.1, a port the
 * system picks), started only when some upstream shares the store, so a
 * gateway serving stdio only has it too. Each start of such an upstream gets
 * a fresh random bearer capability in its environment (remote-store.ts names
 * the variables and the wire format); the one its previous start held stops
 * working, and so does the upstream's last one once it closes for good.
 *
 * What a capability allows, and nothing else: put bytes (the gateway hashes
 * and stores them itself, and signs the link with its own keys, for its own
 * lifetime), and look up or read back a file the same upstream connection put
 * (its restarts included). Ids of files anyone else stored are answered
 * DOWNLOAD_NOT_FOUND, as unknown ones are. A client's bearer token is no
 * capability here, nor is a download id.
 *
 * Bounds: a body is at most `artifacts.maxBytes` (INPUT_TOO_LARGE, refused
 * from its Content-Length before it is read); at most PUT_MAX_IN_FLIGHT puts
 * run at once, and at most PUT_MAX_LIVE files are live, per upstream
 * connection (RESOURCE_EXHAUSTED, retriable, for both).
 * Store failures are answered with their code and its stock message: the
 * store's own messages name its folder, which the upstream is not told.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDownloadHandler } from '../../artifacts/download-handler.ts';
import { isMediaType } from '../../artifacts/headers.ts';
import { type ArtifactDescriptor, OWNER_LABEL } from '../../artifacts/publisher.ts';
import {
  ARTIFACT_ERROR_HEADER,
  ARTIFACTS_TOKEN_ENV,
  ARTIFACTS_URL_ENV,
  descriptorJson,
} from '../../artifacts/remote-store.ts';
import { resolveDownload } from '../../artifacts/resolve-download.ts';
import type { ArtifactService } from '../../artifacts/service.ts';
import type { ResolvedGrant } from '../../artifacts/types.ts';
import { describeErrorCode, EnvelopeError, type ErrorCode } from '../../errors/index.ts';
import { sendJson as sendWholeJson } from '../http/reply.ts';
import { artifactResourceUri } from './resources.ts';

/** Where the API is served on its listener. */
export const PUT_API_PATH = '/artifacts';
/** Puts running at once per upstream connection. */
export const PUT_MAX_IN_FLIGHT = 4;
/** Files put by one upstream connection and not yet expired. */
export const PUT_MAX_LIVE = 1000;
/** The query parameters a put takes: a lifetime is not one of them. */
const PUT_PARAMETERS = new Set(['filename', 'owner']);

/** What the API needs to know of an upstream: its name, and when it closes for good. */
export interface SharingUpstream {
  readonly name: string;
  onStateChange(listener: (state: string) => void): () => void;
}

/** One upstream connection (one `Upstream`, across its restarts): what its capabilities may reach. */
interface Scope {
  /** The owner of everything it puts: `upstream:<name>#<random>`, with `/<label>` when it names one. */
  owner: string;
  /** Its current capability's SHA-256, hex; undefined once revoked. */
  current: string | undefined;
  inFlight: number;
  /** Expiry times (epoch ms) of the files it put, for PUT_MAX_LIVE. */
  live: number[];
}

export interface PutApi {
  /** The API's URL, as upstreams are given it. */
  readonly url: string;
  /** The environment of one start of an upstream: a new capability; its previous start's no longer works. */
  environmentFor(upstream: SharingUpstream): Record<string, string>;
  close(): Promise<void>;
}

export interface PutApiOptions {
  now?: () => number;
  onError?: (error: unknown) => void;
  /** Default PUT_MAX_IN_FLIGHT. */
  maxInFlight?: number;
  /** Default PUT_MAX_LIVE. */
  maxLive?: number;
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A JSON reply no cache keeps: descriptors and refusals are each one caller's. */
function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendWholeJson(res, status, body, { 'cache-control': 'no-store', ...headers });
}

/**
 * A refusal. The body of a request refused before it was read is not read
 * at all: the connection is closed after the answer.
 */
function refuse(
  res: ServerResponse,
  code: ErrorCode,
  message?: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const spec = describeErrorCode(code);
  sendJson(
    res,
    spec.httpStatus,
    { error: { code, message: message ?? spec.message } },
    { [ARTIFACT_ERROR_HEADER]: code, connection: 'close', ...headers },
  );
}

/** Whether `owner` is the scope's, or one of its labels. */
function owns(scope: Scope, owner: string): boolean {
  return owner === scope.owner || owner.startsWith(`${scope.owner}/`);
}

export async function startPutApi(service: ArtifactService, options: PutApiOptions = {}): Promise<PutApi> {
  const now = options.now ?? Date.now;
  const report = options.onError ?? (() => {});
  const maxInFlight = options.maxInFlight ?? PUT_MAX_IN_FLIGHT;
  const maxLive = options.maxLive ?? PUT_MAX_LIVE;
  const capabilities = new Map<string, Scope>();
  const scopes = new WeakMap<SharingUpstream, Scope>();
  let origin = '';

  function descriptorOf(found: ResolvedGrant, downloadId: string): ArtifactDescriptor {
    const url = service.downloadUrl(downloadId);
    return {
      downloadId,
      ...(url === undefined ? {} : { downloadUrl: url }),
      resourceUri: artifactResourceUri(downloadId),
      expiresAt: new Date(found.grant.expiresAt).toISOString(),
      sha256: found.artifact.digest,
      sizeBytes: found.artifact.size,
      filename: found.grant.filename,
      mediaType: found.grant.mediaType,
    };
  }

  /**
   * The scope a request's bearer capability names; undefined for anything else. Capabilities are
   * looked up by their hash, so how long a lookup takes says nothing about a capability's text.
   */
  function scopeOf(req: IncomingMessage): Scope | undefined {
    const match = /^Bearer ([A-Za-z0-9_-]{43})$/.exec(req.headers.authorization ?? '');
    return match ? capabilities.get(hashToken(match[1] as string)) : undefined;
  }

  /** A store that knows only the grants of `scope`: the download handler then serves nothing else. */
  function scopedStore(scope: Scope) {
    return {
      open: service.store.open.bind(service.store),
      openFile: service.store.openFile.bind(service.store),
      async resolveGrant(grantId: string, at?: number) {
        const found = await service.store.resolveGrant(grantId, at);
        return found && owns(scope, found.grant.owner) ? found : undefined;
      },
    };
  }

  async function put(req: IncomingMessage, res: ServerResponse, scope: Scope, query: URLSearchParams) {
    for (const name of query.keys()) {
      if (!PUT_PARAMETERS.has(name)) {
        refuse(
          res,
          'INVALID_ARGUMENT',
          `Unknown parameter ${JSON.stringify(name.slice(0, 40))}: a put takes filename and owner; links live as long as the gateway says`,
        );
        return;
      }
    }
    const mediaType = req.headers['content-type'];
    if (!isMediaType(mediaType)) {
      refuse(
        res,
        'INVALID_ARGUMENT',
        'Content-Type must be the media type of the bytes, such as application/pdf',
      );
      return;
    }
    const label = query.get('owner');
    if (label !== null && !OWNER_LABEL.test(label)) {
      refuse(res, 'INVALID_ARGUMENT', 'owner must be 1 to 128 of A-Z a-z 0-9 . _ : @ / -');
      return;
    }
    const declared = Number(req.headers['content-length']);
    if (req.headers['content-length'] !== undefined && !(declared <= service.maxBytes)) {
      refuse(res, 'INPUT_TOO_LARGE', `The artifact exceeds ${service.maxBytes} bytes`);
      return;
    }
    const at = now();
    scope.live = scope.live.filter((expiry) => expiry > at);
    if (scope.inFlight >= maxInFlight) {
      refuse(res, 'RESOURCE_EXHAUSTED', `At most ${maxInFlight} puts may run at once`);
      return;
    }
    if (scope.live.length >= maxLive) {
      refuse(
        res,
        'RESOURCE_EXHAUSTED',
        `At most ${maxLive} files may be live at once; earlier ones expire first`,
      );
      return;
    }
    scope.inFlight++;
    try {
      const granted = await service.grant(req, {
        filename: query.get('filename') ?? 'artifact',
        mediaType,
        owner: label === null ? scope.owner : `${scope.owner}/${label}`,
      });
      scope.live.push(granted.grant.expiresAt);
      sendJson(res, 201, descriptorJson(descriptorOf(granted, granted.downloadId)));
    } catch (error) {
      if (error instanceof EnvelopeError && error.code !== 'INTERNAL_ERROR') {
        // The store's messages name its folder: the upstream gets the code and its stock message.
        if (error.code === 'ARTIFACT_STORE_UNAVAILABLE') report(error);
        refuse(res, error.code as ErrorCode);
      } else {
        report(error);
        refuse(res, 'INTERNAL_ERROR');
      }
    } finally {
      scope.inFlight--;
    }
  }

  async function lookup(res: ServerResponse, scope: Scope, query: URLSearchParams) {
    const ids = query.getAll('id');
    if (ids.length > 1) {
      refuse(res, 'DOWNLOAD_ID_MALFORMED', 'Give one download id');
      return;
    }
    const found = await resolveDownload(ids[0], service, now());
    if (!found.ok) {
      refuse(res, found.code);
      return;
    }
    // Someone else's file is answered as an unknown one: this says nothing of what others stored.
    if (!owns(scope, found.grant.owner)) {
      refuse(res, 'DOWNLOAD_NOT_FOUND');
      return;
    }
    sendJson(res, 200, descriptorJson(descriptorOf(found, ids[0] as string)));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Only this listener's own address: a page a browser shows cannot reach it under another name.
    if (req.headers.host !== origin) {
      refuse(res, 'FORBIDDEN', 'Host header is not allowed');
      return;
    }
    const scope = scopeOf(req);
    if (!scope) {
      refuse(res, 'UNAUTHORIZED', 'A bearer capability given by the gateway is required', {
        'www-authenticate': 'Bearer',
      });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://put-api.invalid');
    const method = req.method ?? 'GET';
    if (url.pathname === PUT_API_PATH) {
      if (method === 'POST' || method === 'PUT') return put(req, res, scope, url.searchParams);
      if (method === 'GET') return lookup(res, scope, url.searchParams);
      refuse(res, 'METHOD_NOT_ALLOWED', `${method} is not supported here; use POST or GET`, {
        allow: 'GET, POST, PUT',
      });
      return;
    }
    if (url.pathname === `${PUT_API_PATH}/content`) {
      // The download handler's checks and verified sending, over the grants of this upstream alone.
      await createDownloadHandler({
        store: scopedStore(scope),
        keyring: service.keyring,
        now,
        onError: report,
      })(req, res);
      return;
    }
    refuse(res, 'NOT_FOUND', `Nothing at ${url.pathname.slice(0, 100)}`);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      report(error);
      refuse(res, 'INTERNAL_ERROR');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  origin = `127.0.0.1:${port}`;
  const url = `http://${origin}${PUT_API_PATH}`;

  function revoke(scope: Scope): void {
    if (scope.current) capabilities.delete(scope.current);
    scope.current = undefined;
  }

  return {
    url,
    environmentFor(upstream) {
      let scope = scopes.get(upstream);
      if (!scope) {
        const created: Scope = {
          owner: `upstream:${upstream.name}#${randomBytes(8).toString('hex')}`,
          current: undefined,
          inFlight: 0,
          live: [],
        };
        scopes.set(upstream, created);
        const off = upstream.onStateChange((state) => {
          if (state !== 'closed') return;
          off();
          revoke(created);
        });
        scope = created;
      }
      // One start, one capability: whatever an earlier process of this upstream held stops working.
      revoke(scope);
      const token = randomBytes(32).toString('base64url');
      scope.current = hashToken(token);
      capabilities.set(scope.current, scope);
      return { [ARTIFACTS_URL_ENV]: url, [ARTIFACTS_TOKEN_ENV]: token };
    },
    async close() {
      capabilities.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
