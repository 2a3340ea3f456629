/**
 * Serving with some upstreams down. A session opens as long as one of its
 * upstreams started; the others keep retrying in the background (with their
 * restart backoff) and are left out of lists meanwhile, and a call addressed to
 * one fails at once with the reason it is down. What the session advertises is
 * fixed when it opens, so for an upstream that is down then it advertises the
 * capabilities the upstream declared the last time this gateway saw it start,
 * or, never having seen it, tools; and it promises list_changed notifications,
 * which it sends when the upstream comes back.
 */
import type { Server, ServerCapabilities } from '@modelcontextprotocol/server';
import type { Upstream } from '../upstreams/upstream.ts';
import { mergeCapabilities } from './relay.ts';

/**
 * The capabilities a session advertises: the upstreams' own, with a down
 * upstream standing in by what it last declared (`lastKnown`, which its
 * gateway's fleet keeps; else tools only), and, when any is down,
 * `listChanged` on each list, so the recovery can be announced.
 */
export function advertisedCapabilities(
  lastKnown: ReadonlyMap<string, ServerCapabilities>,
  upstreams: readonly Upstream[],
): ServerCapabilities {
  const stand = upstreams.map((upstream) => ({
    capabilities: upstream.available
      ? upstream.capabilities
      : (lastKnown.get(upstream.name) ?? { tools: { listChanged: true } }),
  }));
  const merged = mergeCapabilities(stand);
  if (upstreams.every((upstream) => upstream.available)) return merged;
  for (const list of ['tools', 'prompts', 'resources'] as const) {
    if (merged[list]) merged[list] = { ...merged[list], listChanged: true };
  }
  return merged;
}

/**
 * Tells the downstream client that the lists changed because an upstream came
 * back, for each list the session advertised as changing and the upstream has.
 * A client that cannot take it (not connected yet, an era without these
 * notifications) is not told; the SDK refuses and that is fine.
 */
export async function announceRecovery(
  server: Server,
  advertised: ServerCapabilities,
  upstream: Upstream,
): Promise<void> {
  const has = upstream.capabilities;
  const lists = [
    ['tools', 'notifications/tools/list_changed'],
    ['prompts', 'notifications/prompts/list_changed'],
    ['resources', 'notifications/resources/list_changed'],
  ] as const;
  for (const [list, method] of lists) {
    if (!advertised[list]?.listChanged || !has[list]) continue;
    await server.notification({ method }).catch(() => {});
  }
}
