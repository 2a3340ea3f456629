import type {
  ClientCapabilities,
  ClientContext,
  Implementation,
  JSONRPCRequest,
  McpSubscription,
  Notification,
  PriorDiscovery,
  Result,
  ServerCapabilities,
  Tool,
  Transport,
} from '@modelcontextprotocol/client';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { MAX_NESTING_DEPTH, pathBeyondDepth } from '../../canonical/index.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';
import { PACKAGE_VERSION } from '../../version.ts';
import { CONFIG_DEFAULTS } from '../defaults.ts';
import { ANY_RESULT } from '../jsonrpc/messages.ts';
import { collectPages } from '../jsonrpc/pagination.ts';
import { ChildProcessTransport, causeLines, StderrRing } from './child-transport.ts';
import { connectionVerdict, lossReason } from './connection-loss.ts';
import {
  type ClientEra,
  EraMemory,
  MODERN_ONLY,
  type Negotiation,
  negotiationFor,
  type UpstreamProtocol,
} from './protocol-era.ts';
import { credentialsOf, keepForOperator, redactSecrets } from './redact.ts';
import { DEFAULT_RESTART_POLICY, nextRestart, type RestartPolicy, restartsInARow } from './restart-policy.ts';
import { type ResultBudget, serializedSizeOf, setResultBudget } from './result-budget.ts';

export type UpstreamSpec =
  | {
      name: string;
      kind: 'stdio';
      command: string;
      args?: readonly string[];
      /**
       * A function is asked at each start, for values known only then (a capability
       * minted for this start), with the upstream starting: the same object across its restarts.
       */
      env?: Record<string, string> | ((upstream: StartingUpstream) => Record<string, string>);
      cwd?: string;
    }
  | { name: string; kind: 'http'; url: string; headers?: Record<string, string> };

/** What a start's environment may know of the upstream starting: its name, and when it closes for good. */
export interface StartingUpstream {
  readonly name: string;
  onStateChange(listener: (state: UpstreamStateKind) => void): () => void;
}

/**
 * Whether the HTTP gateway's 2025-era sessions of one principal share one
 * connection to the upstream (`shared`, the default) or each gets its own
 * (`per-session`, for servers that keep state per connection).
 */
export type UpstreamSharing = 'shared' | 'per-session';

/** An upstream to connect, with its own options over the gateway-wide ones. */
export type ConfiguredUpstream = UpstreamSpec & { options?: UpstreamOptions; sharing?: UpstreamSharing };

export interface UpstreamOptions {
  /** Default per-request timeout; nothing waits on an upstream longer than this. */
  timeoutMs?: number;
  /** How long the upstream may take to answer initialize (default 15 s). */
  startTimeoutMs?: number;
  /** Per-tool overrides of the tools/call timeout. */
  toolTimeoutsMs?: Readonly<Record<string, number>>;
  restart?: Partial<RestartPolicy>;
  /** Who the upstream is told it serves at initialize: the client's own identity where one client owns it. */
  clientInfo?: Implementation;
  /**
   * What the upstream is told its client can do at initialize: exactly what
   * the client(s) it serves declared (the 2025 handshake has no other place to
   * say it). Without it, everything the gateway can relay: only where the
   * client is not known when the upstream starts (the stdio gateway).
   */
  clientCapabilities?: ClientCapabilities;
  /** The protocol revision spoken to the upstream: the newest it supports (`auto`, the default), or a pinned one. */
  protocol?: UpstreamProtocol;
  /** The era of the client(s) it serves, spoken where the upstream speaks both (protocol-era.ts); default 2025. */
  clientEra?: ClientEra;
  /**
   * What each upstream was found to speak, shared by every connection the
   * gateway opens to it (protocol-era.ts). Not a setting: the gateway passes
   * its own; without it, the upstream remembers for itself.
   */
  eras?: EraMemory;
  stderrLimitBytes?: number;
  /**
   * The budget the upstream's answers are held against while the gateway
   * handles them: its set's (result-budget.ts). Not a setting: the pool and
   * sessions pass their set's; tests pass a smaller one. Without it, the
   * upstream is a set of its own inside the process's budget.
   */
  resultBudget?: ResultBudget;
}

/** What the relay plugs in: where upstream notifications and server-to-client requests go. */
export interface UpstreamHooks {
  onNotification(notification: Notification): void | Promise<void>;
  onRequest(request: JSONRPCRequest, ctx: ClientContext): Promise<Result>;
}

/** Who a forwarded request is for: told to a 2026-07-28 upstream in the request's own `_meta`. */
export interface ClientIdentity {
  info?: Implementation | undefined;
  capabilities?: ClientCapabilities | undefined;
  /** The era the client speaks: 2025 sessions (`legacy`) or 2026-07-28 requests (`modern`). */
  era?: ClientEra | undefined;
}

export interface UpstreamRequestOptions {
  /** The downstream client the request is for; without it, the gateway asks for itself. */
  client?: ClientIdentity;
  /**
   * A 2026-07-28 upstream's `input_required` is returned as the result, for
   * the client to answer, instead of being answered through the gateway's
   * server-to-client handlers (a 2026-07-28 client gets the upstream's own rounds).
   */
  allowInputRequired?: boolean;
  signal?: AbortSignal;
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
  timeoutMs?: number;
}

/**
 * ADAPTER.EXECUTION.FAILED for an upstream that crashed or went away. The exit
 * code, signal and stderr excerpt are also plain properties, where the
 * enforcement pipeline reads an observed failure from.
 */
export class UpstreamFailure extends EnvelopeError {
  readonly exitCode: number | null | undefined;
  readonly signal: string | undefined;
  readonly stderr: string | undefined;

  constructor(message: string, details: Record<string, unknown>, cause?: unknown) {
    super('ADAPTER.EXECUTION.FAILED', message, details, { cause });
    this.name = 'UpstreamFailure';
    this.exitCode = details.exit_code as number | null | undefined;
    this.signal = details.signal as string | undefined;
    this.stderr = details.stderr as string | undefined;
  }
}

/** Everything the gateway can relay to a client, declared where the client is not known yet. */
const RELAYABLE_CAPABILITIES: ClientCapabilities = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: { listChanged: true },
};

const SERVER_TO_CLIENT_METHODS = ['sampling/createMessage', 'elicitation/create', 'roots/list'] as const;

/** The notifications that say one of the upstream's lists changed. */
const LIST_CHANGED: ReadonlySet<string> = new Set([
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
]);

/** What an upstream is doing: `Upstream.state` names it, `Upstream.onStateChange` reports each change. */
export type UpstreamStateKind =
  | 'idle'
  | 'starting'
  | 'ready'
  | 'restarting'
  | 'failed'
  | 'gave-up'
  | 'closed';

/**
 * One connection to the upstream: the client and transport of one start
 * attempt. What the server declared in its answer to initialize stays
 * readable after the connection ended.
 */
interface Connection {
  readonly client: Client;
  readonly transport: Transport;
  /** Which start this was, counting from 1. */
  readonly generation: number;
  /** Its transport closed (the process exited, the connection was closed); handled once. */
  ended: boolean;
  /** Its tools/list, kept until the server says the list changed. */
  tools: Promise<Map<string, Tool>> | undefined;
  /** Holds a probed process's stderr until it is known to speak for the upstream. */
  stderrGate?: StderrGate;
  /** A 2026-07-28 connection's one `subscriptions/listen` stream, and what it asked for. */
  listening?: { subscription: McpSubscription; uris: readonly string[] };
  /** Listen changes go one after the other, so the last word is the latest set. */
  relisten?: Promise<unknown>;
}

/** A probed process's stderr: held, then passed to the upstream's ring (`release`) or let go (`drop`). */
interface StderrGate {
  push(text: string): void;
  release(): void;
  drop(): void;
}

/** Why a restarting upstream was down before the attempt now starting. */
interface Down {
  readonly why: EnvelopeError;
  /** The attempt before failed to start (calls fail at once), rather than a live connection being lost (calls wait). */
  readonly startFailed: boolean;
}

/** Where the restart timer leads: the attempt it starts, and why the upstream is down until then. */
interface Waiting {
  readonly ended: Connection;
  readonly why: EnvelopeError;
  readonly attempt: number;
  readonly timer: NodeJS.Timeout;
}

/**
 * An upstream's state. Each carries only what holds in it: a live connection
 * while starting or ready, a timer only while waiting to retry, a reason only
 * while down.
 */
type State =
  /** Constructed, `connect` not called yet. */
  | { readonly kind: 'idle' }
  /** Waiting for the answer to initialize: the first start (`attempt` 0), or a restart after `down`. */
  | {
      readonly kind: 'starting';
      readonly connection: Connection;
      readonly attempt: number;
      readonly down?: Down;
    }
  /** Serving, after `restarts` restarts in a row; `since` starts the clock that earns the budget back. */
  | {
      readonly kind: 'ready';
      readonly connection: Connection;
      readonly since: number;
      readonly restarts: number;
      /** A ping is out to tell a broken stream from a lost connection (HTTP). */
      readonly probing: boolean;
      /** Why the gateway is closing the connection as lost (HTTP), for the failure calls in flight get. */
      readonly losing?: string;
    }
  /** A live connection was lost; calls wait (within their timeout) for the restart. */
  | ({ readonly kind: 'restarting' } & Waiting)
  /** The latest start failed; calls fail at once with `why` until a restart succeeds. */
  | ({ readonly kind: 'failed' } & Waiting)
  /** The restart budget is spent: down until the gateway restarts. */
  | {
      readonly kind: 'gave-up';
      readonly ended: Connection;
      readonly why: EnvelopeError;
      readonly restarts: number;
    }
  /** Closed by the gateway; `closing` settles once its process is gone. */
  | {
      readonly kind: 'closed';
      readonly ended?: Connection;
      readonly why?: EnvelopeError;
      readonly closing: Promise<void>;
    };

/**
 * One upstream MCP server: a stdio child (restarted with bounded backoff when it
 * crashes) or a Streamable HTTP URL (reconnected with the same backoff when the
 * connection drops). Every request is bounded by a timeout; a crash or a drop
 * fails the calls in flight at once with ADAPTER.EXECUTION.FAILED, carrying the
 * exit code and a stderr excerpt for a child.
 *
 * Its life is the `State` union above, moved by one method per event: `connect`
 * and the restart timer (`#start`), an answer to initialize (`#started`), a
 * start that failed (`#startFailed`), a transport that closed (`#ended`, which
 * is `#lost` for a live connection), a spent budget (`#retryOrGiveUp`), and
 * `close`.
 */
export class Upstream {
  readonly spec: UpstreamSpec;
  readonly stderr: StderrRing;
  readonly #options: UpstreamOptions;
  readonly #restart: RestartPolicy;
  #hooks: UpstreamHooks | undefined;
  #state: State = { kind: 'idle' };
  readonly #stateListeners = new Set<(state: UpstreamStateKind) => void>();
  readonly #recoveryListeners = new Set<() => void>();
  readonly #gaveUpListeners = new Set<(restarts: number) => void>();
  readonly #budget: ResultBudget;
  readonly #eras: EraMemory;

  constructor(spec: UpstreamSpec, options: UpstreamOptions = {}) {
    this.spec = spec;
    this.#options = options;
    this.#eras = options.eras ?? new EraMemory();
    this.#budget = options.resultBudget ?? setResultBudget();
    this.#restart = { ...DEFAULT_RESTART_POLICY, ...options.restart };
    this.stderr = new StderrRing(options.stderrLimitBytes ?? 8192);
  }

  get name(): string {
    return this.spec.name;
  }

  setHooks(hooks: UpstreamHooks): void {
    this.#hooks = hooks;
  }

  /** What the upstream is doing now. */
  get state(): UpstreamStateKind {
    return this.#state.kind;
  }

  /** Calls `listener` with each new state as it is entered; returns the unsubscribe. */
  onStateChange(listener: (state: UpstreamStateKind) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** How many times the process was (re)started, or the connection (re)opened; tests and logs read it. */
  get generation(): number {
    return this.#latest?.generation ?? 0;
  }

  /** What the server declared when it last answered initialize (empty before it did). */
  get capabilities(): ServerCapabilities {
    return this.#latest?.client.getServerCapabilities() ?? {};
  }

  get serverInfo(): Implementation | undefined {
    return this.#latest?.client.getServerVersion();
  }

  get instructions(): string | undefined {
    return this.#latest?.client.getInstructions();
  }

  /** The protocol revision the current connection speaks (undefined before one is established). */
  get protocolVersion(): string | undefined {
    return this.#latest?.client.getNegotiatedProtocolVersion();
  }

  /** Whether the connection speaks 2026-07-28 or later: requests stand alone and carry the client's identity. */
  get modern(): boolean {
    return this.#latest?.client.getProtocolEra() === 'modern';
  }

  /** Connected and serving; false while it is starting, down, restarting or reconnecting. */
  get available(): boolean {
    return this.#state.kind === 'ready';
  }

  /** Why the upstream is down, while it is. */
  get failure(): EnvelopeError | undefined {
    const state = this.#state;
    switch (state.kind) {
      case 'starting':
        return state.down?.why;
      case 'restarting':
      case 'failed':
      case 'gave-up':
      case 'closed':
        return state.why;
      default:
        return undefined;
    }
  }

  /** Calls `listener` each time the upstream serves again after being down; returns the unsubscribe. */
  onRecovered(listener: () => void): () => void {
    this.#recoveryListeners.add(listener);
    return () => this.#recoveryListeners.delete(listener);
  }

  /**
   * Calls `listener` with the method of each `notifications/{tools,prompts,resources}/list_changed`
   * the upstream sends (definition pins compare the new lists); returns the unsubscribe.
   */
  onListChanged(listener: (method: string) => void): () => void {
    this.#listChangedListeners.add(listener);
    return () => this.#listChangedListeners.delete(listener);
  }

  readonly #listChangedListeners = new Set<(method: string) => void>();

  /** Called when the restart budget is spent: the upstream stays down until the gateway restarts. */
  onGaveUp(listener: (restarts: number) => void): () => void {
    // It may have given up before anyone listened (fast retries during the first start).
    const state = this.#state;
    if (state.kind === 'gave-up') queueMicrotask(() => listener(state.restarts));
    this.#gaveUpListeners.add(listener);
    return () => this.#gaveUpListeners.delete(listener);
  }

  get pid(): number | undefined {
    const transport = this.#latest?.transport;
    return transport instanceof ChildProcessTransport ? transport.pid : undefined;
  }

  /**
   * Connects; resolves once the upstream answered initialize. Reconnecting
   * after a crash, a drop or a failed start is the upstream's own business, so
   * this is called once.
   */
  connect(): Promise<void> {
    const { kind } = this.#state;
    if (kind !== 'idle') {
      return Promise.reject(
        new EnvelopeError('USAGE_ERROR', `upstream ${this.name} is ${kind}: connect is called once`),
      );
    }
    return this.#start(0);
  }

  /** The connection of the current state, live or the one that ended last. */
  get #latest(): Connection | undefined {
    const state = this.#state;
    if ('connection' in state) return state.connection;
    return 'ended' in state ? state.ended : undefined;
  }

  #enter(next: State): void {
    const previous = this.#state;
    this.#state = next;
    if (next.kind === previous.kind) return;
    for (const listener of [...this.#stateListeners]) listener(next.kind);
  }

  /** Event: connect, or the restart timer fired. A new connection starts. */
  async #start(attempt: number, down?: Down): Promise<void> {
    const negotiation = negotiationFor(
      this.#options.protocol ?? 'auto',
      this.#eras.recall(this.name),
      this.spec.kind,
      this.#startTimeoutMs,
      this.#options.clientEra,
    );
    let connection = this.#open(negotiation);
    this.#enter({ kind: 'starting', connection, attempt, ...(down ? { down } : {}) });
    const deadline = Date.now() + this.#startTimeoutMs;
    let error = await this.#handshake(connection, negotiation.prior, this.#startTimeoutMs);
    const fallBack =
      error !== undefined &&
      negotiation.probing &&
      this.spec.kind === 'stdio' &&
      this.#isStarting(connection);
    if (fallBack) {
      // A stdio server that exits on the probe, or never answers it, is a 2025-era server
      // (servers on some SDKs end on any request before initialize): a fresh process is
      // spoken to that way, within what is left of the start's time. What the probed one
      // wrote stays out of the ring: the one started again speaks for itself.
      connection.stderrGate?.drop();
      await this.#discard(connection);
      const legacy: Negotiation = {
        versionNegotiation: { mode: 'auto' },
        prior: { kind: 'legacy' },
        probing: false,
      };
      connection = this.#open(legacy);
      this.#enter({ kind: 'starting', connection, attempt, ...(down ? { down } : {}) });
      error = await this.#handshake(connection, legacy.prior, Math.max(deadline - Date.now(), 1));
    }
    let modernOnly = false;
    if (
      error !== undefined &&
      negotiation.legacyFirst &&
      refusedVersion(error) &&
      this.#isStarting(connection)
    ) {
      // The 2025 handshake refused as an unknown version: the server speaks 2026-07-28 alone.
      await this.#discard(connection);
      connection = this.#open(MODERN_ONLY);
      this.#enter({ kind: 'starting', connection, attempt, ...(down ? { down } : {}) });
      error = await this.#handshake(connection, undefined, Math.max(deadline - Date.now(), 1));
      modernOnly = error === undefined;
    }
    connection.stderrGate?.release();
    if (error !== undefined) {
      // A stdio server that failed the probe and the handshake both is tried in the 2025
      // handshake alone next time (one process per restart, not two); any other remembered
      // verdict that no longer holds is probed afresh.
      if (negotiation.probing && this.spec.kind === 'stdio')
        this.#eras.remember(this.name, 'legacy', undefined);
      else if (!negotiation.probing) this.#eras.forget(this.name);
      const failure = this.#startFailure(connection, error);
      await this.#discard(connection);
      this.#startFailed(connection, failure);
      throw failure;
    }
    const era = connection.client.getProtocolEra();
    const version = connection.client.getNegotiatedProtocolVersion();
    if (modernOnly) this.#eras.remember(this.name, 'modern-only', version);
    // A 2025 handshake that a 2025-era client's connection asked for says nothing of 2026-07-28.
    else if (era === 'modern' || (era === 'legacy' && !negotiation.legacyFirst))
      this.#eras.remember(this.name, era, version);
    this.#started(connection);
  }

  /** Connects (the probe and handshake); resolves to the error that stopped it, if any. */
  async #handshake(
    connection: Connection,
    prior: PriorDiscovery | undefined,
    timeoutMs: number,
  ): Promise<unknown> {
    try {
      await connection.client.connect(connection.transport, {
        timeout: timeoutMs,
        ...(prior ? { prior } : {}),
      });
      return undefined;
    } catch (error) {
      return error ?? new Error('connect failed');
    }
  }

  /** A probed process's stderr, held until the probe's outcome says whether it speaks for the upstream. */
  #stderrGate(): StderrGate {
    const held = new StderrRing(this.stderr.limitBytes);
    let state: 'holding' | 'passing' | 'dropped' = 'holding';
    return {
      push: (text) => {
        if (state === 'passing') this.stderr.push(text);
        else if (state === 'holding') held.push(text);
      },
      release: () => {
        if (state !== 'holding') return;
        state = 'passing';
        const text = held.text();
        if (text) this.stderr.push(text);
      },
      drop: () => {
        state = 'dropped';
      },
    };
  }

  /** Whether `connection` is still the one starting (nobody closed the upstream meanwhile). */
  #isStarting(connection: Connection): boolean {
    const state = this.#state;
    return state.kind === 'starting' && state.connection === connection;
  }

  /**
   * Ends a connection that did not start. A server that never answered may
   * still be running: its whole group ends now, so the start fails at its
   * deadline, not after a polite close.
   */
  async #discard(connection: Connection): Promise<void> {
    if (connection.transport instanceof ChildProcessTransport) await connection.transport.terminate();
    await connection.client.close().catch(() => {});
  }

  /** Event: the upstream answered initialize. */
  #started(connection: Connection): void {
    const state = this.#state;
    // Closed while it was starting: it stays closed.
    if (state.kind !== 'starting' || state.connection !== connection) return;
    this.#enter({ kind: 'ready', connection, since: Date.now(), restarts: state.attempt, probing: false });
    // Its transport closed between the answer and now: lost at once.
    if (connection.ended) this.#ended(connection);
    else {
      this.#listenForChanges(connection).catch(() => {
        // A server that refuses the subscription still serves; its lists are read afresh on each listing.
      });
      if (state.down) for (const listener of [...this.#recoveryListeners]) listener();
    }
  }

  /**
   * A 2026-07-28 server tells of changed lists only on a subscription: one is
   * opened for the lists it says change, for the connection's life, and what it
   * tells arrives as any notification does (the 2025 handshake's are unsolicited).
   */
  #listenForChanges(connection: Connection): Promise<void> {
    if (connection.client.getProtocolEra() !== 'modern') return Promise.resolve();
    const change = (connection.relisten ?? Promise.resolve())
      .catch(() => {})
      .then(async () => {
        const capabilities = connection.client.getServerCapabilities() ?? {};
        const uris = [...this.#resourceUris];
        const filter = {
          ...(capabilities.tools?.listChanged ? { toolsListChanged: true } : {}),
          ...(capabilities.prompts?.listChanged ? { promptsListChanged: true } : {}),
          ...(capabilities.resources?.listChanged ? { resourcesListChanged: true } : {}),
          ...(uris.length > 0 ? { resourceSubscriptions: uris } : {}),
        };
        const previous = connection.listening;
        connection.listening = undefined;
        // The new stream is acknowledged before the old one closes, so no change falls between them.
        if (Object.keys(filter).length > 0) {
          connection.listening = { subscription: await connection.client.listen(filter), uris };
        }
        await previous?.subscription.close();
      });
    connection.relisten = change;
    return change;
  }

  /**
   * Resource URIs subscribed to on a 2026-07-28 connection. That revision has
   * no `resources/subscribe`: its updates come on the connection's listen
   * stream, which is opened again naming them (and again after a restart).
   */
  readonly #resourceUris = new Set<string>();

  async #subscribeModern(
    connection: Connection,
    method: 'resources/subscribe' | 'resources/unsubscribe',
    params: Record<string, unknown> | undefined,
  ): Promise<Result> {
    const uri = params?.uri;
    if (typeof uri !== 'string') throw new ProtocolError(-32602, `${method} needs a uri`);
    const had = this.#resourceUris.has(uri);
    if (method === 'resources/subscribe') this.#resourceUris.add(uri);
    else this.#resourceUris.delete(uri);
    if (had === this.#resourceUris.has(uri)) return {};
    try {
      await this.#listenForChanges(connection);
    } catch (error) {
      // The server would not listen for it: the subscription is not held.
      if (method === 'resources/subscribe') this.#resourceUris.delete(uri);
      throw this.#translate(error, 'subscriptions/listen', this.#startTimeoutMs);
    }
    return {};
  }

  /** Event: the attempt to start failed. Retried after the backoff, until the budget is spent. */
  #startFailed(connection: Connection, failure: EnvelopeError): void {
    const state = this.#state;
    if (state.kind !== 'starting' || state.connection !== connection) return;
    this.#retryOrGiveUp('failed', connection, failure, state.attempt);
  }

  /** Event: a connection's transport closed. */
  #ended(connection: Connection): void {
    const state = this.#state;
    if (state.kind === 'ready' && state.connection === connection) this.#lost(state);
    else if (state.kind === 'closed' && state.ended === connection) {
      this.#enter({
        ...state,
        why: this.#failure(`upstream ${this.name} connection closed`, undefined, connection),
      });
    }
    // While it is starting, the attempt's outcome decides; any other connection was already let go.
  }

  /** A live connection was lost (the process exited, the server went away): restart it, or give up. */
  #lost(state: Extract<State, { kind: 'ready' }>): void {
    const why = this.#failure(
      this.spec.kind === 'stdio'
        ? `upstream ${this.name} exited`
        : `upstream ${this.name} connection lost${state.losing ? `: ${state.losing}` : ''}`,
      undefined,
      state.connection,
    );
    const used = restartsInARow(this.#restart, state.restarts, Date.now() - state.since);
    this.#retryOrGiveUp('restarting', state.connection, why, used);
  }

  /** Schedules the next restart, or, with the budget spent, gives up. */
  #retryOrGiveUp(kind: 'restarting' | 'failed', ended: Connection, why: EnvelopeError, used: number): void {
    const next = nextRestart(this.#restart, used);
    if (!next) {
      this.#enter({ kind: 'gave-up', ended, why, restarts: used });
      for (const listener of [...this.#gaveUpListeners]) listener(used);
      return;
    }
    const timer = setTimeout(() => this.#timerFired(timer), next.delayMs);
    this.#enter({ kind, ended, why, attempt: next.attempt, timer });
  }

  /** Event: the restart timer fired. */
  #timerFired(timer: NodeJS.Timeout): void {
    const state = this.#state;
    if ((state.kind !== 'restarting' && state.kind !== 'failed') || state.timer !== timer) return;
    // The attempt's outcome is its next state; the failure it throws is kept there.
    this.#start(state.attempt, { why: state.why, startFailed: state.kind === 'failed' }).catch(() => {});
  }

  /** The capabilities declared to the upstream at initialize. */
  get #declared(): ClientCapabilities {
    return this.#options.clientCapabilities ?? RELAYABLE_CAPABILITIES;
  }

  get #startTimeoutMs(): number {
    return this.#options.startTimeoutMs ?? CONFIG_DEFAULTS.upstream.timeouts.startMs;
  }

  #open(negotiation: Negotiation): Connection {
    const client = new Client(
      this.#options.clientInfo ?? { name: 'mcp-envelope-gateway', version: PACKAGE_VERSION },
      { capabilities: this.#declared, versionNegotiation: negotiation.versionNegotiation },
    );
    // A probed stdio process may be let go for a fresh one: its stderr is held meanwhile.
    const gate = negotiation.probing && this.spec.kind === 'stdio' ? this.#stderrGate() : undefined;
    const connection: Connection = {
      client,
      transport: this.#makeTransport(gate ?? this.stderr),
      generation: this.generation + 1,
      ended: false,
      tools: undefined,
      ...(gate ? { stderrGate: gate } : {}),
    };
    for (const method of SERVER_TO_CLIENT_METHODS) {
      if (!declares(this.#declared, method)) continue;
      client.setRequestHandler(
        method,
        (request, ctx) => this.#serverRequest(request as JSONRPCRequest, ctx) as never,
      );
    }
    client.fallbackRequestHandler = async (request, ctx) => {
      // Asked for what the upstream was told its client cannot do: never routed to a client that could.
      if ((SERVER_TO_CLIENT_METHODS as readonly string[]).includes(request.method))
        throw new ProtocolError(-32601, `The client did not declare the capability ${request.method} needs`);
      return this.#serverRequest(request, ctx);
    };
    client.fallbackNotificationHandler = async (notification) => {
      if (notification.method === 'notifications/tools/list_changed') connection.tools = undefined;
      if (LIST_CHANGED.has(notification.method))
        for (const listener of [...this.#listChangedListeners]) listener(notification.method);
      await this.#hooks?.onNotification(notification);
    };
    // The HTTP transport calls onclose on every close(); one end is handled once.
    connection.transport.onclose = () => {
      if (connection.ended) return;
      connection.ended = true;
      this.#ended(connection);
    };
    if (this.spec.kind === 'http') client.onerror = (error) => this.#onHttpError(connection, error);
    return connection;
  }

  #makeTransport(stderr: Pick<StderrRing, 'push'>): Transport {
    const spec = this.spec;
    if (spec.kind === 'stdio') {
      return new ChildProcessTransport({
        command: spec.command,
        args: spec.args,
        env: typeof spec.env === 'function' ? spec.env(this) : spec.env,
        cwd: spec.cwd,
        stderr,
        budget: this.#budget,
      });
    }
    return new StreamableHTTPClientTransport(new URL(spec.url), {
      requestInit: spec.headers ? { headers: spec.headers } : undefined,
    });
  }

  #serverRequest(request: JSONRPCRequest, ctx: ClientContext): Promise<Result> {
    const answer = this.#hooks
      ? this.#hooks.onRequest(request, ctx)
      : Promise.reject(new EnvelopeError('NOT_IMPLEMENTED', 'No downstream client to answer this request'));
    if (request.method === 'roots/list') {
      answer.then(
        () => {
          this.#rootsUnanswered = false;
          for (const answered of this.#rootsWaiters) answered();
          this.#rootsWaiters.clear();
        },
        () => {
          this.#rootsUnanswered = true;
        },
      );
    }
    return answer;
  }

  #rootsUnanswered = false;
  readonly #rootsWaiters = new Set<() => void>();

  /** Resolves once the upstream's next `roots/list` is answered, or after `timeoutMs` (an upstream may never ask). */
  nextRootsAnswer(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#rootsWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      this.#rootsWaiters.add(done);
    });
  }

  /**
   * Whether the upstream's latest `roots/list` went unanswered (it asked
   * before any client could be: at start, or outside a call of a 2026-07-28
   * client). It then works from roots of its own until told they changed.
   */
  get rootsUnanswered(): boolean {
    return this.#rootsUnanswered;
  }

  /**
   * The HTTP transport reports a dropped connection without closing: close it
   * here, so the calls in flight fail now and the reconnection starts.
   */
  #onHttpError(connection: Connection, error: unknown): void {
    const state = this.#state;
    if (state.kind !== 'ready' || state.connection !== connection || state.losing !== undefined) return;
    const verdict = connectionVerdict(error, connection.client.getProtocolEra() === 'modern');
    if (verdict === 'lost') this.#lose(connection, lossReason(error));
    else if (verdict === 'suspect' && !state.probing) {
      // One broken stream may be just that stream: the server decides by answering a ping.
      this.#enter({ ...state, probing: true });
      connection.client
        .ping({ timeout: this.#startTimeoutMs })
        .catch(() => this.#lose(connection, lossReason(error)))
        .finally(() => {
          const now = this.#state;
          if (now.kind === 'ready' && now.connection === connection) this.#enter({ ...now, probing: false });
        });
    }
  }

  /** Closes a live HTTP connection found lost; its close is then handled as any end. */
  #lose(connection: Connection, reason: string): void {
    const state = this.#state;
    if (state.kind !== 'ready' || state.connection !== connection || state.losing !== undefined) return;
    this.#enter({ ...state, losing: reason });
    void connection.client.close().catch(() => {});
  }

  /**
   * Why a start attempt failed: for a child that exited meanwhile, its exit says
   * more than the closed connection. The caller's message also carries the
   * stderr line that names the cause (else the last): a proxy that cannot start
   * its one upstream prints this message alone.
   */
  #startFailure(connection: Connection, error: unknown): EnvelopeError {
    const what = this.spec.kind === 'stdio' ? 'did not start' : 'could not connect';
    const exit =
      connection.transport instanceof ChildProcessTransport ? connection.transport.exit : undefined;
    const timedOut = error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout;
    const reason = timedOut
      ? `no answer to initialize within ${this.#startTimeoutMs} ms`
      : exit
        ? `exited with ${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`}`
        : errorText(error);
    const protocol = this.#options.protocol;
    const pinned =
      protocol && protocol !== 'auto' ? ` (spoken to in protocol ${protocol} only, as configured)` : '';
    return this.#failure(`upstream ${this.name} ${what}: ${reason}${pinned}`, error, connection, true);
  }

  /**
   * An answer nested past the canonical limit could not be serialized again on
   * its way downstream (the reply would never leave): it fails like garbage on
   * stdout does, as the upstream's fault.
   */
  #refuseTooDeep(method: string, result: Result): void {
    const path = pathBeyondDepth(result);
    if (!path) return;
    throw new UpstreamFailure(
      `upstream ${this.name} answered ${method} with a result nested deeper than ${MAX_NESTING_DEPTH} levels`,
      { upstream: this.name, pointer: encodePointer(path), max_depth: MAX_NESTING_DEPTH },
    );
  }

  /**
   * An HTTP upstream's answer arrives through the SDK's transport, already
   * parsed: it is held by its estimated serialized size from here, and let go
   * a turn of the event loop later, as a stdio answer is (child-transport.ts).
   * One that does not fit is refused with RESOURCE_EXHAUSTED.
   */
  #holdHttpAnswer(result: Result): void {
    const held = this.#budget.reserve(serializedSizeOf(result));
    setImmediate(() => held.release());
  }

  /**
   * ADAPTER.EXECUTION.FAILED with what is known about the process: its exit,
   * and a stderr excerpt; with `quoteStderr`, the caller's message also quotes
   * the stderr line that names the cause (the operator's surfaces list the
   * lines themselves, so their message goes without it).
   */
  #failure(message: string, cause?: unknown, connection = this.#latest, quoteStderr = false): EnvelopeError {
    const details: Record<string, unknown> = { upstream: this.name };
    const exit =
      connection?.transport instanceof ChildProcessTransport ? connection.transport.exit : undefined;
    if (exit) {
      details.exit_code = exit.code;
      if (exit.signal) details.signal = exit.signal;
    }
    const tail = this.stderr.tail(1024);
    // Callers get the failure with likely secrets redacted; the operator's surfaces read the full text.
    const known = credentialsOf(this.spec);
    if (tail) details.stderr = callerExcerpt(this.stderr.text(), known);
    const quoted = quoteStderr ? telling(this.stderr, known) : undefined;
    const toCaller = quoted === undefined ? message : `${message} (stderr: ${quoted})`;
    const failure = new UpstreamFailure(redactSecrets(toCaller, known), details, cause);
    keepForOperator(failure, { message, ...(tail ? { stderr: tail } : {}) });
    return failure;
  }

  /** The live client, after waiting (until `deadline`) for an upstream that is starting or restarting. */
  async #liveClient(deadline: number): Promise<Client> {
    for (;;) {
      const state = this.#state;
      switch (state.kind) {
        case 'ready':
          return state.connection.client;
        case 'idle':
          throw this.#failure(`upstream ${this.name} is not connected`);
        case 'closed':
          throw this.#failure(`upstream ${this.name} is shut down`);
        case 'failed':
        case 'gave-up':
          throw state.why;
        case 'starting':
          // After a failed start, calls fail at once until an attempt succeeds.
          if (state.down?.startFailed) throw state.down.why;
          break;
        case 'restarting':
          break;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0 || !(await this.#changeWithin(remaining))) {
        throw this.failure ?? this.#failure(`upstream ${this.name} is not available`);
      }
    }
  }

  /** Whether the state changes within `ms`. */
  #changeWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        stop();
        resolve(false);
      }, ms);
      const stop = this.onStateChange(() => {
        clearTimeout(timer);
        stop();
        resolve(true);
      });
    });
  }

  timeoutFor(method: string, params: Record<string, unknown> | undefined): number {
    if (method === 'tools/call' && typeof params?.name === 'string') {
      const own = this.#options.toolTimeoutsMs?.[params.name];
      if (own !== undefined) return own;
    }
    return this.#options.timeoutMs ?? CONFIG_DEFAULTS.upstream.timeouts.callMs;
  }

  /** The longest timeout any request to this upstream may have. */
  longestTimeoutMs(): number {
    return Math.max(
      this.#options.timeoutMs ?? CONFIG_DEFAULTS.upstream.timeouts.callMs,
      ...Object.values(this.#options.toolTimeoutsMs ?? {}),
    );
  }

  /** Sends one request upstream and returns its raw result. */
  async request(
    method: string,
    params: Record<string, unknown> | undefined,
    options: UpstreamRequestOptions = {},
  ): Promise<Result> {
    const timeoutMs = options.timeoutMs ?? this.timeoutFor(method, params);
    const client = await this.#liveClient(Date.now() + timeoutMs);
    const connection = this.#latest;
    if (
      (method === 'resources/subscribe' || method === 'resources/unsubscribe') &&
      client.getProtocolEra() === 'modern' &&
      connection?.client === client
    )
      return this.#subscribeModern(connection, method, params);
    // 2026-07-28: each request says whose it is; the client's own identity, not the gateway's.
    const sent =
      options.client && client.getProtocolEra() === 'modern'
        ? withClientIdentity(params, options.client)
        : params;
    try {
      const result = (await client.request({ method, params: sent } as never, ANY_RESULT, {
        signal: options.signal,
        onprogress: options.onprogress,
        timeout: timeoutMs,
        ...(options.allowInputRequired ? { allowInputRequired: true } : {}),
      })) as Result;
      this.#refuseTooDeep(method, result);
      if (this.spec.kind === 'http') this.#holdHttpAnswer(result);
      return result;
    } catch (error) {
      throw this.#translate(error, method, timeoutMs);
    }
  }

  /**
   * The upstream's own description of a tool (its input and output schemas),
   * from its tools/list, kept with the connection it was read from until the
   * list changes or the upstream restarts.
   */
  async describeTool(name: string): Promise<Tool | undefined> {
    return (await this.listedTools()).get(name);
  }

  /** The upstream's whole tools/list by name, kept as `describeTool` keeps it. */
  listedTools(): Promise<ReadonlyMap<string, Tool>> {
    const connection = this.#latest;
    if (!connection) return this.#listTools();
    let tools = connection.tools;
    if (!tools) {
      const listing = this.#listTools();
      connection.tools = tools = listing;
      // A failed listing is not kept: the next call asks again.
      listing.catch(() => {
        if (connection.tools === listing) connection.tools = undefined;
      });
    }
    return tools;
  }

  /**
   * The tool's description for a call, or why this upstream is down: a call to
   * an upstream that is down must still be answered (an ADAPTER.EXECUTION.FAILED
   * envelope in envelope mode), not refused as a protocol error.
   */
  async describeForCall(name: string): Promise<{ tool?: Tool; unavailable?: UpstreamFailure }> {
    try {
      const tool = await this.describeTool(name);
      return tool ? { tool } : {};
    } catch (error) {
      if (error instanceof UpstreamFailure) return { unavailable: error };
      throw error;
    }
  }

  async #listTools(): Promise<Map<string, Tool>> {
    const tools = (await collectPages((params) => this.request('tools/list', params), 'tools')) as Tool[];
    return new Map(tools.map((tool) => [tool.name, tool]));
  }

  /** Forwards a notification upstream; one that is not serving drops it (notifications have no reply). */
  async notify(notification: Notification): Promise<void> {
    const state = this.#state;
    if (state.kind !== 'ready') return;
    await state.connection.client.notification(notification).catch(() => {});
  }

  #translate(error: unknown, method: string, timeoutMs: number): unknown {
    const answered = answeredError(error);
    if (answered) return answered;
    if (error instanceof SdkError) {
      if (error.code === SdkErrorCode.RequestTimeout) {
        return new EnvelopeError(
          'TIMEOUT',
          `upstream ${this.name} did not answer ${method} within ${timeoutMs} ms`,
          {
            upstream: this.name,
            timeout_ms: timeoutMs,
          },
        );
      }
      if (error.code === SdkErrorCode.ConnectionClosed || error.code === SdkErrorCode.NotConnected) {
        return (
          this.failure ?? this.#failure(`upstream ${this.name} connection closed during ${method}`, error)
        );
      }
    }
    // A JSON-RPC error is the upstream's own answer and passes as is; anything else
    // (a refused connection, an HTTP failure) means the upstream could not be reached.
    if (error instanceof ProtocolError || error instanceof EnvelopeError) return error;
    if (error instanceof SdkError || error instanceof Error) {
      return this.#failure(`upstream ${this.name} failed during ${method}: ${error.message}`, error);
    }
    return error;
  }

  /** Event: the gateway closes the upstream. A pending restart is cancelled and the process ended. */
  async close(): Promise<void> {
    const state = this.#state;
    if (state.kind === 'closed') return state.closing;
    if (state.kind === 'restarting' || state.kind === 'failed') clearTimeout(state.timer);
    const live = state.kind === 'starting' || state.kind === 'ready' ? state.connection : undefined;
    const closing = Promise.withResolvers<void>();
    // Closed before the client is: the end of its connection is then no loss to restart from.
    this.#enter({ kind: 'closed', ended: this.#latest, why: this.failure, closing: closing.promise });
    await live?.client.close().catch(() => {});
    closing.resolve();
  }

  /** Kills a stdio upstream's process as a crash would (for fault tests and operators). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    const transport = this.#latest?.transport;
    if (transport instanceof ChildProcessTransport) transport.kill(signal);
  }
}

/** Whether a failed handshake was the server refusing the protocol version (-32022). */
function refusedVersion(error: unknown): boolean {
  const answered = answeredError(error) ?? error;
  return (answered as { code?: unknown } | null)?.code === -32022;
}

/**
 * The JSON-RPC error an HTTP upstream answered with a status the SDK's
 * transport takes for a failure (a 404 for an unknown method, a 400 it did not
 * match to a request): the server's own answer, to be passed on as such.
 */
function answeredError(error: unknown): ProtocolError | undefined {
  if (!(error instanceof SdkHttpError)) return undefined;
  const text = error.data.text;
  if (typeof text !== 'string' || text.length > 64 * 1024) return undefined;
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; data?: unknown } };
    const answered = body?.error;
    if (typeof answered?.code !== 'number' || typeof answered.message !== 'string') return undefined;
    return new ProtocolError(answered.code, answered.message, answered.data);
  } catch {
    return undefined;
  }
}

/** Whether `capabilities` cover a server-to-client request of `method`. */
export function declares(capabilities: ClientCapabilities | undefined, method: string): boolean {
  if (method === 'sampling/createMessage') return capabilities?.sampling !== undefined;
  if (method === 'elicitation/create') return capabilities?.elicitation !== undefined;
  if (method === 'roots/list') return capabilities?.roots !== undefined;
  return true;
}

/**
 * `params` with the client's identity and capabilities in the reserved `_meta`
 * keys, which take precedence over the ones the SDK attaches for the gateway.
 */
function withClientIdentity(
  params: Record<string, unknown> | undefined,
  client: ClientIdentity,
): Record<string, unknown> {
  const meta = (params?._meta ?? {}) as Record<string, unknown>;
  return {
    ...params,
    _meta: {
      ...meta,
      ...(client.info ? { [CLIENT_INFO_META_KEY]: client.info } : {}),
      [CLIENT_CAPABILITIES_META_KEY]: client.capabilities ?? {},
    },
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The one line of stderr that best says why the process failed, redacted
 * before it is picked; a first line the ring may hold only the end of is left out.
 */
function telling(ring: StderrRing, known: readonly string[]): string | undefined {
  const redacted = redactSecrets(ring.text(), known);
  const firstEnd = redacted.indexOf('\n');
  const whole = !ring.dropped ? redacted : firstEnd < 0 ? '' : redacted.slice(firstEnd + 1);
  return causeLines(whole, 1)[0]?.trim() || undefined;
}

/**
 * The last KiB of stderr a caller may see. Redacted before it is cut, so a cut
 * cannot fall between a secret's name and its value; and when the cut falls
 * inside a line, that line's start is dropped, since a name beyond the ring's
 * reach could have been its beginning.
 */
function callerExcerpt(ring: string, known: readonly string[]): string {
  const redacted = redactSecrets(ring, known);
  if (redacted.length <= 1024) return redacted;
  const cut = redacted.slice(-1024);
  const lineStart = cut.indexOf('\n');
  return lineStart >= 0 && lineStart < cut.length - 1 ? cut.slice(lineStart + 1) : cut;
}
