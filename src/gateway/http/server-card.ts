import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Implementation, ServerCapabilities } from '@modelcontextprotocol/server';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { STATELESS_WIRE_REVISION } from '../../errors/codes.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { UpstreamDeclaration, UpstreamState } from '../operations/upstream-status.ts';
import { NAMESPACE_SEPARATOR } from '../relay/namespace.ts';
import { advertisedServerInfo } from '../relay/relay.ts';
import type { GatewayOptions } from '../relay/upstream-fleet.ts';
import type { Authenticator } from './auth.ts';
import { sendError } from './reply.ts';

/**
 * The gateway's MCP Server Card (SEP-2127, as the Server Card extension's
 * schema.ts and docs/discovery.md define it): what a client reads before it
 * connects, namely who the server is, where its Streamable HTTP endpoint is,
 * which protocol revisions it speaks and whether it wants a bearer token. A
 * card lists no tools, resources or prompts (those stay with the runtime
 * lists); what the gateway fronts goes under the card's `_meta`, the schema's
 * extension point. No command, argument, environment, upstream URL or header
 * is ever read here: an upstream is its name, its transport's kind, its state
 * and what it declared to every client that connected.
 */

export const SERVER_CARD_SCHEMA = 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json';
/** What a client asking for the card names in `Accept`; others get `application/json`. */
export const SERVER_CARD_MEDIA_TYPE = 'application/mcp-server-card+json';
/** The `_meta` member that lists the upstreams. */
export const UPSTREAMS_META_KEY = 'mcp-envelope/upstreams';

/** Where the card is served: the location MCP reserves (`<endpoint>/server-card`) first. */
export function serverCardPaths(mcpPath: string): string[] {
  const reserved = `${mcpPath.replace(/\/+$/, '')}/server-card`;
  // The earlier drafts' well-known locations, which discovery tools still probe.
  return [reserved, '/.well-known/mcp/server-card', '/.well-known/mcp/server-card.json'].filter(
    (path) => path !== mcpPath,
  );
}

/**
 * The protocol revisions the endpoint accepts, newest first: 2026-07-28 on the
 * stateless path, and every revision a 2025-era session negotiates (the list its
 * transport checks `MCP-Protocol-Version` against).
 */
export const SERVED_REVISIONS: readonly string[] = [
  ...new Set([STATELESS_WIRE_REVISION, ...SUPPORTED_PROTOCOL_VERSIONS]),
].sort((a, b) => b.localeCompare(a));

export interface ServerCardHeader {
  name: string;
  description?: string;
  isRequired?: boolean;
  isSecret?: boolean;
  value?: string;
  variables?: Record<string, { description?: string; isRequired?: boolean; isSecret?: boolean }>;
}

export interface ServerCardRemote {
  type: 'streamable-http';
  url: string;
  headers?: ServerCardHeader[];
  supportedProtocolVersions: string[];
}

/** One upstream as the card shows it: name and state to anyone; the rest to those who may see the info page. */
export interface ServerCardUpstream {
  name: string;
  state: UpstreamState;
  transport?: 'stdio' | 'streamable-http';
  /** With several upstreams, its tools and prompts are named `<namePrefix><name>`. */
  namePrefix?: string;
  serverInfo?: Pick<Implementation, 'name' | 'version' | 'title' | 'description' | 'websiteUrl'>;
  capabilities?: ServerCapabilities;
}

export interface ServerCard {
  $schema: string;
  name: string;
  version: string;
  description: string;
  title?: string;
  websiteUrl?: string;
  remotes: ServerCardRemote[];
  _meta: { [UPSTREAMS_META_KEY]: ServerCardUpstream[] };
}

/** An upstream as the card may know it: never its spec, whose command line, environment, URL and headers may hold secrets. */
export interface CardUpstream {
  name: string;
  transport: 'stdio' | 'streamable-http';
  state: UpstreamState;
  /** What it declared when last ready (the status board's). */
  declared?: UpstreamDeclaration;
}

export interface CardInput {
  /** The MCP endpoint's absolute URL, as the caller reached it. */
  endpoint: string;
  /** The identity configured for the gateway (start.ts sets one when it fronts several upstreams). */
  serverInfo?: Implementation;
  upstreams: readonly CardUpstream[];
  /** `required`: every request needs a token; `optional`: tokens are configured and grant tiers. */
  auth: 'required' | 'optional' | 'none';
  /**
   * Whether the caller may see what each upstream declared: it could open the
   * info page (auth is not required, or it presented a valid token). Otherwise
   * each upstream is its name and state, as /healthz tells anyone.
   */
  detailed: boolean;
}

/** The schema's bounds on the card's own fields. */
const NAME_MAX = 200;
const DESCRIPTION_MAX = 100;
const TITLE_MAX = 100;
const VERSION_MAX = 255;
/** How much of a value an upstream chose the card carries (it is served to anyone who asks). */
const TEXT_MAX = 200;
const URL_MAX = 2048;
const DEPTH_MAX = 5;
const MEMBERS_MAX = 32;

/** `namespace/name`, the reverse-DNS form the schema requires of `name`. */
const REVERSE_DNS_NAME = /^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/;

export function buildServerCard(input: CardInput): ServerCard {
  const single = input.upstreams.length === 1 ? input.upstreams[0] : undefined;
  const identity = advertisedServerInfo(input.serverInfo, single?.declared?.serverInfo);
  const fronting = input.serverInfo === undefined && single?.declared?.serverInfo !== undefined;
  const displayName = identity.title || identity.name;
  const description =
    nonEmpty(identity.description) ??
    (fronting
      ? `${displayName}, served through the mcp-envelope gateway`
      : `mcp-envelope gateway in front of ${plural(input.upstreams.length, 'MCP server')}: ${input.upstreams
          .map((upstream) => upstream.name)
          .join(', ')}`);
  const website = webUrl(identity.websiteUrl);
  return {
    $schema: SERVER_CARD_SCHEMA,
    name: cardName(identity.name, new URL(input.endpoint).hostname),
    version: clip(identity.version, VERSION_MAX),
    description: clip(description, DESCRIPTION_MAX),
    title: clip(displayName, TITLE_MAX),
    ...(website ? { websiteUrl: website } : {}),
    remotes: [
      {
        type: 'streamable-http',
        url: input.endpoint,
        ...(input.auth === 'none' ? {} : { headers: [bearerHeader(input.auth === 'required')] }),
        supportedProtocolVersions: [...SERVED_REVISIONS],
      },
    ],
    _meta: {
      [UPSTREAMS_META_KEY]: input.upstreams.map((upstream) =>
        input.detailed
          ? described(upstream, input.upstreams.length > 1)
          : { name: upstream.name, state: upstream.state },
      ),
    },
  };
}

function described(upstream: CardUpstream, several: boolean): ServerCardUpstream {
  const info = upstream.declared?.serverInfo;
  const website = webUrl(info?.websiteUrl);
  return {
    name: upstream.name,
    state: upstream.state,
    transport: upstream.transport,
    ...(several ? { namePrefix: `${upstream.name}${NAMESPACE_SEPARATOR}` } : {}),
    ...(info
      ? {
          serverInfo: {
            name: clip(info.name, TEXT_MAX),
            version: clip(info.version, VERSION_MAX),
            ...(nonEmpty(info.title) ? { title: clip(info.title as string, TEXT_MAX) } : {}),
            ...(nonEmpty(info.description)
              ? { description: clip(info.description as string, TEXT_MAX) }
              : {}),
            ...(website ? { websiteUrl: website } : {}),
          },
        }
      : {}),
    ...(upstream.declared
      ? { capabilities: bounded(upstream.declared.capabilities, 0) as ServerCapabilities }
      : {}),
  };
}

/** The `Authorization` header a client sends: required, or optional when a token only grants a tier. */
function bearerHeader(required: boolean): ServerCardHeader {
  return {
    name: 'Authorization',
    description: required
      ? 'A bearer token issued by the operator of this gateway.'
      : 'Optional: a bearer token issued by the operator of this gateway grants its tier.',
    isRequired: required,
    isSecret: true,
    value: 'Bearer {token}',
    variables: { token: { description: 'The bearer token.', isRequired: required, isSecret: true } },
  };
}

/**
 * The card's `name`: the identity's own when it already has the reverse-DNS
 * form, else `<namespace>/<name>` with the namespace taken from the host the
 * card was asked at (`tools.example.com` gives `com.example.tools`; loopback
 * gives `localhost`), the registry's convention of naming a server under its
 * publisher's domain.
 */
export function cardName(name: string, hostname: string): string {
  if (name.length >= 3 && name.length <= NAME_MAX && REVERSE_DNS_NAME.test(name)) return name;
  const namespace = namespaceOf(hostname).slice(0, 100);
  const own =
    name
      .replace(/[^a-zA-Z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, NAME_MAX - namespace.length - 1) || 'server';
  return `${namespace}/${own}`;
}

function namespaceOf(hostname: string): string {
  const bare = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost') || bare === '::1' || /^127\./.test(bare))
    return 'localhost';
  if (isIP(bare) === 4) return bare;
  if (isIP(bare) === 6) return bare.replace(/[^a-z0-9]+/g, '-');
  return bare
    .split('.')
    .filter((label) => label !== '')
    .reverse()
    .join('.')
    .replace(/[^a-z0-9.-]/g, '-');
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function nonEmpty(value: string | undefined): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

/** At most `max` characters, with an ellipsis when cut (never half a surrogate pair). */
function clip(value: string, max: number): string {
  if (value.length <= max) return value;
  return `${value.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

/** An http(s) URL without credentials, or nothing. */
function webUrl(value: string | undefined): string | undefined {
  if (typeof value !== 'string' || value.length > URL_MAX) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    if (url.username !== '' || url.password !== '') return undefined;
    return url.href;
  } catch {
    return undefined;
  }
}

/**
 * A declared value as the card carries it: JSON only, and bounded in depth,
 * members, items and string length, since the upstream chose it.
 */
function bounded(value: unknown, depth: number): unknown {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string') return clip(value, TEXT_MAX);
  if (typeof value !== 'object' || depth >= DEPTH_MAX) return undefined;
  if (Array.isArray(value))
    return value
      .slice(0, MEMBERS_MAX)
      .map((item) => bounded(item, depth + 1))
      .filter((item) => item !== undefined);
  const copy: Record<string, unknown> = {};
  let members = 0;
  for (const [key, member] of Object.entries(value)) {
    if (members === MEMBERS_MAX) break;
    if (key === '__proto__') continue;
    const kept = bounded(member, depth + 1);
    if (kept === undefined) continue;
    copy[clip(key, TEXT_MAX)] = kept;
    members++;
  }
  return copy;
}

/** Whether a request's path is one the card is served at. */
export function isServerCardPath(path: string | undefined, mcpPath: string): boolean {
  return path !== undefined && serverCardPaths(mcpPath).includes(path);
}

export interface ServeCardOptions {
  gateway: GatewayOptions;
  mcpPath: string;
  auth: Authenticator;
  authRequired: boolean;
}

/** Read by browsers too (docs/discovery.md asks for it); the Host and Origin checks have run before. */
const CORS: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD',
  'access-control-allow-headers': 'Authorization, Content-Type, If-None-Match',
  'access-control-expose-headers': 'ETag',
};

/**
 * Answers GET and HEAD (and a browser's preflight) for the card. A presented
 * bearer token is checked as on the MCP endpoint (a wrong one is refused), but
 * none is needed: a client reads the card before it can have one, to learn
 * that it needs one. What each upstream declared is shown only to a caller that
 * may see the info page. The card carries live states, so it is revalidated
 * (ETag, 304) rather than cached for a time.
 */
export async function serveServerCard(
  req: IncomingMessage,
  res: ServerResponse,
  options: ServeCardOptions,
): Promise<void> {
  const method = req.method ?? 'GET';
  if (method === 'OPTIONS') {
    res.writeHead(204, { ...CORS, 'access-control-max-age': '600' });
    res.end();
    return;
  }
  if (method !== 'GET' && method !== 'HEAD') {
    sendError(res, new EnvelopeError('METHOD_NOT_ALLOWED', `${method} is not supported on the server card`), {
      allow: 'GET, HEAD, OPTIONS',
    });
    return;
  }
  const presented = req.headers.authorization;
  let authenticated = false;
  if (presented !== undefined && (options.authRequired || options.auth.enabled)) {
    // Throws the refusal for a token that is malformed or not one of ours.
    await options.auth.authenticate(req, (req.url ?? '/').split('?')[0] ?? '/');
    authenticated = true;
  }
  const board = options.gateway.status;
  const card = buildServerCard({
    // The Host header passed checkHostAndOrigin: a host name or address, and one this gateway answers to.
    endpoint: `http://${req.headers.host}${options.mcpPath}`,
    ...(options.gateway.serverInfo ? { serverInfo: options.gateway.serverInfo } : {}),
    upstreams: options.gateway.upstreams.map((spec) => {
      const declared = board?.declared(spec.name);
      return {
        name: spec.name,
        transport: spec.kind === 'stdio' ? 'stdio' : 'streamable-http',
        state: board?.get(spec.name).state ?? 'starting',
        ...(declared ? { declared } : {}),
      };
    }),
    auth: options.authRequired ? 'required' : options.auth.enabled ? 'optional' : 'none',
    detailed: !options.authRequired || authenticated,
  });
  const type = (req.headers.accept ?? '').toLowerCase().includes(SERVER_CARD_MEDIA_TYPE)
    ? SERVER_CARD_MEDIA_TYPE
    : 'application/json';
  const body = JSON.stringify(card);
  const tag = `"${createHash('sha256').update(`${type}\n${body}`).digest('base64url').slice(0, 32)}"`;
  const headers: Record<string, string> = {
    'content-type': type,
    etag: tag,
    // What a token showed is that caller's; a shared cache may keep only the card anyone gets.
    'cache-control': authenticated ? 'private, no-cache' : 'public, no-cache',
    vary: 'Accept, Authorization',
    'x-content-type-options': 'nosniff',
    ...CORS,
  };
  if (matches(req.headers['if-none-match'], tag)) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(200, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(method === 'HEAD' ? undefined : body);
}

/** `If-None-Match` names the tag (compared weakly, as RFC 9110 says for it) or is `*`. */
function matches(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  return header
    .split(',')
    .map((entry) => entry.trim().replace(/^W\//, ''))
    .some((entry) => entry === '*' || entry === tag);
}
