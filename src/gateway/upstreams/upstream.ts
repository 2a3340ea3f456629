import type {
  ClientCapabilities,
  ClientContext,
  Implementation,
  JSONRPCRequest,
  Notification,
  Result,
  ServerCapabilities,
  Tool,
  Transport,
} from '@modelcontextprotocol/client';
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { MAX_NESTING_DEPTH, pathBeyondDepth } from '../../canonical/index.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';
import { PACKAGE_VERSION } from '../../version.ts';
import { ChildProcessTransport, StderrRing } from './child-transport.ts';
import { connectionVerdict, lossReason } from './connection-loss.ts';
import { DEFAULT_RESTART_POLICY, type RestartPolicy, restartDelayMs } from './restart-policy.ts';

export type UpstreamSpec =
  | {
      name: string;
      kind: 'stdio';
      command: string;
      args?: readonly string[];
      env?: Record<string, string>;
      cwd?: string;
    }
  | { name: string; kind: 'http'; url: string; headers?: Record<string, string> };

/** An upstream to connect, with its own options over the gateway-wide ones. */
export type ConfiguredUpstream = UpstreamSpec & { options?: UpstreamOptions };

export interface UpstreamOptions {
  /** Default per-request timeout; nothing waits on an upstream longer than this. */
  timeoutMs?: number;
  /** How long the upstream may take to answer initialize (default 15 s). */
  startTimeoutMs?: number;
  /** Per-tool overrides of the tools/call timeout. */
  toolTimeoutsMs?: Readonly<Record<string, number>>;
  restart?: Partial<RestartPolicy>;
  clientInfo?: Implementation;
  stderrLimitBytes?: number;
}

/** What the relay plugs in: where upstream notifications and server-to-client requests go. */
export interface UpstreamHooks {
  onNotification(notification: Notification): void | Promise<void>;
  onRequest(request: JSONRPCRequest, ctx: ClientContext): Promise<Result>;
}

export interface UpstreamRequestOptions {
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

/** A result schema that accepts whatever the upstream sent: the relay forwards, it does not reshape. */
const ANY_RESULT = {
  '~standard': {
    version: 1 as const,
    vendor: 'mcp-envelope',
    validate: (value: unknown) => ({ value: value as Result }),
  },
};

/** The client capabilities the gateway offers upstream; each request is answered by the downstream client. */
const CLIENT_CAPABILITIES: ClientCapabilities = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: { listChanged: true },
};

/** Bound on tools/list pages read to describe a tool. */
const MAX_TOOL_PAGES = 100;

const SERVER_TO_CLIENT_METHODS = ['sampling/createMessage', 'elicitation/create', 'roots/list'] as const;

/**
 * One upstream MCP server: a stdio child (restarted with bounded backoff when it
 * crashes) or a Streamable HTTP URL (reconnected with the same backoff when the
 * connection drops). Every request is bounded by a timeout; a crash or a drop
 * fails the calls in flight at once with ADAPTER.EXECUTION.FAILED, carrying the
 * exit code and a stderr excerpt for a child.
 */
export class Upstream {
  readonly spec: UpstreamSpec;
  readonly stderr: StderrRing;
  readonly #options: UpstreamOptions;
  readonly #restart: RestartPolicy;
  #hooks: UpstreamHooks | undefined;
  #client: Client | undefined;
  #transport: Transport | undefined;
  #ready: Promise<void> | undefined;
  #closing = false;
  #restarts = 0;
  #startedAt = 0;
  #lastExit: { code: number | null; signal: string | null } | undefined;
  #down: EnvelopeError | undefined;
  /** Set while the latest attempt to start (or reconnect) failed: calls fail at once, not at their timeout. */
  #startFailure: EnvelopeError | undefined;
  readonly #recoveryListeners = new Set<() => void>();
  readonly #gaveUpListeners = new Set<(restarts: number) => void>();
  #gaveUpAfter: number | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  /** Why an HTTP connection was given up, for the failure the calls in flight get. */
  #lostBecause: string | undefined;
  #probing = false;
  #tools: Promise<Map<string, Tool>> | undefined;
  /** How many times the process was (re)started; tests and logs read it. */
  generation = 0;

  constructor(spec: UpstreamSpec, options: UpstreamOptions = {}) {
    this.spec = spec;
    this.#options = options;
    this.#restart = { ...DEFAULT_RESTART_POLICY, ...options.restart };
    this.stderr = new StderrRing(options.stderrLimitBytes ?? 8192);
  }

  get name(): string {
    return this.spec.name;
  }

  setHooks(hooks: UpstreamHooks): void {
    this.#hooks = hooks;
  }

  get capabilities(): ServerCapabilities {
    return this.#client?.getServerCapabilities() ?? {};
  }

  get serverInfo(): Implementation | undefined {
    return this.#client?.getServerVersion();
  }

  get instructions(): string | undefined {
    return this.#client?.getInstructions();
  }

  /** Connected and serving; false while it is down, restarting or reconnecting. */
  get available(): boolean {
    return !this.#closing && !this.#down && this.#client !== undefined;
  }

  /** Why the upstream is down, while it is. */
  get failure(): EnvelopeError | undefined {
    return this.#down;
  }

  /** Calls `listener` each time the upstream serves again after being down; returns the unsubscribe. */
  onRecovered(listener: () => void): () => void {
    this.#recoveryListeners.add(listener);
    return () => this.#recoveryListeners.delete(listener);
  }

  /** Called when the restart budget is spent: the upstream stays down until the gateway restarts. */
  onGaveUp(listener: (restarts: number) => void): () => void {
    // It may have given up before anyone listened (fast retries during the first start).
    const after = this.#gaveUpAfter;
    if (after !== undefined) queueMicrotask(() => listener(after));
    this.#gaveUpListeners.add(listener);
    return () => this.#gaveUpListeners.delete(listener);
  }

  get pid(): number | undefined {
    return this.#transport instanceof ChildProcessTransport ? this.#transport.pid : undefined;
  }

  /** Connects (or reconnects); resolves once the upstream answered initialize. */
  connect(): Promise<void> {
    this.#ready = this.#start();
    return this.#ready;
  }

  async #start(): Promise<void> {
    const client = new Client(
      this.#options.clientInfo ?? { name: 'mcp-envelope-gateway', version: PACKAGE_VERSION },
      {
        capabilities: CLIENT_CAPABILITIES,
      },
    );
    for (const method of SERVER_TO_CLIENT_METHODS) {
      client.setRequestHandler(
        method,
        (request, ctx) => this.#serverRequest(request as JSONRPCRequest, ctx) as never,
      );
    }
    client.fallbackRequestHandler = (request, ctx) => this.#serverRequest(request, ctx);
    client.fallbackNotificationHandler = async (notification) => {
      if (notification.method === 'notifications/tools/list_changed') this.#tools = undefined;
      await this.#hooks?.onNotification(notification);
    };
    const transport = this.#makeTransport();
    // The HTTP transport calls onclose on every close(); one end is handled once.
    let ended = false;
    transport.onclose = () => {
      if (ended) return;
      ended = true;
      this.#onTransportClosed(client, transport);
    };
    if (this.spec.kind === 'http') client.onerror = (error) => this.#onHttpError(client, error);
    this.#client = client;
    this.#transport = transport;
    this.#tools = undefined;
    this.generation++;
    this.#startedAt = Date.now();
    try {
      await client.connect(transport, { timeout: this.#options.startTimeoutMs ?? 15_000 });
    } catch (error) {
      const what = this.spec.kind === 'stdio' ? 'did not start' : 'could not connect';
      // A child that exited during startup: its exit says more than the closed connection.
      const exit = transport instanceof ChildProcessTransport ? transport.exit : undefined;
      const reason = exit
        ? `exited with ${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`}`
        : errorText(error);
      const failure = this.#failure(`upstream ${this.name} ${what}: ${reason}`, error);
      // A server that never answered initialize is still running: end it.
      await client.close().catch(() => {});
      // The close handler has scheduled the next attempt; until it succeeds, this is why it is down.
      if (this.#client === client) this.#down = this.#startFailure = failure;
      throw failure;
    }
    this.#down = undefined;
    this.#startFailure = undefined;
  }

  #makeTransport(): Transport {
    const spec = this.spec;
    if (spec.kind === 'stdio') {
      return new ChildProcessTransport({
        command: spec.command,
        args: spec.args,
        env: spec.env,
        cwd: spec.cwd,
        stderr: this.stderr,
      });
    }
    return new StreamableHTTPClientTransport(new URL(spec.url), {
      requestInit: spec.headers ? { headers: spec.headers } : undefined,
    });
  }

  #serverRequest(request: JSONRPCRequest, ctx: ClientContext): Promise<Result> {
    if (!this.#hooks)
      throw new EnvelopeError('NOT_IMPLEMENTED', 'No downstream client to answer this request');
    return this.#hooks.onRequest(request, ctx);
  }

  /**
   * The HTTP transport reports a dropped connection without closing: close it
   * here, so the calls in flight fail now and the reconnection below starts.
   */
  #onHttpError(client: Client, error: unknown): void {
    if (this.#client !== client || this.#down || this.#closing) return;
    const verdict = connectionVerdict(error);
    if (verdict === 'lost') this.#lose(client, lossReason(error));
    else if (verdict === 'suspect' && !this.#probing) {
      // One broken stream may be just that stream: the server decides by answering a ping.
      this.#probing = true;
      client
        .ping({ timeout: this.#options.startTimeoutMs ?? 15_000 })
        .catch(() => this.#lose(client, lossReason(error)))
        .finally(() => {
          this.#probing = false;
        });
    }
  }

  #lose(client: Client, reason: string): void {
    if (this.#client !== client || this.#down || this.#closing) return;
    this.#lostBecause = reason;
    void client.close().catch(() => {});
  }

  #onTransportClosed(client: Client, transport: Transport): void {
    if (this.#client !== client) return;
    if (transport instanceof ChildProcessTransport) this.#lastExit = transport.exit ?? this.#lastExit;
    if (this.#closing) {
      this.#down = this.#failure(`upstream ${this.name} connection closed`);
      return;
    }
    if (Date.now() - this.#startedAt > this.#restart.stableAfterMs) this.#restarts = 0;
    const lost = this.#lostBecause;
    this.#lostBecause = undefined;
    this.#down = this.#failure(
      this.spec.kind === 'stdio'
        ? `upstream ${this.name} exited`
        : `upstream ${this.name} connection lost${lost ? `: ${lost}` : ''}`,
    );
    if (this.#restarts >= this.#restart.maxRestarts) {
      this.#gaveUpAfter = this.#restarts;
      for (const listener of this.#gaveUpListeners) listener(this.#restarts);
      return;
    }
    this.#restarts++;
    const delay = restartDelayMs(this.#restart, this.#restarts);
    let settle: () => void = () => {};
    this.#ready = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (this.#closing) return settle();
      this.#start()
        .then(() => {
          for (const listener of this.#recoveryListeners) listener();
        })
        .catch(() => {
          // #start already recorded why; the close handler schedules the next attempt.
        })
        .finally(settle);
    }, delay);
  }

  /** ADAPTER.EXECUTION.FAILED with what is known about the process. */
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

  #failure(message: string, cause?: unknown): EnvelopeError {
    const details: Record<string, unknown> = { upstream: this.name };
    if (this.#lastExit) {
      details.exit_code = this.#lastExit.code;
      if (this.#lastExit.signal) details.signal = this.#lastExit.signal;
    }
    const tail = this.stderr.tail(1024);
    if (tail) details.stderr = tail;
    return new UpstreamFailure(message, details, cause);
  }

  /** Waits (bounded) for a restarting upstream, then returns its client. */
  async #liveClient(deadline: number): Promise<Client> {
    // The common case, without a timer: connected and not restarting.
    if (this.available && this.#client) return this.#client;
    for (let attempt = 0; attempt < 3; attempt++) {
      if (this.#closing) throw this.#failure(`upstream ${this.name} is shut down`);
      if (this.#startFailure) throw this.#startFailure;
      const ready = this.#ready;
      if (!ready) throw this.#failure(`upstream ${this.name} is not connected`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        ready.catch(() => {}),
        new Promise((resolve) => {
          timer = setTimeout(resolve, remaining);
        }),
      ]);
      clearTimeout(timer);
      if (!this.#down && this.#client) return this.#client;
      if (ready === this.#ready) break;
    }
    throw this.#down ?? this.#failure(`upstream ${this.name} is not available`);
  }

  timeoutFor(method: string, params: Record<string, unknown> | undefined): number {
    if (method === 'tools/call' && typeof params?.name === 'string') {
      const own = this.#options.toolTimeoutsMs?.[params.name];
      if (own !== undefined) return own;
    }
    return this.#options.timeoutMs ?? 60_000;
  }

  /** The longest timeout any request to this upstream may have. */
  longestTimeoutMs(): number {
    return Math.max(this.#options.timeoutMs ?? 60_000, ...Object.values(this.#options.toolTimeoutsMs ?? {}));
  }

  /** Sends one request upstream and returns its raw result. */
  async request(
    method: string,
    params: Record<string, unknown> | undefined,
    options: UpstreamRequestOptions = {},
  ): Promise<Result> {
    const timeoutMs = options.timeoutMs ?? this.timeoutFor(method, params);
    const client = await this.#liveClient(Date.now() + timeoutMs);
    try {
      const result = (await client.request({ method, params } as never, ANY_RESULT, {
        signal: options.signal,
        onprogress: options.onprogress,
        timeout: timeoutMs,
      })) as Result;
      this.#refuseTooDeep(method, result);
      return result;
    } catch (error) {
      throw this.#translate(error, method, timeoutMs);
    }
  }

  /**
   * The upstream's own description of a tool (its input and output schemas),
   * from its tools/list, cached until the list changes or the process restarts.
   */
  async describeTool(name: string): Promise<Tool | undefined> {
    this.#tools ??= this.#listTools().catch((error: unknown) => {
      this.#tools = undefined;
      throw error;
    });
    return (await this.#tools).get(name);
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
    const tools = new Map<string, Tool>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await this.request('tools/list', cursor ? { cursor } : undefined);
      for (const tool of (result.tools ?? []) as Tool[]) tools.set(tool.name, tool);
      cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
      if (!cursor) break;
    }
    return tools;
  }

  /** Forwards a notification upstream; a dead upstream drops it (notifications have no reply). */
  async notify(notification: Notification): Promise<void> {
    if (this.#down || !this.#client) return;
    await this.#client.notification(notification).catch(() => {});
  }

  #translate(error: unknown, method: string, timeoutMs: number): unknown {
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
        return this.#down ?? this.#failure(`upstream ${this.name} connection closed during ${method}`, error);
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

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#restartTimer) clearTimeout(this.#restartTimer);
    await this.#client?.close().catch(() => {});
  }

  /** Kills a stdio upstream's process as a crash would (for fault tests and operators). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.#transport instanceof ChildProcessTransport) this.#transport.kill(signal);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
