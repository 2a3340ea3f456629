import { isIPv6 } from 'node:net';
import { localhostAllowedHostnames, localhostAllowedOrigins } from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../errors/index.ts';
import type { RequestScope } from './scope.ts';

export interface OriginPolicy {
  /** Extra Host names accepted besides loopback (e.g. a public name behind a proxy). */
  allowedHosts?: readonly string[];
  /** Extra Origins accepted besides loopback ones: full origins (`https://app.example`) or host names. */
  allowedOrigins?: readonly string[];
}

/** A configured name as a header's is compared: lower case, IPv6 in brackets, IDN as punycode. */
function hostnameOf(name: string): string {
  try {
    return new URL(`http://${name}`).hostname;
  } catch {
    return name.toLowerCase();
  }
}

/**
 * `host[:port]` exactly (RFC 9110 `Host`): a DNS name or IPv4 address, or an
 * IPv6 address in brackets that close the host. Nothing else: no user info,
 * path, spaces, empty port, or text after the brackets (`[::1]evil.com`).
 * The URL parser accepts and repairs all of those, so it is not used here.
 */
const HOST =
  /^(?:(\[[0-9a-f:.]+\])|([a-z0-9](?:[a-z0-9_-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9])?)*))(?::(\d{1,5}))?$/i;

/** The host name of a `host[:port]` value (lower case, IPv6 bracketed), or undefined when it is not one. */
export function parseHost(value: string): string | undefined {
  const match = HOST.exec(value);
  if (!match) return undefined;
  const [, ipv6, name, port] = match;
  if (port !== undefined && Number(port) > 65_535) return undefined;
  if (ipv6 !== undefined) return isIPv6(ipv6.slice(1, -1)) ? ipv6.toLowerCase() : undefined;
  return name?.toLowerCase();
}

/**
 * An origin as browsers serialize it (RFC 6454): `scheme://host[:port]` and
 * nothing more. Returns its scheme and host name, or undefined.
 */
function parseOrigin(value: string): { scheme: string; hostname: string } | undefined {
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/?#@\s]+)$/i.exec(value);
  if (!match) return undefined;
  const hostname = parseHost(match[2] as string);
  return hostname === undefined ? undefined : { scheme: (match[1] as string).toLowerCase(), hostname };
}

/**
 * DNS-rebinding protection: a page on a hostile domain that resolves to
 * 127.0.0.1 still sends its own Host and Origin, so both must name an
 * allowed host. Throws `forbidden` otherwise.
 *
 * Both headers are parsed strictly here rather than by the SDK's validators,
 * which read them with the URL parser: that repairs what it is given, so
 * `a@localhost` or `localhost/x` passed as Host `localhost`, and any scheme
 * (`javascript://localhost`) passed as a loopback origin. Loopback names are
 * always allowed besides the configured ones; an Origin must be http(s),
 * unless the configuration lists it whole or lists its scheme as
 * `<scheme>://*` (browser extensions).
 */
export function checkHostAndOrigin(
  host: string | undefined,
  origin: string | undefined,
  policy: OriginPolicy = {},
): void {
  checkAgainst(host, origin, allowedBy(policy));
}

/** The Host/Origin guard of a request, against the names its gateway allows (`allowedBy`, worked out once). */
export function checkOrigin(scope: RequestScope, allowed: AllowedNames): void {
  checkAgainst(scope.req.headers.host, scope.req.headers.origin, allowed);
}

function checkAgainst(host: string | undefined, origin: string | undefined, allowed: AllowedNames): void {
  const hostname = host === undefined ? undefined : parseHost(host);
  if (hostname === undefined || !allowed.hosts.has(hostname)) {
    throw new EnvelopeError('FORBIDDEN', 'Host header is not allowed', { header: 'host' });
  }
  if (origin === undefined) return;
  if (!originAllowed(origin, allowed)) {
    throw new EnvelopeError('FORBIDDEN', 'Origin header is not allowed', { header: 'origin' });
  }
}

function originAllowed(origin: string, allowed: AllowedNames): boolean {
  const lower = origin.toLowerCase();
  if (allowed.exactOrigins.has(lower)) return true;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/[^\s/?#@]+$/.exec(lower)?.[1];
  if (scheme !== undefined && allowed.anyOfScheme.has(scheme)) return true;
  // An empty header or `null` (a sandboxed frame, a file: page) names no origin to trust.
  const parsed = parseOrigin(origin);
  return (
    parsed !== undefined &&
    (parsed.scheme === 'http' || parsed.scheme === 'https') &&
    allowed.originHosts.has(parsed.hostname)
  );
}

/** The names a policy allows: worked out once per gateway rather than on every request. */
export interface AllowedNames {
  hosts: Set<string>;
  exactOrigins: Set<string>;
  /** Schemes listed as `<scheme>://*`: every origin of them is allowed. */
  anyOfScheme: Set<string>;
  /** Host names whose http(s) origins are allowed, on any port. */
  originHosts: Set<string>;
}

/** The names a policy allows: loopback ones and the configured ones. */
export function allowedBy(policy: OriginPolicy): AllowedNames {
  const extra = (policy.allowedOrigins ?? []).map((entry) => entry.toLowerCase());
  const wildcard = extra.filter((entry) => /^[a-z][a-z0-9+.-]*:\/\/\*$/.test(entry));
  return {
    hosts: new Set([...localhostAllowedHostnames(), ...(policy.allowedHosts ?? []).map(hostnameOf)]),
    exactOrigins: new Set(extra.filter((entry) => entry.includes('://') && !wildcard.includes(entry))),
    anyOfScheme: new Set(wildcard.map((entry) => entry.slice(0, entry.indexOf('://')))),
    originHosts: new Set([
      ...localhostAllowedOrigins(),
      ...extra.filter((entry) => !entry.includes('://')).map(hostnameOf),
    ]),
  };
}
