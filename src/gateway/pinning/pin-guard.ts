/**
 * Tool pinning: every definition an upstream lists is compared with the one
 * first seen (or last accepted) for it, so a definition that changes under
 * the gateway (a rug pull: a tool's description or schema rewritten after it
 * was trusted, or its content moved to a new name) is noticed.
 *
 * `warn` serves everything the upstream sent and says what changed (the
 * list's `_meta["mcp-envelope/pins"]`, a TOOL_DEFINITION_CHANGED line for the
 * operator, a count on the status board); `enforce` also leaves the changed
 * definitions out of lists and refuses calls to a changed tool before they
 * reach the upstream, until `mcp-envelope tools accept` makes the new
 * definition the pin; `off` records nothing.
 */
import type { KeyObject } from 'node:crypto';
import type { Implementation, Tool } from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../errors/index.ts';
import { type DefinitionDigests, type DefinitionKind, digestsOf } from './definitions.ts';
import { type ChangeReason, type Owner, type Pin, type PinStore, pinKey } from './pin-store.ts';
import { type SignatureVerdict, verifyListSignature } from './signature.ts';

export type PinMode = 'off' | 'warn' | 'enforce';

/** Where a list result says which of its definitions differ from their pins. */
export const PINS_META_KEY = 'mcp-envelope/pins';

/** What the guard needs of an upstream: its configured name, and the server name it gave. */
export interface PinnedSource {
  readonly name: string;
  readonly serverInfo?: Implementation | undefined;
}

/** One definition that differs from its pin. */
export interface PinChange {
  upstream: string;
  server: string;
  kind: DefinitionKind;
  /** The upstream's own name for it. */
  name: string;
  /** `unsigned`: the upstream's tools must be signed (`pinKeys`) and its list was not, or not validly. */
  reason: ChangeReason | 'unsigned';
  /** The pin it was compared with (the old definition's), null when none. */
  pinned: string | null;
  current: string;
  /** For `renamed`: the pinned definition whose content it took. */
  renamedFrom?: string;
}

export interface PinGuardOptions {
  store: PinStore;
  /** The mode of each configured upstream (`off` for one not named). */
  modes: Readonly<Record<string, PinMode>>;
  /** A change seen for the first time (once per definition and digest, across sets and restarts). */
  onChange?: (change: PinChange, mode: PinMode) => void;
  /** A call refused because its tool changed. */
  onRefused?: (change: PinChange) => void;
  /** Keys one of which must sign each upstream's tools/list (signature.ts); none: lists are not signed. */
  keys?: Readonly<Record<string, readonly KeyObject[]>>;
  /** An upstream's tools/list found unsigned or badly signed (once per reason), or signed again (`undefined`). */
  onSignature?: (upstream: string, problem: string | undefined, mode: PinMode) => void;
}

/** The server name a pin is kept under: the one the upstream gave at initialize. */
function ownerOf(source: PinnedSource): Owner {
  return { upstream: source.name, server: source.serverInfo?.name ?? '' };
}

type Verdict = { ok: true; firstSeen?: boolean } | { ok: false; change: PinChange };

export class PinGuard {
  readonly store: PinStore;
  readonly #options: PinGuardOptions;
  /** Digests of each listed tool object (an upstream keeps the same objects until its list changes). */
  readonly #digests = new WeakMap<Tool, DefinitionDigests | null>();
  /**
   * Each tool object's verdict, as of the pins' version `#seen`; dropped whole when a list or a
   * refused call finds the version moved (an operator accepted something).
   */
  #verdicts = new WeakMap<Tool, { owner: string; verdict: Verdict }>();
  #seen = -1;
  /** The latest signature verdict on each signing upstream's tools/list. */
  readonly #signatures = new Map<string, SignatureVerdict>();

  constructor(options: PinGuardOptions) {
    this.store = options.store;
    this.#options = options;
  }

  mode(upstream: string): PinMode {
    return this.#options.modes[upstream] ?? 'off';
  }

  /** Whether any upstream is pinned at all (off everywhere: nothing to do). */
  get active(): boolean {
    return Object.values(this.#options.modes).some((mode) => mode !== 'off');
  }

  /** Whether the upstream's tools/list must be signed (it has keys, and pinning is on). */
  signs(upstream: string): boolean {
    return this.mode(upstream) !== 'off' && (this.#options.keys?.[upstream]?.length ?? 0) > 0;
  }

  /** Verifies the signature of each tools/list page of a signing upstream; the verdict is kept as its latest. */
  async verifyPages(
    source: PinnedSource,
    pages: readonly Record<string, unknown>[],
  ): Promise<SignatureVerdict> {
    const keys = this.#options.keys?.[source.name] ?? [];
    let verdict: SignatureVerdict = { ok: true };
    for (const page of pages) {
      verdict = await verifyListSignature(page, 'tools', keys);
      if (!verdict.ok) break;
    }
    const before = this.#signatures.get(source.name);
    this.#signatures.set(source.name, verdict);
    const problem = verdict.ok ? undefined : verdict.reason;
    const was = before === undefined ? undefined : before.ok ? null : before.reason;
    if ((problem ?? null) !== (was ?? null) && !(was === undefined && problem === undefined))
      this.#options.onSignature?.(source.name, problem, this.mode(source.name));
    return verdict;
  }

  /** The signature problem of a signing upstream's latest tools/list, if any (none seen yet is one). */
  #unsigned(upstream: string, signed?: SignatureVerdict): string | undefined {
    if (!this.signs(upstream)) return undefined;
    const verdict = signed ?? this.#signatures.get(upstream);
    if (!verdict) return 'no signed tools/list seen yet';
    return verdict.ok ? undefined : verdict.reason;
  }

  /**
   * Compares one upstream's listed items of a kind with their pins: items
   * seen for the first time are pinned, changed ones noted. Returns the
   * items to pass on (in `enforce`, without the changed ones) and the changes.
   */
  review(
    source: PinnedSource,
    kind: DefinitionKind,
    items: readonly Record<string, unknown>[],
    signed?: SignatureVerdict,
  ): { items: Record<string, unknown>[]; changes: PinChange[] } {
    const mode = this.mode(source.name);
    if (mode === 'off') return { items: [...items], changes: [] };
    this.#refresh();
    const owner = ownerOf(source);
    const unsigned = kind === 'tool' ? this.#unsigned(source.name, signed) : undefined;
    // A list that should be signed and is not pins nothing: each of its tools is noted as such.
    if (unsigned !== undefined) return this.#unsignedList(owner, items, mode);
    const listed = items.map((item) => ({ item, digests: digestsOf(kind, item) }));
    const names = new Set(listed.flatMap(({ digests }) => (digests ? [digests.name] : [])));
    // Compared with the pins from before this list: twins within one list are no rename.
    const before = this.store.pinsOf(source.name, kind);
    const firstSeen: DefinitionDigests[] = [];
    const kept: Record<string, unknown>[] = [];
    const changes: PinChange[] = [];
    for (const { item, digests } of listed) {
      if (!digests) {
        kept.push(item);
        continue;
      }
      const verdict = this.#verdict(owner, kind, digests, names, before);
      if (verdict.ok) {
        if (verdict.firstSeen) firstSeen.push(digests);
        else this.#settled(owner, kind, digests.name);
        kept.push(item);
        continue;
      }
      changes.push(verdict.change);
      this.#note(verdict.change, digests, mode);
      if (mode !== 'enforce') kept.push(item);
    }
    this.store.pinFirstSeen(owner, kind, firstSeen);
    return { items: kept, changes };
  }

  #unsignedList(
    owner: Owner,
    items: readonly Record<string, unknown>[],
    mode: PinMode,
  ): { items: Record<string, unknown>[]; changes: PinChange[] } {
    const changes = items.flatMap((item) => {
      const digests = digestsOf('tool', item);
      if (!digests) return [];
      const pin = this.store.pin(owner, 'tool', digests.name);
      return [
        {
          upstream: owner.upstream,
          server: owner.server,
          kind: 'tool' as const,
          name: digests.name,
          reason: 'unsigned' as const,
          pinned: pin?.digest ?? null,
          current: digests.digest,
        },
      ];
    });
    return { items: mode === 'enforce' ? [] : [...items], changes };
  }

  #verdict(
    owner: Owner,
    kind: DefinitionKind,
    digests: DefinitionDigests,
    names: ReadonlySet<string>,
    before: readonly Pin[],
  ): Verdict {
    const change = (reason: ChangeReason, pinned: Pin | undefined, renamedFrom?: string): Verdict => ({
      ok: false,
      change: {
        upstream: owner.upstream,
        server: owner.server,
        kind,
        name: digests.name,
        reason,
        pinned: pinned?.digest ?? null,
        current: digests.digest,
        ...(renamedFrom === undefined ? {} : { renamedFrom }),
      },
    });
    const pin = this.store.pin(owner, kind, digests.name);
    if (pin) return pin.digest === digests.digest ? { ok: true } : change('changed', pin);
    // The upstream now calls itself something else: its definitions are not taken on trust again.
    const elsewhere = before.find((other) => other.name === digests.name && other.server !== owner.server);
    if (elsewhere) return change('server-changed', elsewhere);
    // A new name over a pinned definition's content, or over the schemas of one that is gone.
    const twin = before.find(
      (other) =>
        other.server === owner.server &&
        other.name !== digests.name &&
        (other.content_digest === digests.content ||
          (other.shape_digest === digests.shape && !names.has(other.name))),
    );
    if (twin) return change('renamed', twin, twin.name);
    return { ok: true, firstSeen: true };
  }

  #note(change: PinChange, digests: DefinitionDigests, mode: PinMode): void {
    // A signature problem is the list's, not a definition an operator could accept.
    if (change.reason === 'unsigned') return;
    const fresh = this.store.notePending(
      { upstream: change.upstream, server: change.server },
      change.kind,
      digests,
      {
        reason: change.reason as ChangeReason,
        pinned: change.pinned,
        ...(change.renamedFrom === undefined ? {} : { renamedFrom: change.renamedFrom }),
      },
    );
    if (fresh) this.#options.onChange?.(change, mode);
    this.#pending.add(pinKey(change.upstream, change.server, change.kind, change.name));
  }

  /**
   * Definitions this gateway noted as pending, by `pinKey`: when one is listed as pinned again
   * (the upstream went back), what was pending for it is forgotten, so that `tools accept` is
   * not offered a definition nobody serves any more.
   */
  readonly #pending = new Set<string>();

  #settled(owner: Owner, kind: DefinitionKind, name: string): void {
    const key = pinKey(owner.upstream, owner.server, kind, name);
    if (!this.#pending.delete(key)) return;
    this.store.clearPending(owner, kind, name);
  }

  /**
   * The check of one tools/call, before it goes upstream: the digest of the
   * definition the call runs under, or, in `enforce`, TOOL_DEFINITION_CHANGED
   * when that definition is not the pinned one. `listed` gives the upstream's
   * whole list, reviewed when the tool has no pin yet (a rename shows only
   * against the others).
   */
  async checkCall(
    source: PinnedSource,
    tool: Tool | undefined,
    listed: () => Promise<ReadonlyMap<string, Tool>>,
    called: string,
    /** Lists the upstream's tools afresh and verifies their signature (`verifyPages`), for a signing upstream. */
    verifyNow?: () => Promise<unknown>,
  ): Promise<string | undefined> {
    const mode = this.mode(source.name);
    if (mode === 'off') return undefined;
    if (this.signs(source.name)) {
      if (!this.#signatures.has(source.name)) await verifyNow?.();
      const problem = this.#unsigned(source.name);
      if (problem !== undefined && mode === 'enforce')
        throw new EnvelopeError(
          'TOOL_SIGNATURE_INVALID',
          `Tool ${called} comes from a tools/list of upstream ${source.name} that is not validly signed by its pinKeys: ${problem}; calls to its tools are refused until it is`,
          { upstream: source.name, tool: called, reason: problem },
        );
    }
    if (!tool) {
      if (mode === 'enforce')
        throw this.#refusal(source, called, 'is not listed by its upstream, so it has no pinned definition');
      return undefined;
    }
    const digests = this.#digestsOf(tool);
    if (!digests) return undefined;
    const owner = `${source.name}\u0000${source.serverInfo?.name ?? ''}`;
    // The hot path: a definition already found to be the pinned one (or, in warn, found at all:
    // there the verdict changes nothing the call sees) is not asked of the store again until a
    // list finds that the pins moved. A refused one is, so an acceptance is served at once.
    const known = this.#verdicts.get(tool);
    if (known?.owner === owner && (known.verdict.ok || mode === 'warn')) return digests.digest;
    this.#refresh();
    const cached = this.#verdicts.get(tool);
    let verdict = cached?.owner === owner ? cached.verdict : undefined;
    if (!verdict) {
      const at = ownerOf(source);
      let pin = this.store.pin(at, 'tool', digests.name);
      let names: ReadonlySet<string> = new Set([digests.name]);
      if (!pin) {
        const all = [...(await listed()).values()];
        names = new Set(all.map((each) => each.name));
        this.review(source, 'tool', all as unknown as Record<string, unknown>[]);
        pin = this.store.pin(at, 'tool', digests.name);
      }
      verdict = pin
        ? pin.digest === digests.digest
          ? { ok: true }
          : this.#verdict(at, 'tool', digests, names, [])
        : this.#verdict(at, 'tool', digests, names, this.store.pinsOf(source.name, 'tool'));
      if (!verdict.ok) this.#note(verdict.change, digests, mode);
      this.#verdicts.set(tool, { owner, verdict });
    }
    if (verdict.ok || mode !== 'enforce') return digests.digest;
    this.#options.onRefused?.(verdict.change);
    throw this.#refusal(source, called, 'changed since it was pinned', verdict.change);
  }

  /** Reads the pins' version (cheap unless another process wrote); verdicts from before a change are dropped. */
  #refresh(): void {
    const version = this.store.version;
    if (version === this.#seen) return;
    this.#seen = version;
    this.#verdicts = new WeakMap();
  }

  #digestsOf(tool: Tool): DefinitionDigests | undefined {
    let digests = this.#digests.get(tool);
    if (digests === undefined) {
      digests = digestsOf('tool', tool as unknown as Record<string, unknown>) ?? null;
      this.#digests.set(tool, digests);
    }
    return digests ?? undefined;
  }

  #refusal(source: PinnedSource, called: string, why: string, change?: PinChange): EnvelopeError {
    return new EnvelopeError(
      'TOOL_DEFINITION_CHANGED',
      `Tool ${called} ${why}; calls to it are refused until an operator reviews it ` +
        `(mcp-envelope tools diff --upstream ${source.name} --tool ${change?.name ?? called}) and accepts it ` +
        `(mcp-envelope tools accept --upstream ${source.name} --tool ${change?.name ?? called})`,
      {
        upstream: source.name,
        tool: called,
        ...(change
          ? {
              reason: change.reason,
              pinned: change.pinned,
              current: change.current,
              ...(change.renamedFrom === undefined ? {} : { renamed_from: change.renamedFrom }),
            }
          : {}),
      },
    );
  }
}

/** What a list's `_meta["mcp-envelope/pins"]` says of one change; `name` as the client knows it. */
export function changeMeta(change: PinChange, name: string, mode: PinMode): Record<string, unknown> {
  return {
    kind: change.kind,
    name,
    upstream: change.upstream,
    reason: change.reason,
    pinned: change.pinned,
    current: change.current,
    ...(change.renamedFrom === undefined ? {} : { renamedFrom: change.renamedFrom }),
    action: mode === 'enforce' ? 'hidden' : 'served',
  };
}

/** The operator's line for a change, led by its stable code. */
export function pinChangeLine(change: PinChange, mode: PinMode): string {
  const what =
    change.reason === 'unsigned'
      ? 'comes from a tools/list that is not validly signed'
      : change.reason === 'renamed'
        ? `takes the pinned definition of ${change.renamedFrom} under a new name`
        : change.reason === 'server-changed'
          ? `comes from a server now named "${change.server}", not the one it was pinned under`
          : 'differs from its pin';
  return (
    `TOOL_DEFINITION_CHANGED: upstream ${change.upstream} ${change.kind} ${change.name} ${what} ` +
    `(pinned ${change.pinned ?? 'none'}, now ${change.current}); ` +
    (mode === 'enforce' ? 'hidden and refused until accepted' : 'served as it is') +
    `; review with mcp-envelope tools diff --upstream ${change.upstream} --tool ${change.name}`
  );
}

/** The operator's line for an upstream whose tools/list is not (or again) validly signed. */
export function signatureLine(upstream: string, problem: string | undefined, mode: PinMode): string {
  if (problem === undefined) return `upstream ${upstream}: its tools/list is validly signed again`;
  return (
    `TOOL_SIGNATURE_INVALID: upstream ${upstream} tools/list: ${problem}; ` +
    (mode === 'enforce' ? 'its tools are hidden and refused' : 'served as it is')
  );
}
