import { EnvelopeError } from '../../errors/index.ts';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export interface OriginPolicy {
  /** Extra Host names accepted besides loopback (e.g. a public name behind a proxy). */
  allowedHosts?: readonly string[];
  /** Extra Origins accepted besides loopback ones: full origins (`https://app.example`) or host names. */
  allowedOrigins?: readonly string[];
}

function hostnameOf(hostHeader: string): string {
  // "[::1]:8080" keeps its brackets; "name:8080" loses the port.
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1).toLowerCase();
  return (hostHeader.split(':')[0] ?? '').toLowerCase();
}

/**
 * DNS-rebinding protection: a page on a hostile domain that resolves to
 * 127.0.0.1 still sends its own Host and Origin, so both must name an
 * allowed host. Throws `forbidden` otherwise.
 */
export function checkHostAndOrigin(
  host: string | undefined,
  origin: string | undefined,
  policy: OriginPolicy = {},
): void {
  const hosts = new Set([...LOOPBACK, ...(policy.allowedHosts ?? []).map((h) => h.toLowerCase())]);
  if (!host || !hosts.has(hostnameOf(host))) {
    throw new EnvelopeError('FORBIDDEN', 'Host header is not allowed', { header: 'host' });
  }
  if (origin === undefined) return;
  const extra = (policy.allowedOrigins ?? []).map((o) => o.toLowerCase());
  if (extra.includes(origin.toLowerCase())) return;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw new EnvelopeError('FORBIDDEN', 'Origin header is not allowed', { header: 'origin' });
  }
  const name = hostnameOf(originHost);
  if (!LOOPBACK.has(name) && !extra.includes(name)) {
    throw new EnvelopeError('FORBIDDEN', 'Origin header is not allowed', { header: 'origin' });
  }
}
