import type { PriorDiscovery, VersionNegotiationOptions } from '@modelcontextprotocol/client';
import { STATELESS_WIRE_REVISION } from '../../errors/codes.ts';

import type { UpstreamProtocol } from '../defaults.ts';

export type { UpstreamProtocol };

/** The 2026-07-28 revision and later: requests stand alone, each carrying the client's identity. */
export const MODERN_REVISION = STATELESS_WIRE_REVISION;

/**
 * How long a 2025-era verdict is trusted before the upstream is probed again:
 * a server upgraded in place still answers `initialize`, so only time retires
 * the verdict. A 2026-07-28 verdict needs no horizon: a stale one fails at the
 * next start, which forgets it.
 */
export const LEGACY_VERDICT_HORIZON_MS = 10 * 60_000;

/** How long a stdio upstream may take to answer the probe before it is taken for a 2025-era server. */
export const STDIO_PROBE_TIMEOUT_MS = 5_000;

/**
 * What an upstream was found to speak: 2026-07-28 (`modern`, perhaps the 2025
 * handshake too), 2026-07-28 alone (`modern-only`: it refused the 2025
 * handshake), or the 2025 handshake alone (`legacy`, dated: see the horizon).
 */
type Verdict =
  | { era: 'modern'; version: string }
  | { era: 'modern-only'; version: string }
  | { era: 'legacy'; at: number };

/** The era of the client(s) a connection serves: it is spoken to in theirs where the upstream speaks both. */
export type ClientEra = 'legacy' | 'modern';

/**
 * What each upstream was found to speak, kept for the gateway's life and
 * shared by every connection to it (restarts, each principal's set), so the
 * probe is paid once per upstream instead of once per connection. Keyed by
 * the upstream's configured name: its address and credentials are configuration,
 * the same for every principal, so one authorization context per name.
 */
export class EraMemory {
  readonly #verdicts = new Map<string, Verdict>();

  remember(upstream: string, era: Verdict['era'], version: string | undefined): void {
    this.#verdicts.set(
      upstream,
      era === 'legacy' ? { era, at: Date.now() } : { era, version: version ?? MODERN_REVISION },
    );
  }

  forget(upstream: string): void {
    this.#verdicts.delete(upstream);
  }

  /** Whether `upstream` was found to speak 2026-07-28 (where each request carries its client's capabilities). */
  speaksModern(upstream: string): boolean {
    const era = this.#verdicts.get(upstream)?.era;
    return era === 'modern' || era === 'modern-only';
  }

  /** The verdict still trusted for `upstream`, if any. */
  recall(upstream: string): Verdict | undefined {
    const verdict = this.#verdicts.get(upstream);
    if (verdict?.era === 'legacy' && Date.now() - verdict.at > LEGACY_VERDICT_HORIZON_MS) {
      this.#verdicts.delete(upstream);
      return undefined;
    }
    return verdict;
  }
}

/** How one connection attempt negotiates: the client's option, and the verdict it starts from. */
export interface Negotiation {
  versionNegotiation: VersionNegotiationOptions;
  prior?: PriorDiscovery;
  /** Whether this attempt probes with no verdict to go on (a failure may then mean a 2025-era server). */
  probing: boolean;
  /** The 2025 handshake tried first for 2025-era clients: refused as an unknown version, 2026-07-28 is next. */
  legacyFirst?: boolean;
}

/** The negotiation after the 2025 handshake was refused: the server speaks 2026-07-28 alone. */
export const MODERN_ONLY: Negotiation = {
  versionNegotiation: { mode: { pin: MODERN_REVISION } },
  probing: false,
};

/**
 * The negotiation for the next connection. A pin is honoured as configured.
 * Under `auto`, the connection speaks its clients' era where the upstream
 * speaks both (the eras differ in more than framing: 2025-era servers push
 * requests to their client, take logging/setLevel and subscriptions), and the
 * other where it speaks only that one: for 2025-era clients the 2025 handshake
 * first, 2026-07-28 when that is refused; for 2026-07-28 clients a remembered
 * 2026-07-28 verdict is pinned (one `server/discover`, which also refreshes
 * what the server offers), a remembered 2025-era one skips the probe, and
 * otherwise the server is probed.
 */
export function negotiationFor(
  protocol: UpstreamProtocol,
  remembered: Verdict | undefined,
  kind: 'stdio' | 'http',
  startTimeoutMs: number,
  clientEra: ClientEra = 'legacy',
): Negotiation {
  if (protocol === '2025-11-25') return { versionNegotiation: { mode: 'legacy' }, probing: false };
  if (protocol === MODERN_REVISION)
    return { versionNegotiation: { mode: { pin: protocol } }, probing: false };
  if (remembered?.era === 'legacy') {
    return { versionNegotiation: { mode: 'auto' }, prior: { kind: 'legacy' }, probing: false };
  }
  if (remembered?.era === 'modern-only' || (remembered?.era === 'modern' && clientEra === 'modern')) {
    return { versionNegotiation: { mode: { pin: remembered.version } }, probing: false };
  }
  if (clientEra === 'legacy') {
    return { versionNegotiation: { mode: 'legacy' }, probing: false, legacyFirst: true };
  }
  // On stdio a third of the start's time at most, so a server that ignores the probe is
  // started again and answers initialize within the same start timeout.
  const timeoutMs =
    kind === 'stdio'
      ? Math.max(1, Math.min(STDIO_PROBE_TIMEOUT_MS, Math.floor(startTimeoutMs / 3)))
      : startTimeoutMs;
  return { versionNegotiation: { mode: 'auto', probe: { timeoutMs } }, probing: true };
}
