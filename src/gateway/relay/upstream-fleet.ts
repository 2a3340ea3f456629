import type { ServerCapabilities } from '@modelcontextprotocol/server';
import type { ArtifactService } from '../../artifacts/service.ts';
import type { EnvelopeError } from '../../errors/index.ts';
import type { UpstreamStatusBoard } from '../operations/upstream-status.ts';
import { observeDefinitions } from '../pinning/observe.ts';
import { causeLines } from '../upstreams/child-transport.ts';
import { EraMemory } from '../upstreams/protocol-era.ts';
import { operatorView } from '../upstreams/redact.ts';
import {
  processResultBudget,
  type ResultBudget,
  SET_RESULT_BUDGET_BYTES,
  setResultBudget,
} from '../upstreams/result-budget.ts';
import {
  type ClientIdentity,
  type ConfiguredUpstream,
  Upstream,
  UpstreamFailure,
  type UpstreamOptions,
} from '../upstreams/upstream.ts';
import { advertisedCapabilities } from './availability.ts';
import type { RelayOptions } from './relay.ts';

/**
 * The upstreams of one gateway, built once when it starts: the configured
 * upstreams and the options every connection to them is made with, and what
 * the gateway learns of them while it runs (each one's state for the
 * operator, the revision it speaks, what it last declared, which are reported
 * down). Every set of upstreams the gateway starts (a principal's shared set,
 * a session's own, the stdio gateway's) is instantiated and watched here, so
 * what one set learns serves the next, and two gateways in one process keep
 * apart: nothing of it is kept per module.
 */

export interface GatewayOptions extends RelayOptions {
  upstreams: readonly ConfiguredUpstream[];
  upstream?: UpstreamOptions;
  /** Where messages about upstreams go: one down when a session opens, one back (never stdout). */
  report?: (message: string) => void;
  /** Where each upstream's state is kept for the operator (banner, info page, /healthz). */
  status?: UpstreamStatusBoard;
  /**
   * What each upstream was found to speak (protocol-era.ts), when several
   * fleets share it (the stdio and HTTP gateways of one process); default: a
   * memory of the fleet's own.
   */
  eras?: EraMemory;
  /**
   * The budgets for upstream answers held at once (result-budget.ts): the
   * process's (default: the one of this process, PROCESS_RESULT_BUDGET_BYTES)
   * and each upstream set's size (default SET_RESULT_BUDGET_BYTES). Not a
   * setting: tests pass smaller ones.
   */
  resultBudgets?: { process?: ResultBudget; setBytes?: number };
  /** The artifact store and download links (large results as files); absent when artifacts are off. */
  artifacts?: ArtifactService;
}

/** Whether the upstream is shared between the sessions of a principal (the default). */
export function isShared(upstream: ConfiguredUpstream): boolean {
  return upstream.sharing !== 'per-session';
}

/** Why none of a client's upstreams can serve it: the first one's failure, in configuration order. */
export function noneStarted(upstreams: readonly Upstream[]): EnvelopeError {
  return (
    upstreams.find((upstream) => upstream.failure)?.failure ??
    new UpstreamFailure('no upstream is available', { upstreams: upstreams.map((upstream) => upstream.name) })
  );
}

/** Why an upstream is down, on one line: the failure and the stderr line that names its cause (else its last). */
function describeDown(upstream: Upstream): string {
  const failure = upstream.failure;
  if (!failure) return `upstream ${upstream.name} is down`;
  // The operator's terminal gets the full text; what clients see is redacted.
  const view = operatorView(failure);
  const last = causeLines(view.stderr ?? '', 1)[0]?.trim();
  return `${view.message}${last ? ` (stderr: ${last})` : ''}`;
}

export class UpstreamFleet {
  /** What every relay over these upstreams is built with, and the configured upstreams. */
  readonly options: GatewayOptions;
  /** What each upstream was found to speak, for every connection to it. */
  readonly eras: EraMemory;
  /** What each upstream declared the last time it was seen up, for sessions that find it down. */
  readonly #lastKnown = new Map<string, ServerCapabilities>();
  /** Upstreams already reported down, so that a shared one is reported once, not once per session. */
  readonly #reportedDown = new WeakSet<Upstream>();

  constructor(options: GatewayOptions) {
    this.options = options;
    this.eras = options.eras ?? new EraMemory();
  }

  /** Every configured upstream, in configuration order. */
  get configured(): readonly ConfiguredUpstream[] {
    return this.options.upstreams;
  }

  /** The configured upstreams a principal's clients share. */
  get shared(): ConfiguredUpstream[] {
    return this.options.upstreams.filter(isShared);
  }

  /** Whether some upstream is started per session (sharing: 'per-session'). */
  get perSession(): boolean {
    return this.options.upstreams.some((upstream) => !isShared(upstream));
  }

  /** The operator's board of upstream states, when there is one. */
  get status(): UpstreamStatusBoard | undefined {
    return this.options.status;
  }

  /** Says something about the upstreams to the operator (never stdout). */
  report(message: string): void {
    this.options.report?.(message);
  }

  /**
   * A new upstream set's result budget, inside the gateway's process budget: a
   * principal's shared set, or a session's own upstreams (result-budget.ts).
   */
  newSetBudget(): ResultBudget {
    const budgets = this.options.resultBudgets;
    return setResultBudget(
      budgets?.process ?? processResultBudget(),
      budgets?.setBytes ?? SET_RESULT_BUDGET_BYTES,
    );
  }

  /**
   * Upstream objects for the given configured upstreams, not yet started: one
   * set, holding its answers against one budget, told at initialize what
   * `client` declared (and, for `per-client` identity, who it is).
   */
  instantiate(
    configured: readonly ConfiguredUpstream[],
    budget: ResultBudget = this.newSetBudget(),
    client?: { identity: ClientIdentity; named: boolean },
  ): Upstream[] {
    const told = client
      ? {
          clientCapabilities: client.identity.capabilities ?? {},
          ...(client.identity.era ? { clientEra: client.identity.era } : {}),
          ...(client.named && client.identity.info ? { clientInfo: client.identity.info } : {}),
        }
      : {};
    return configured.map(
      ({ options: own, sharing: _sharing, ...spec }) =>
        new Upstream(spec, {
          eras: this.eras,
          ...this.options.upstream,
          ...own,
          ...told,
          resultBudget: budget,
        }),
    );
  }

  /** Starts the upstreams; those that fail keep retrying in the background (availability.ts). */
  async start(upstreams: readonly Upstream[]): Promise<void> {
    await Promise.allSettled(upstreams.map((upstream) => upstream.connect()));
    for (const upstream of upstreams) {
      this.status?.observe(upstream);
      this.#remember(upstream);
      // What it lists now is pinned, or compared with its pins, before any client asks.
      if (this.options.pins) void observeDefinitions(this.options.pins, upstream);
    }
  }

  /**
   * Connects every configured upstream. It succeeds as long as one started: the
   * others retry in the background and are served once they are back
   * (availability.ts). When none started, it fails.
   */
  async connectAll(): Promise<Upstream[]> {
    const upstreams = this.instantiate(this.configured);
    await this.start(upstreams);
    if (upstreams.every((upstream) => !upstream.available)) {
      const failure = noneStarted(upstreams);
      await Promise.all(upstreams.map((upstream) => upstream.close()));
      throw failure;
    }
    return upstreams;
  }

  /**
   * Starts the upstreams configured `per-session` (none started is not an error
   * here), told what `client` declared and, when `named` (they serve it alone), who it is.
   */
  async startOwn(client?: ClientIdentity, named = true): Promise<Upstream[]> {
    const upstreams = this.instantiate(
      this.configured.filter((upstream) => !isShared(upstream)),
      this.newSetBudget(),
      client ? { identity: client, named } : undefined,
    );
    await this.start(upstreams);
    return upstreams;
  }

  /** A client's upstreams in configuration order: its principal's shared ones and its own. */
  arrange(shared: readonly Upstream[], own: readonly Upstream[]): Upstream[] {
    const byName = new Map([...shared, ...own].map((upstream) => [upstream.name, upstream]));
    return this.configured.flatMap(({ name }) => byName.get(name) ?? []);
  }

  /** Whether every shared upstream was found to speak 2026-07-28, where capabilities are told per request. */
  sharedSpeakModern(): boolean {
    return this.shared.every(({ name, options }) =>
      (options?.eras ?? this.options.upstream?.eras ?? this.eras).speaksModern(name),
    );
  }

  /**
   * The capabilities a session over these upstreams advertises: a down one
   * stands in by what it last declared to this fleet (availability.ts).
   */
  advertisedCapabilities(upstreams: readonly Upstream[]): ServerCapabilities {
    return advertisedCapabilities(this.#lastKnown, upstreams);
  }

  /** Says which of the upstreams a client is being served without, once per upstream. */
  reportDown(upstreams: readonly Upstream[]): void {
    for (const upstream of upstreams) {
      if (upstream.available || this.#reportedDown.has(upstream)) continue;
      this.#reportedDown.add(upstream);
      this.report(`${describeDown(upstream)}; serving without it and retrying in the background`);
    }
  }

  /**
   * Keeps the status board and the capability memory current for one upstream,
   * and reports it giving up and, once reported down, coming back; with pins,
   * compares its definitions with them now, when it is back and when it says
   * a list changed. Returns the unsubscribe.
   */
  watch(upstream: Upstream): () => void {
    const offGaveUp = upstream.onGaveUp((restarts) => {
      this.status?.observe(upstream);
      this.report(
        `upstream ${upstream.name} gave up after ${restarts} restart attempts; ` +
          'calls to it fail until the gateway is restarted',
      );
    });
    const pins = this.options.pins;
    const offRecovered = upstream.onRecovered(() => {
      this.status?.observe(upstream);
      if (this.#reportedDown.delete(upstream)) this.report(`upstream ${upstream.name} is back`);
      this.#remember(upstream);
      // A restarted upstream may list other definitions than before.
      if (pins) void observeDefinitions(pins, upstream);
    });
    const offChanged = pins
      ? upstream.onListChanged((method) => void observeDefinitions(pins, upstream, method))
      : () => {};
    return () => {
      offGaveUp();
      offRecovered();
      offChanged();
    };
  }

  /** Records what an upstream that is up declared, for later sessions that find it down. */
  #remember(upstream: Upstream): void {
    if (upstream.available) this.#lastKnown.set(upstream.name, upstream.capabilities);
  }
}
