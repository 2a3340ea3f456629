import { randomBytes, randomUUID } from 'node:crypto';
import type { ClientCapabilities, Result, ServerContext } from '@modelcontextprotocol/server';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
} from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../errors/index.ts';

/**
 * Server-to-client requests for 2026-07-28 clients. That era has no way to push
 * a request to the client, so while an upstream call waits on one (sampling,
 * elicitation, roots), the call is parked: the upstream request keeps running,
 * the downstream request is answered `input_required` with the waiting
 * requests and a signed `requestState` naming the call, and the client's retry
 * answers them and waits on the same upstream call again.
 */

/** The methods whose 2026-07-28 results may be `input_required`. */
export const ROUND_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** The server-to-client requests the 2026-07-28 era can carry inside `input_required`. */
export const EMBEDDABLE_METHODS: ReadonlySet<string> = new Set([
  'sampling/createMessage',
  'elicitation/create',
  'roots/list',
]);

/** Calls parked at once per upstream session; one more is refused with RESOURCE_EXHAUSTED. */
export const MAX_PARKED_CALLS = 1000;

/** Requests one call may have waiting for the client at once; more are refused to the upstream. */
const MAX_WAITING_PER_CALL = 32;

/** Requests the upstream sends within this window after the first go out in the same round. */
const GATHER_MS = 10;

/**
 * One key per gateway process: a parked call lives in this process only, so no
 * other process could redeem its state anyway.
 */
const PROCESS_KEY = randomBytes(32);

export interface EmbeddedRequest {
  method: string;
  params?: Record<string, unknown>;
}

export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

export interface RoundCall {
  /** The call as the client named it (method, name or URI, arguments); a retry must name the same. */
  identity: string;
  /** Bounds the upstream request, and how long a parked call waits for the client's retry. */
  timeoutMs: number;
  /** Sends the request upstream. */
  start(signal: AbortSignal, onprogress: (progress: Progress) => void): Promise<Result>;
}

export interface InputRoundsOptions {
  /** Sends the upstream call's progress to the downstream request now waiting on it. */
  progress(ctx: ServerContext, progress: Progress): void;
  /** Lifetime of a minted requestState; defaults to 600 s. */
  ttlSeconds?: number;
  maxParked?: number | undefined;
  /**
   * The calls are of clients the gateway cannot tell apart (anonymous
   * 2026-07-28 requests): a server-to-client request joins a call's round only
   * when that call is the one running, and is refused when several are.
   */
  exclusive?: boolean | undefined;
}

/** The principal a request's state is bound to: what the HTTP server named it, else its token's id. */
function principalOf(ctx: ServerContext): string {
  const authInfo = ctx.http?.authInfo;
  const named = authInfo?.extra?.principal;
  return typeof named === 'string' ? named : (authInfo?.clientId ?? '');
}

/** Why a server-to-client request went unasked: its call could not be told from another client's. */
function ambiguous(method: string, running: number): EnvelopeError {
  return new EnvelopeError(
    'DEPENDENCY_UNAVAILABLE',
    `${running} calls of anonymous clients are running on this upstream, so whose ${method} this is cannot be told; it is asked of none`,
    { method, running },
  );
}

/**
 * What a requestState names: a call parked here, at a round; or a round the
 * upstream asked for itself (a 2026-07-28 upstream's own `input_required`),
 * relayed with its state carried inside the gateway's.
 */
type StatePayload = { call: string; round: number } | RelayedRound | RootsRound;

/**
 * The gateway's own round for a client's roots, asked before a call is
 * forwarded: an upstream asked for them when no client could be asked.
 */
interface RootsRound {
  roots: string;
}

/** The key the gateway's own roots request has in `inputRequests` and `inputResponses`. */
export const ROOTS_INPUT_KEY = 'mcp-envelope/roots';

function isRootsRound(state: unknown): state is RootsRound {
  return typeof state === 'object' && state !== null && typeof (state as RootsRound).roots === 'string';
}

/** An upstream's own round: which upstream, for which call, and the state it gave (opaque to the gateway). */
export interface RelayedRound {
  upstream: string;
  identity: string;
  state?: string;
}

function isRelayed(state: unknown): state is RelayedRound {
  return typeof state === 'object' && state !== null && typeof (state as RelayedRound).upstream === 'string';
}

interface Waiting {
  request: EmbeddedRequest;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: Result } | { ok: false; error: unknown };

/** The SDK's own answer to state that fails verification, so every bad retry looks alike on the wire. */
export function invalidState(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState', {
    reason: 'invalid_request_state',
  });
}

function callOver(): EnvelopeError {
  return new EnvelopeError('DEPENDENCY_UNAVAILABLE', 'The call this request belonged to is over');
}

/** Errors that are protocol answers of this module rather than failures of the call. */
export function isRoundSignal(error: unknown): boolean {
  return error instanceof ProtocolError && error.code === ProtocolErrorCode.MissingRequiredClientCapability;
}

/** What a 2026-07-28 request's `_meta` says its client can do. */
export function declaredCapabilities(ctx: ServerContext): ClientCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
}

/** What the declared client capabilities lack for one embedded request (an `elicitation: {}` means form mode). */
function lacking(
  request: EmbeddedRequest,
  declared: ClientCapabilities | undefined,
): ClientCapabilities | undefined {
  const params = request.params ?? {};
  if (request.method === 'elicitation/create') {
    const mode = params.mode === 'url' ? 'url' : 'form';
    const modes = declared?.elicitation as Record<string, unknown> | undefined;
    const formByDefault = mode === 'form' && modes?.form === undefined && modes?.url === undefined;
    return modes && (modes[mode] !== undefined || formByDefault)
      ? undefined
      : { elicitation: { [mode]: {} } };
  }
  if (request.method === 'sampling/createMessage') {
    const withTools = params.tools !== undefined || params.toolChoice !== undefined;
    const sampling = declared?.sampling as Record<string, unknown> | undefined;
    if (!sampling) return withTools ? { sampling: { tools: {} } } : { sampling: {} };
    return withTools && sampling.tools === undefined ? { sampling: { tools: {} } } : undefined;
  }
  return declared?.roots ? undefined : { roots: {} };
}

class ParkedCall {
  readonly id = randomUUID();
  readonly controller = new AbortController();
  readonly waiting = new Map<string, Waiting>();
  round = 0;
  /** The downstream request waiting on the call; undefined while parked. */
  ctx: ServerContext | undefined;
  outcome: Outcome | undefined;
  done = false;
  endReason: unknown;
  timer: NodeJS.Timeout | undefined;
  #keys = 0;
  #wake: (() => void) | undefined;

  readonly identity: string;
  readonly timeoutMs: number;

  constructor(identity: string, timeoutMs: number) {
    this.identity = identity;
    this.timeoutMs = timeoutMs;
  }

  nextKey(method: string): string {
    this.#keys++;
    return `${method.split('/')[0]}-${this.#keys}`;
  }

  changed(): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/**
 * The parked calls of one upstream session and the rounds between them and
 * their clients. State is minted with the SDK's HMAC codec, bound to the method
 * and the caller's principal (a token, else an anonymous caller's address); the call it names must also still be parked, at
 * the same round, for the same request, or the retry gets the SDK's -32602.
 */
export class InputRounds {
  readonly #codec;
  readonly #options: InputRoundsOptions;
  readonly #max: number;
  /** Live calls, most recently started or resumed last: the newest is the likeliest sender. */
  readonly #calls = new Map<string, ParkedCall>();
  readonly #byCtx = new WeakMap<ServerContext, ParkedCall>();
  readonly #relayed = new WeakMap<ServerContext, RelayedRound>();
  /** Retries that carry the client's answer to the gateway's own roots round. */
  readonly #rootsRetries = new WeakSet<ServerContext>();

  constructor(options: InputRoundsOptions) {
    this.#options = options;
    this.#max = options.maxParked ?? MAX_PARKED_CALLS;
    this.#codec = createRequestStateCodec<StatePayload>({
      key: PROCESS_KEY,
      ttlSeconds: options.ttlSeconds ?? 600,
      bind: (ctx) => `${ctx.mcpReq.method}\0${principalOf(ctx)}`,
    });
  }

  /** For `ServerOptions.requestState.verify`: tampered, expired or foreign state never reaches a handler. */
  readonly verify = (state: string, ctx: ServerContext): Promise<unknown> => this.#codec.verify(state, ctx);

  get parkedCount(): number {
    let parked = 0;
    for (const call of this.#calls.values()) if (!call.ctx) parked++;
    return parked;
  }

  /**
   * A retry names its parked call by requestState: the call is taken over by
   * this request and the client's answers go upstream at once. A retry without
   * state is a new call; one whose call is gone, or asks for something else, is refused.
   */
  claim(ctx: ServerContext, identity: string): void {
    const state = ctx.mcpReq.requestState<StatePayload>();
    if (state === undefined) return;
    if (isRootsRound(state)) {
      if (state.roots !== identity) throw invalidState();
      this.#rootsRetries.add(ctx);
      return;
    }
    if (isRelayed(state)) {
      // The upstream keeps its own round: the retry goes to it with its state, if it names the same call.
      if (state.identity !== identity) throw invalidState();
      this.#relayed.set(ctx, state);
      return;
    }
    const call = typeof state === 'object' && state !== null ? this.#calls.get(state.call) : undefined;
    if (!call || call.ctx || call.round !== state.round || call.identity !== identity) throw invalidState();
    this.#activate(call, ctx);
    const responses = ctx.mcpReq.inputResponses ?? {};
    for (const [key, waiting] of call.waiting) {
      if (!Object.hasOwn(responses, key)) continue;
      call.waiting.delete(key);
      // Declines and cancels are answers too: the upstream gets whatever the client said.
      waiting.resolve(responses[key] as Result);
    }
  }

  /**
   * Runs the request's call (the one it claimed, or a new one) until it finishes
   * or needs input. A request whose call is over may start another: the relay
   * asks a second upstream for a resource the first did not have.
   */
  run(ctx: ServerContext, request: RoundCall): Promise<Result> {
    const claimed = this.#byCtx.get(ctx);
    return this.#next(claimed && !claimed.done ? claimed : this.#start(ctx, request), ctx);
  }

  /** Whether the request answers the gateway's own roots round (`askRoots`); its call has not started yet. */
  isRootsRetry(ctx: ServerContext): boolean {
    return this.#rootsRetries.has(ctx);
  }

  /**
   * The gateway's own round: the client is asked for its roots before its
   * call goes upstream, and its retry (the same call) carries them.
   */
  async askRoots(ctx: ServerContext, identity: string): Promise<Result> {
    const requestState = await this.#codec.mint({ roots: identity }, ctx);
    return {
      resultType: 'input_required',
      inputRequests: { [ROOTS_INPUT_KEY]: { method: 'roots/list', params: {} } },
      requestState,
    } as Result;
  }

  /** The upstream round a retry continues, when its state named one (`claim`). */
  relayedRound(ctx: ServerContext): RelayedRound | undefined {
    return this.#relayed.get(ctx);
  }

  /**
   * An upstream's own `input_required`, relayed: its requests as it asked them,
   * its state carried inside one the gateway signs (bound to the method and the
   * caller, as every state here), so a retry reaches the same upstream with it
   * and nothing is kept here meanwhile.
   */
  async relay(ctx: ServerContext, upstream: string, identity: string, result: Result): Promise<Result> {
    const state = (result as { requestState?: unknown }).requestState;
    const round: RelayedRound = { upstream, identity, ...(typeof state === 'string' ? { state } : {}) };
    return { ...result, requestState: await this.#codec.mint(round, ctx) } as Result;
  }

  /** Hands an upstream server-to-client request to the newest live call; undefined when there is none. */
  offer(request: EmbeddedRequest, signal: AbortSignal): Promise<Result> | undefined {
    if (!EMBEDDABLE_METHODS.has(request.method)) return undefined;
    const running = [...this.#calls.values()].filter((candidate) => !candidate.outcome);
    // A guess between clients that cannot be told apart could show one the other's request.
    if (this.#options.exclusive && running.length > 1)
      return Promise.reject(ambiguous(request.method, running.length));
    const call = running.at(-1);
    if (!call) return undefined;
    if (signal.aborted) return Promise.reject(signal.reason);
    if (call.waiting.size >= MAX_WAITING_PER_CALL) {
      return Promise.reject(
        new EnvelopeError(
          'RESOURCE_EXHAUSTED',
          `At most ${MAX_WAITING_PER_CALL} requests may wait on one call`,
        ),
      );
    }
    const key = call.nextKey(request.method);
    return new Promise<Result>((resolve, reject) => {
      call.waiting.set(key, { request, resolve, reject });
      // The upstream withdrew its request: it leaves the round, and a late answer is dropped.
      signal.addEventListener(
        'abort',
        () => {
          if (!call.waiting.delete(key)) return;
          reject(signal.reason);
          call.poke();
        },
        { once: true },
      );
      call.poke();
    });
  }

  /** The downstream request is over: a call it still held (claimed, then never run) is abandoned. */
  release(ctx: ServerContext): void {
    const call = this.#byCtx.get(ctx);
    if (call && call.ctx === ctx) {
      this.#end(call, new EnvelopeError('INTERNAL_ERROR', 'The request ended while its call was running'));
    }
  }

  close(): void {
    for (const call of [...this.#calls.values()]) {
      this.#end(call, new EnvelopeError('DEPENDENCY_UNAVAILABLE', 'The gateway is shutting down'));
    }
  }

  #start(ctx: ServerContext, request: RoundCall): ParkedCall {
    const call = new ParkedCall(request.identity, request.timeoutMs);
    this.#activate(call, ctx);
    request
      .start(call.controller.signal, (progress) => {
        if (call.ctx) this.#options.progress(call.ctx, progress);
      })
      .then(
        (value) => {
          call.outcome = { ok: true, value };
        },
        (error: unknown) => {
          call.outcome = { ok: false, error };
        },
      )
      .finally(() => {
        // The upstream has its answer: whatever it still asked for no longer matters to it.
        this.#rejectWaiting(call, callOver());
        call.poke();
      });
    return call;
  }

  #activate(call: ParkedCall, ctx: ServerContext): void {
    clearTimeout(call.timer);
    call.timer = undefined;
    call.ctx = ctx;
    this.#byCtx.set(ctx, call);
    this.#calls.delete(call.id);
    this.#calls.set(call.id, call);
  }

  async #next(call: ParkedCall, ctx: ServerContext): Promise<Result> {
    const signal = ctx.mcpReq.signal;
    const onAbort = () => this.#end(call, signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (call.done && !call.outcome) throw call.endReason;
        if (call.outcome) {
          this.#end(call);
          if (call.outcome.ok) return call.outcome.value;
          throw call.outcome.error;
        }
        if (call.waiting.size > 0) {
          await new Promise((resolve) => setTimeout(resolve, GATHER_MS));
          if (call.done || call.outcome || call.waiting.size === 0) continue;
          return await this.#park(call, ctx);
        }
        await call.changed();
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  async #park(call: ParkedCall, ctx: ServerContext): Promise<Result> {
    const declared = declaredCapabilities(ctx);
    const inputRequests: Record<string, EmbeddedRequest> = {};
    for (const [key, { request }] of call.waiting) {
      const missing = lacking(request, declared);
      if (missing) {
        const error = new MissingRequiredClientCapabilityError(
          { requiredCapabilities: missing },
          `Cannot request input '${key}' (${request.method}): the request's client capabilities do not declare the required capability`,
        );
        this.#end(call, error);
        throw error;
      }
      inputRequests[key] = request;
    }
    if (this.parkedCount >= this.#max) {
      const error = new EnvelopeError(
        'RESOURCE_EXHAUSTED',
        `At most ${this.#max} calls may wait for client input at once`,
        { max: this.#max },
      );
      this.#end(call, error);
      throw error;
    }
    call.round++;
    const requestState = await this.#codec.mint({ call: call.id, round: call.round }, ctx);
    if (call.done) throw call.endReason;
    call.ctx = undefined;
    call.timer = setTimeout(() => {
      this.#end(
        call,
        new EnvelopeError('TIMEOUT', `No retry within ${call.timeoutMs} ms`, { timeout_ms: call.timeoutMs }),
      );
    }, call.timeoutMs);
    call.timer.unref();
    return { resultType: 'input_required', inputRequests, requestState } as Result;
  }

  /** Forgets the call; one that is still running upstream is cancelled there. */
  #end(call: ParkedCall, reason?: unknown): void {
    if (call.done) return;
    call.done = true;
    call.endReason = reason;
    clearTimeout(call.timer);
    this.#calls.delete(call.id);
    if (!call.outcome) call.controller.abort(reason);
    this.#rejectWaiting(call, reason ?? callOver());
    call.poke();
  }

  #rejectWaiting(call: ParkedCall, reason: unknown): void {
    for (const waiting of call.waiting.values()) waiting.reject(reason);
    call.waiting.clear();
  }
}
