import type { ClientCapabilities, Implementation } from '@modelcontextprotocol/server';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY } from '@modelcontextprotocol/server';
import { canonicalize } from '../../canonical/index.ts';
import { isJsonObject } from '../../canonical/json-value.ts';
import type { ClientIdentity } from '../upstreams/upstream.ts';

export type { ClientIdentity };

/**
 * Which of its principal's upstream sets a client is served by: clients that
 * declared the same capabilities share one, so an upstream that lists tools by
 * what its client can do (a sampling tool only for a client that samples) is
 * told exactly what its clients declared, and no client sees a tool it cannot
 * serve. A caller whose client is not known (the info page) takes the set of
 * everything the gateway can relay.
 */
export function capabilityGroup(client: ClientIdentity | undefined, toldPerRequest = false): string {
  if (!client) return '*';
  // The era too: an upstream that speaks both is spoken to in its clients' era (protocol-era.ts).
  const era = client.era ?? 'legacy';
  // 2026-07-28 clients of upstreams that all speak it: each request tells its own capabilities.
  if (era === 'modern' && toldPerRequest) return 'modern *';
  try {
    return `${era} ${canonicalize(client.capabilities ?? {})}`;
  } catch {
    return `${era} ${JSON.stringify(client.capabilities ?? {})}`;
  }
}

/** The client an `initialize` request names (2025 era). */
export function initializingClient(body: unknown): ClientIdentity {
  const params = isJsonObject(body) && isJsonObject(body.params) ? body.params : {};
  return {
    ...(isJsonObject(params.clientInfo) ? { info: params.clientInfo as Implementation } : {}),
    capabilities: isJsonObject(params.capabilities) ? (params.capabilities as ClientCapabilities) : {},
    era: 'legacy',
  };
}

/** The client a 2026-07-28 request names in its `_meta` (of the first request, for a batch). */
export function requestingClient(body: unknown): ClientIdentity {
  const message = Array.isArray(body) ? body[0] : body;
  const params = isJsonObject(message) && isJsonObject(message.params) ? message.params : {};
  const meta = isJsonObject(params._meta) ? params._meta : {};
  const info = meta[CLIENT_INFO_META_KEY];
  const capabilities = meta[CLIENT_CAPABILITIES_META_KEY];
  return {
    ...(isJsonObject(info) ? { info: info as Implementation } : {}),
    capabilities: isJsonObject(capabilities) ? (capabilities as ClientCapabilities) : {},
    era: 'modern',
  };
}

/** Whether two clients would tell an upstream the same: the same identity and capabilities. */
export function sameClient(a: ClientIdentity | undefined, b: ClientIdentity | undefined): boolean {
  if (!a || !b) return a === b;
  return (
    capabilityGroup(a) === capabilityGroup(b) &&
    JSON.stringify(a.info ?? null) === JSON.stringify(b.info ?? null)
  );
}
