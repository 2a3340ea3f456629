import {
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  validateHostHeader,
  validateOriginHeader,
} from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../errors/index.ts';

export interface OriginPolicy {
  /** Extra Host names accepted besides loopback (e.g. a public name behind a proxy). */
  allowedHosts?: readonly string[];
  /** Extra Origins accepted besides loopback ones: full origins (`https://app.example`) or host names. */
  allowedOrigins?: readonly string[];
}

/** A configured name as the SDK reads a header's: lower case, IPv6 in brackets, IDN as punycode. */
function hostnameOf(name: string): string {
  try {
    return new URL(`http://${name}`).hostname;
  } catch {
    return name.toLowerCase();
  }
}

/**
 * DNS-rebinding protection: a page on a hostile domain that resolves to
 * 127.0.0.1 still sends its own Host and Origin, so both must name an
 * allowed host. Throws `forbidden` otherwise.
 *
 * The header parsing and matching are the SDK's (`validateHostHeader`,
 * `validateOriginHeader`, the same checks its own transports run). This
 * wrapper adds what they cannot say: the gateway's error (403 FORBIDDEN naming
 * the header, not the SDK's JSON-RPC -32000 reply), loopback always allowed
 * besides the configured names, and full origins (`https://app.example`)
 * matched exactly, since the SDK's list compares host names only.
 */
export function checkHostAndOrigin(
  host: string | undefined,
  origin: string | undefined,
  policy: OriginPolicy = {},
): void {
  const allowed = allowedBy(policy);
  if (!validateHostHeader(host, allowed.hosts).ok) {
    throw new EnvelopeError('FORBIDDEN', 'Host header is not allowed', { header: 'host' });
  }
  if (origin === undefined) return;
  if (allowed.exactOrigins.has(origin.toLowerCase())) return;
  // The SDK lets an empty header through as absent; a browser never sends one, so it is refused as before.
  if (origin === '' || !validateOriginHeader(origin, allowed.origins).ok) {
    throw new EnvelopeError('FORBIDDEN', 'Origin header is not allowed', { header: 'origin' });
  }
}

interface AllowedNames {
  hosts: string[];
  exactOrigins: Set<string>;
  origins: string[];
}

/** The lists a policy allows, worked out once per policy rather than on every request. */
const allowedLists = new WeakMap<OriginPolicy, AllowedNames>();

function allowedBy(policy: OriginPolicy): AllowedNames {
  let allowed = allowedLists.get(policy);
  if (!allowed) {
    const extra = (policy.allowedOrigins ?? []).map((entry) => entry.toLowerCase());
    allowed = {
      hosts: [...localhostAllowedHostnames(), ...(policy.allowedHosts ?? []).map(hostnameOf)],
      exactOrigins: new Set(extra),
      // Bare names pass to the SDK as host names; `<scheme>://*` entries keep the SDK's meaning (any origin of that scheme).
      origins: [
        ...localhostAllowedOrigins(),
        ...extra.map((entry) => (entry.includes('://') ? entry : hostnameOf(entry))),
      ],
    };
    allowedLists.set(policy, allowed);
  }
  return allowed;
}
