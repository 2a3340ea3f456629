/**
 * The gateway's own look at an upstream's definitions, so a change is noticed
 * when it happens (the upstream started, came back, or said a list changed),
 * not only when a client next lists or calls.
 */
import { collectPages } from '../jsonrpc/pagination.ts';
import type { Upstream } from '../upstreams/upstream.ts';
import { type DefinitionKind, KINDS } from './definitions.ts';
import type { PinGuard } from './pin-guard.ts';
import type { SignatureVerdict } from './signature.ts';

/** Which lists a `list_changed` notification is about. */
const CHANGED_KINDS: Readonly<Record<string, readonly DefinitionKind[]>> = {
  'notifications/tools/list_changed': ['tool'],
  'notifications/prompts/list_changed': ['prompt'],
  'notifications/resources/list_changed': ['resource-template'],
};

/** Compares the lists the upstream offers (all of them, or those `method` says changed) with their pins. */
export async function observeDefinitions(pins: PinGuard, upstream: Upstream, method?: string): Promise<void> {
  if (pins.mode(upstream.name) === 'off' || !upstream.available) return;
  const kinds =
    method === undefined ? (['tool', 'prompt', 'resource-template'] as const) : CHANGED_KINDS[method];
  const offered = upstream.capabilities;
  for (const kind of kinds ?? []) {
    try {
      if (kind === 'tool') {
        if (!offered.tools) continue;
        if (pins.signs(upstream.name)) {
          const { items, verdict } = await signedListing(pins, upstream);
          pins.review(upstream, kind, items, verdict);
          continue;
        }
        const tools = [...(await upstream.listedTools()).values()];
        pins.review(upstream, kind, tools as unknown as Record<string, unknown>[]);
        continue;
      }
      if (kind === 'prompt' ? !offered.prompts : !offered.resources) continue;
      const { method: list, key } = KINDS[kind];
      const items = await collectPages((params) => upstream.request(list, params), key);
      pins.review(upstream, kind, items as Record<string, unknown>[]);
    } catch {
      // An upstream that cannot list now is checked at the next list a client or a call makes.
    }
  }
}

/** A signing upstream's tools/list, every page, with the verdict on their signatures. */
async function signedListing(
  pins: PinGuard,
  upstream: Upstream,
): Promise<{ items: Record<string, unknown>[]; verdict: SignatureVerdict }> {
  const pages: Record<string, unknown>[] = [];
  const items = await collectPages(async (params) => {
    const page = await upstream.request('tools/list', params);
    pages.push(page);
    return page;
  }, 'tools');
  return { items: items as Record<string, unknown>[], verdict: await pins.verifyPages(upstream, pages) };
}

/** Lists a signing upstream's tools to verify their signature now (a call came before any list). */
export async function verifySignedList(pins: PinGuard, upstream: Upstream): Promise<void> {
  try {
    await signedListing(pins, upstream);
  } catch {
    // Unlisted, the signature stays unverified: in enforce the call is refused.
  }
}
