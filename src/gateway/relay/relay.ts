import type {
  AuthInfo,
  CallToolResult,
  ClientCapabilities,
  Implementation,
  JSONRPCRequest,
  Notification,
  Result,
  ServerCapabilities,
  ServerContext,
  Tool,
} from '@modelcontextprotocol/server';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  ProtocolError,
  RELATED_TASK_META_KEY,
  Server,
} from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../errors/index.ts';
import { RESULT_SCHEMA_META_KEY } from '../../mcp/tool-result.ts';
import { PACKAGE_VERSION } from '../../version.ts';
import { FILTERED_LISTS, uriRuleNames, visibleItems } from '../access/lists.ts';
import type { AccessDecision, AccessPolicy, AccessPrincipal } from '../access/policy.ts';
import { accessPrincipalOf } from '../access/principal.ts';
import { toProtocolError } from '../jsonrpc/messages.ts';
import { collectPages } from '../jsonrpc/pagination.ts';
import { kindOfList } from '../pinning/definitions.ts';
import { verifySignedList } from '../pinning/observe.ts';
import { changeMeta, PINS_META_KEY, type PinChange, type PinGuard } from '../pinning/pin-guard.ts';
import type { SignatureVerdict } from '../pinning/signature.ts';
import type { ClientIdentity, Upstream } from '../upstreams/upstream.ts';
import { connectionSink, Downstream, isStatelessEra } from './downstream.ts';
import { NAMESPACE_SEPARATOR, namespacedName, namespacedUri, splitName, splitUri } from './namespace.ts';
import type { SharedUpstreams } from './shared-upstreams.ts';

export { NAMESPACE_SEPARATOR };

export type CallToolParams = {
  name: string;
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
};

/** Calls the tool on its upstream and returns the upstream's result as sent. */
export type InvokeUpstream = (params: CallToolParams) => Promise<CallToolResult>;

export interface ToolCallContext {
  upstream: string;
  signal: AbortSignal;
  /** The tool's definition as its upstream listed it (own schemas), when known. */
  tool?: Tool;
  /** Who called, when the transport authenticated the caller. */
  authInfo?: AuthInfo;
  /** The upstream server's own name and version (from its initialize), for provenance. */
  serverInfo?: Implementation;
  /** Why the upstream cannot serve the call, when it is down (the tool is then unknown). */
  unavailable?: EnvelopeError;
  /** `sha256:<hex>` of the definition the call runs under, when the upstream's tools are pinned. */
  definitionDigest?: string;
  /** The request as the client sent it: its JSON-RPC id, the wire's protocol revision, its 2025-era session. */
  request?: { id: string | number; protocolVersion?: string; sessionId?: string };
}

/**
 * The hook the enforcement pipeline plugs into: it sees each tools/call, may
 * validate, invoke the upstream and rewrite the result. Passthrough by default.
 */
export type ToolCallHandler = (
  params: CallToolParams,
  invokeUpstream: InvokeUpstream,
  context: ToolCallContext,
) => Promise<CallToolResult>;

export const passthroughToolCalls: ToolCallHandler = (params, invokeUpstream) => invokeUpstream(params);

/**
 * Spans of the requests a relay serves other than `tools/call` (the tool-call
 * hook traces those): the telemetry module implements it, so the relay never
 * loads OpenTelemetry itself.
 */
export interface RequestTracing {
  /** A request arrived; its span starts now (its parent from `params._meta`, else the HTTP headers). */
  begin(request: TracedRequestFacts): TracedRequest;
}

/** What a request's span is started from. */
export interface TracedRequestFacts {
  method: string;
  params: Record<string, unknown> | undefined;
  id: string | number;
  /** The negotiated revision; for `initialize`, the one the client asked for. */
  protocolVersion: string | undefined;
  /** The 2025-11-25 session id, when the request came on one. */
  sessionId: string | undefined;
  /** The HTTP request's caller, when it came over HTTP (its trace-context headers are the fallback parent). */
  authInfo: AuthInfo | undefined;
  transport: 'stdio' | 'http';
}

/** One traced request: a CLIENT child per upstream request made for it, then its end. */
export interface TracedRequest {
  /**
   * An upstream request made for this one starts: `sent` is its params with the
   * child's trace context in `_meta.traceparent` (params absent stay absent).
   */
  upstream(
    upstream: string,
    method: string,
    params: Record<string, unknown> | undefined,
  ): { sent: Record<string, unknown> | undefined; end(error?: unknown): void };
  /** The answer goes (`error`: as a JSON-RPC error). */
  end(error?: unknown): void;
}

/** The traced request each request context belongs to, for the upstream requests made under it. */
const tracedRequests = new WeakMap<object, TracedRequest>();

export interface RelayOptions {
  toolCallHandler?: ToolCallHandler;
  /** In envelope mode: the output schema advertised for a tool instead of its own. */
  outputSchemaFor?: (tool: Tool, upstream: string) => Tool['outputSchema'] | undefined;
  serverInfo?: Implementation;
  /** What to advertise instead of the upstreams' own capabilities (some were down; see availability.ts). */
  capabilities?: ServerCapabilities;
  /**
   * The downstream side of the upstream session, when relays share one (the
   * per-request relays of stateless HTTP). Without it the relay makes its own,
   * and messages outside any request go on the relay's own connection.
   */
  downstream?: Downstream;
  /** Most 2026-07-28 calls parked for client input at once (default 1,000). */
  maxParkedCalls?: number;
  /**
   * Upstreams this relay shares with the other clients of its principal: the
   * relay's own Downstream is attached to them (without `downstream` only).
   */
  shared?: SharedUpstreams;
  /**
   * Which upstream listed each resource URI, when relays share an upstream
   * session (the per-request relays of stateless HTTP): a read then goes where
   * an earlier request's list found the resource.
   */
  resourceOwners?: Map<string, Upstream>;
  /**
   * Resources the gateway serves itself (its artifacts, see
   * src/gateway/artifacts/): a read of one of their URIs is answered here and
   * never forwarded, and resources are advertised even when no upstream has them.
   */
  ownResources?: OwnResources;
  /** Definition pins (src/gateway/pinning/): lists are checked against them, and each tools/call. */
  pins?: PinGuard;
  /**
   * Authorization per identity (src/gateway/access/): lists show each caller
   * what it may use, and a prompt, resource or skill it may not is refused
   * before the upstream is asked (tools are refused by the tool-call hook's
   * pipeline).
   */
  access?: AccessPolicy;
  /** Spans of every request but `tools/call` (telemetry with traces on); absent, requests pay one check. */
  requestTracing?: RequestTracing;
}

/** Resources the gateway answers for itself. */
export interface OwnResources {
  owns(uri: unknown): uri is string;
  /** `caller`: the principal a bearer token made of the client, when one did. */
  read(uri: string, caller?: string): Promise<Result>;
}

/** Resource URIs found by reads whose upstream is kept in mind (lists add theirs besides). */
const MAX_REMEMBERED_RESOURCES = 10_000;

/** What a 2026-07-28 list says about caching it; a list gathered from several says what holds for all. */
interface CacheHints {
  ttlMs?: number;
  cacheScope?: string;
}

/**
 * The hints of a list gathered from pages of several upstreams: the shortest
 * lifetime and the narrowest scope any page gave. A page that gave none leaves
 * the conservative defaults (nothing cached, private).
 */
function gatheredHints(pages: readonly CacheHints[]): CacheHints {
  if (pages.length === 0 || pages.some((page) => typeof page.ttlMs !== 'number')) return UNCACHED;
  const ttlMs = Math.min(...pages.map((page) => page.ttlMs as number));
  const cacheScope = pages.every((page) => page.cacheScope === 'public') ? 'public' : 'private';
  return { ttlMs, cacheScope };
}

/** The SDK's own defaults (nothing cached, private), which it fills for the core lists but not for the skills extension's results. */
const UNCACHED: CacheHints = { ttlMs: 0, cacheScope: 'private' };

/** The methods whose items are named by a URI, and the member each item's URI is under. */
const URI_LISTS = {
  'resources/list': { key: 'resources', member: 'uri' },
  'resources/templates/list': { key: 'resourceTemplates', member: 'uriTemplate' },
} as const;

/** Methods of the Skills extension (SEP-2640) and of 2025-11-25 tasks, routed by what they name. */
const SKILLS_LIST = 'skills/list';
const SKILLS_GET = 'skills/get';
const DIRECTORY_READ = 'resources/directory/read';
const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/result', 'tasks/cancel']);

/** A tool call answered with a task handle (2025-11-25 tasks) rather than a result. */
export function isCreateTaskResult(result: unknown): boolean {
  const task = (result as { task?: unknown } | null)?.task;
  return (
    typeof task === 'object' &&
    task !== null &&
    typeof (task as { taskId?: unknown }).taskId === 'string' &&
    (result as { content?: unknown }).content === undefined
  );
}

/**
 * The relay's SDK server. A task-augmented `tools/call` (2025-11-25) is
 * answered with a task handle, which the SDK's own `tools/call` wrapper checks
 * as a tool result and refuses; the handle is carried past that check (the
 * hook SDK servers override to wrap their handlers), everything else goes
 * through it as before.
 */
class RelayServer extends Server {
  /**
   * Set once the relay is built; read per request, since the SDK wraps its own
   * handlers (`initialize`, `ping`) while the server is being constructed.
   */
  requestTracing: RequestTracing | undefined;

  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method !== 'tools/call') return this.traced(super._wrapHandler(method, handler));
    const handles = new Map<unknown, Result>();
    const wrapped = super._wrapHandler(method, async (request, ctx) => {
      const result = await handler(request, ctx);
      if (!isCreateTaskResult(result)) return result;
      handles.set(request.id, result);
      return { content: [] };
    });
    return async (request, ctx) => {
      try {
        const result = await wrapped(request, ctx);
        return handles.get(request.id) ?? result;
      } finally {
        handles.delete(request.id);
      }
    };
  }

  /** A handler whose request is a span, when requests are traced (`tools/call` is the tool-call hook's). */
  traced(
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    // Not async: untraced, the handler's own promise is returned, with no further turn.
    return (request, ctx) => {
      const tracing = this.requestTracing;
      if (!tracing || request.method === 'tools/call') return handler(request, ctx);
      return this.#traced(tracing, handler, request, ctx);
    };
  }

  async #traced(
    tracing: RequestTracing,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
    request: JSONRPCRequest,
    ctx: ServerContext,
  ): Promise<Result> {
    const params = request.params as Record<string, unknown> | undefined;
    const span = tracing.begin({
      method: request.method,
      params,
      id: request.id,
      protocolVersion:
        this.getNegotiatedProtocolVersion() ??
        (typeof params?.protocolVersion === 'string' ? params.protocolVersion : undefined),
      sessionId: ctx.sessionId,
      authInfo: ctx.http?.authInfo,
      transport: ctx.http ? 'http' : 'stdio',
    });
    tracedRequests.set(ctx, span);
    try {
      const result = await handler(request, ctx);
      span.end();
      return result;
    } catch (error) {
      span.end(error);
      throw error;
    }
  }
}

function notFound(message: string): unknown {
  return toProtocolError(new EnvelopeError('NOT_FOUND', message));
}

/**
 * Who the relay says it is: the configured identity (the gateway's, when it fronts
 * several upstreams), else its one upstream's own, else the gateway's. The server
 * card (http/server-card.ts) names the same.
 */
export function advertisedServerInfo(
  configured: Implementation | undefined,
  single: Implementation | undefined,
): Implementation {
  return configured ?? single ?? { name: 'mcp-envelope-gateway', version: PACKAGE_VERSION };
}

export function mergeCapabilities(
  upstreams: readonly { capabilities: ServerCapabilities }[],
): ServerCapabilities {
  const merged: ServerCapabilities = {};
  for (const upstream of upstreams) {
    const caps = upstream.capabilities;
    for (const key of Object.keys(caps) as (keyof ServerCapabilities)[]) {
      const value = caps[key];
      if (value === undefined) continue;
      const existing = merged[key];
      (merged as Record<string, unknown>)[key] =
        typeof value === 'object' && value !== null && typeof existing === 'object' && existing !== null
          ? { ...existing, ...value }
          : value;
    }
  }
  return merged;
}

/**
 * A downstream MCP server that forwards every request and notification to its
 * upstream(s) and relays the upstreams' notifications and server-to-client
 * requests back. With one upstream, names and cursors pass through untouched;
 * with several, tools and prompts are named `<upstream>__<name>` and lists are
 * gathered across upstreams.
 */
export class Relay {
  readonly server: Server;
  readonly downstream: Downstream;
  readonly #ownsDownstream: boolean;
  readonly #upstreams: readonly Upstream[];
  readonly #byName: Map<string, Upstream>;
  readonly #names: ReadonlySet<string>;
  readonly #options: RelayOptions;
  readonly #resourceOwners: Map<string, Upstream>;

  constructor(upstreams: readonly Upstream[], options: RelayOptions = {}) {
    if (upstreams.length === 0) throw new EnvelopeError('USAGE_ERROR', 'A relay needs at least one upstream');
    this.#upstreams = upstreams;
    this.#byName = new Map(upstreams.map((upstream) => [upstream.name, upstream]));
    this.#names = new Set(this.#byName.keys());
    this.#options = options;
    this.#resourceOwners = options.resourceOwners ?? new Map();
    this.#ownsDownstream = options.downstream === undefined;
    this.downstream =
      options.downstream ??
      new Downstream(upstreams, { maxParked: options.maxParkedCalls, shared: options.shared });
    const single = upstreams.length === 1 ? upstreams[0] : undefined;
    const info = advertisedServerInfo(options.serverInfo, single?.serverInfo);
    const merged = options.capabilities ?? mergeCapabilities(upstreams);
    const capabilities = options.ownResources && !merged.resources ? { ...merged, resources: {} } : merged;
    this.server = new RelayServer(info, {
      capabilities,
      instructions: single?.instructions,
      // A 2026-07-28 retry's requestState is checked before any handler sees it; 2025-era
      // requests have no rounds, so whatever they carry there stays theirs, as before.
      requestState: {
        verify: (state, ctx) =>
          isStatelessEra(this.server) ? this.downstream.rounds.verify(state, ctx) : undefined,
      },
    });
    (this.server as RelayServer).requestTracing = options.requestTracing;
    this.#registerHandlers(capabilities);
    if (this.#ownsDownstream) this.downstream.setSink(connectionSink(this.server));
    if (this.#multi)
      this.downstream.setRenamer((upstream, notification) => this.#renamed(upstream, notification));
    this.server.oninitialized = () => this.announceRoots();
  }

  #rootsAnnounced = false;

  /**
   * An upstream that asked for roots before any client had connected
   * (server-filesystem does, as soon as it is initialized) was answered without
   * them; told that the roots changed, it asks again, and the client answers.
   * Once per client that has roots, as soon as it can be asked: at once over
   * stdio, when its stream opens over HTTP (its session calls this again then).
   */
  announceRoots(): void {
    if (this.#rootsAnnounced || this.server.getClientCapabilities()?.roots === undefined) return;
    if (!this.downstream.reachable) return;
    this.#rootsAnnounced = true;
    this.downstream.touch();
    for (const upstream of this.#upstreams)
      void upstream.notify({ method: 'notifications/roots/list_changed' });
  }

  get #multi(): boolean {
    return this.#upstreams.length > 1;
  }

  #first(): Upstream {
    return this.#upstreams[0] as Upstream;
  }

  /** Wraps a handler: records the downstream request as in flight and maps errors. */
  #handle(
    body: (params: Record<string, unknown> | undefined, ctx: ServerContext) => Promise<Result>,
  ): (request: { params?: unknown }, ctx: ServerContext) => Promise<never> {
    return async (request, ctx) => {
      const params = request.params as Record<string, unknown> | undefined;
      try {
        this.downstream.enter(ctx, isStatelessEra(this.server), params);
        const result = await body(params, ctx);
        // A result must not overtake the notifications the upstream sent before it.
        await this.downstream.settled(ctx);
        return result as never;
      } catch (error) {
        throw toProtocolError(error, this.server.getNegotiatedProtocolVersion());
      } finally {
        this.downstream.leave(ctx);
      }
    };
  }

  #forward(
    upstream: Upstream,
    method: string,
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
  ): Promise<Result> {
    const traced = this.#options.requestTracing && tracedRequests.get(ctx);
    if (!traced) return this.downstream.forward(upstream, method, params, ctx, this.#client(ctx));
    const { sent, end } = traced.upstream(upstream.name, method, params);
    return this.downstream.forward(upstream, method, sent, ctx, this.#client(ctx)).then(
      (result) => {
        end();
        return result;
      },
      (error: unknown) => {
        end(error);
        throw error;
      },
    );
  }

  /**
   * Who the client is, for the upstreams that are told per request
   * (2026-07-28): what a stateless request says in its own `_meta`, else what
   * the client said at initialize.
   */
  #client(ctx: ServerContext): ClientIdentity {
    const envelope = (ctx.mcpReq as { envelope?: Record<string, unknown> }).envelope;
    if (envelope) {
      return {
        info: envelope[CLIENT_INFO_META_KEY] as Implementation | undefined,
        capabilities: envelope[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined,
      };
    }
    return { info: this.server.getClientVersion(), capabilities: this.server.getClientCapabilities() };
  }

  #split(name: unknown): { upstream: Upstream; name: string } {
    if (typeof name !== 'string') throw notFound('Missing name');
    if (!this.#multi) return { upstream: this.#first(), name };
    const split = splitName(name, this.#names);
    const upstream = split && this.#byName.get(split.upstream);
    if (!split || !upstream) throw notFound(`Unknown name: ${name}`);
    return { upstream, name: split.name };
  }

  /**
   * The upstream a URI belongs to and the URI it has there: a namespaced URI
   * names its upstream; a URI as an upstream wrote it (a link in a tool's
   * result) goes to the upstream whose list or read named it. Undefined when
   * neither says.
   */
  #resolveUri(uri: unknown): { upstream: Upstream; uri: string } | undefined {
    if (typeof uri !== 'string') return undefined;
    if (!this.#multi) return { upstream: this.#first(), uri };
    // A URI an upstream listed as it is (one whose first segment happens to be an upstream's name).
    const owner = this.#resourceOwners.get(uri);
    if (owner) return { upstream: owner, uri };
    const split = splitUri(uri, this.#names);
    const upstream = split && this.#byName.get(split.upstream);
    return split && upstream ? { upstream, uri: split.uri } : undefined;
  }

  /** A URI of an upstream as clients see it. */
  #uriOut(upstream: Upstream, uri: unknown): unknown {
    return this.#multi && typeof uri === 'string' ? namespacedUri(upstream.name, uri) : uri;
  }

  /** An upstream message with what it names (a resource, a task) as clients know it. */
  #renamed(upstream: Upstream, notification: Notification): Notification {
    const params = notification.params as Record<string, unknown> | undefined;
    if (notification.method === 'notifications/resources/updated' && typeof params?.uri === 'string')
      return { ...notification, params: { ...params, uri: this.#uriOut(upstream, params.uri) } };
    if (notification.method === 'notifications/tasks/status' && typeof params?.taskId === 'string')
      return { ...notification, params: { ...params, taskId: namespacedName(upstream.name, params.taskId) } };
    return notification;
  }

  /** A skill entry (SEP-2640) with its SKILL.md and file URIs as clients see them. */
  #skillOut(upstream: Upstream, skill: unknown): unknown {
    if (typeof skill !== 'object' || skill === null) return skill;
    const entry = skill as { uri?: unknown; resources?: unknown };
    const resources = Array.isArray(entry.resources)
      ? entry.resources.map((file) =>
          typeof file === 'object' && file !== null
            ? { ...file, uri: this.#uriOut(upstream, (file as { uri?: unknown }).uri) }
            : file,
        )
      : entry.resources;
    return { ...entry, uri: this.#uriOut(upstream, entry.uri), resources };
  }

  /** A read's contents with their URIs as clients see them. */
  #contentsOut(upstream: Upstream, result: Result): Result {
    const contents = (result as { contents?: unknown }).contents;
    if (!Array.isArray(contents)) return result;
    return {
      ...result,
      contents: contents.map((content) =>
        typeof content === 'object' && content !== null
          ? { ...content, uri: this.#uriOut(upstream, (content as { uri?: unknown }).uri) }
          : content,
      ),
    };
  }

  /** A task (2025-11-25) with its id as clients see it. */
  #taskOut(upstream: Upstream, task: unknown): unknown {
    if (!this.#multi || typeof task !== 'object' || task === null) return task;
    const taskId = (task as { taskId?: unknown }).taskId;
    return typeof taskId === 'string' ? { ...task, taskId: namespacedName(upstream.name, taskId) } : task;
  }

  /** Lists across all upstreams; a single upstream's page and cursor pass through unchanged. */
  async #list(
    method: string,
    key: string,
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
    rename: (item: Record<string, unknown>, upstream: Upstream) => Record<string, unknown>,
  ): Promise<Result> {
    const changed: Record<string, unknown>[] = [];
    const principal = this.#principal(ctx);
    const policy = this.#options.access;
    // What the caller may not see is left out first: neither listed nor named in a pin note.
    const shown = (items: unknown[], upstream: Upstream) =>
      policy && principal
        ? visibleItems(policy, principal, method, upstream.name, items as Record<string, unknown>[])
        : (items as Record<string, unknown>[]);
    const reviewed = async (items: unknown[], upstream: Upstream, pages: readonly Result[]) =>
      this.#reviewed(
        method,
        shown(items, upstream),
        upstream,
        changed,
        rename,
        await this.#signature(method, upstream, pages),
      );
    if (!this.#multi) {
      const upstream = this.#first();
      // Resources advertised for the gateway's own alone: the upstream has none to list.
      if (this.#options.ownResources && method.startsWith('resources/') && !upstream.capabilities.resources)
        return { [key]: [] };
      const page = await this.#forward(upstream, method, params, ctx);
      const items = page[key];
      if (!Array.isArray(items)) return page;
      return this.#privately(
        method,
        this.#withPinNotes({ ...page, [key]: await reviewed(items, upstream, [page]) }, changed),
      );
    }
    const all: Record<string, unknown>[] = [];
    const pages: CacheHints[] = [];
    for (const upstream of this.#upstreams) {
      // An upstream that is down has nothing to list; list_changed announces it when it is back.
      if (!upstream.available) continue;
      // Nor has one that never offered this kind of thing (`prompts/list` needs `prompts`, …).
      if (!this.#offers(upstream, method)) continue;
      const own: Result[] = [];
      const items = await collectPages(async (params) => {
        const page = await this.#forward(upstream, method, params, ctx);
        pages.push(page as CacheHints);
        own.push(page);
        return page;
      }, key);
      all.push(...(await reviewed(items, upstream, own)));
    }
    return this.#privately(method, this.#withPinNotes({ [key]: all, ...gatheredHints(pages) }, changed));
  }

  /**
   * A list filtered per caller is that caller's: on the 2026-07-28 wire it says
   * `cacheScope: "private"`, so no shared cache hands it to another.
   */
  #privately(method: string, result: Result): Result {
    if (!this.#options.access || FILTERED_LISTS[method] === undefined || !isStatelessEra(this.server))
      return result;
    return { ...result, cacheScope: 'private' };
  }

  /** The caller as access rules see it; undefined without a policy. */
  #principal(ctx: ServerContext): AccessPrincipal | undefined {
    const policy = this.#options.access;
    return policy ? accessPrincipalOf(ctx.http?.authInfo, policy.anonymousTier) : undefined;
  }

  /**
   * What the policy says of the names an item of `upstream` goes by for this
   * caller: the first refusal among them, else allowed; undefined without a policy.
   */
  #decide(ctx: ServerContext, upstream: string, names: readonly string[]): AccessDecision | undefined {
    const policy = this.#options.access;
    const principal = this.#principal(ctx);
    if (!policy || !principal) return undefined;
    let decision: AccessDecision | undefined;
    for (const name of names) {
      decision = policy.decide(principal, upstream, name);
      if (!decision.allowed) return decision;
    }
    return decision;
  }

  /** The names a URI goes by for rules: itself (a skill's file its skill's name), and where it lands. */
  #uriNames(uri: string): string[] {
    return uriRuleNames(uri);
  }

  /**
   * Refuses, before the upstream is asked, what the caller may not use:
   * hidden, answered as `unknown` answers what no upstream has; allowed at a
   * higher tier, UPGRADE_REQUIRED with the upgrade hint naming that tier.
   */
  #admit(
    ctx: ServerContext,
    upstream: string,
    names: readonly string[],
    called: string,
    unknown: () => unknown,
  ): void {
    const decision = this.#decide(ctx, upstream, names);
    if (!decision || decision.allowed) return;
    const tier = decision.upgradeTier;
    if (tier === undefined) throw unknown();
    const reason = `${called} is available from the ${tier} tier`;
    throw new EnvelopeError('UPGRADE_REQUIRED', reason, {
      feature: called,
      tier,
      upgrade_hints: [{ feature: called, tier, reason }],
    });
  }

  /** Admits a URI of an upstream (see `#admit`), refused as an unknown resource. */
  #admitUri(ctx: ServerContext, upstream: string, uri: unknown, called: unknown = uri): void {
    if (typeof uri !== 'string') return;
    const named = String(called);
    this.#admit(ctx, upstream, this.#uriNames(uri), named, () => notFound(`Unknown resource: ${named}`));
  }

  /**
   * One upstream's items of a list, checked against their pins (a changed one
   * is noted in `changed`, and left out in `enforce`), then renamed.
   */
  #reviewed(
    method: string,
    items: Record<string, unknown>[],
    upstream: Upstream,
    changed: Record<string, unknown>[],
    rename: (item: Record<string, unknown>, upstream: Upstream) => Record<string, unknown>,
    signed: SignatureVerdict | undefined,
  ): Record<string, unknown>[] {
    const pins = this.#options.pins;
    const kind = kindOfList(method);
    if (!pins || !kind || pins.mode(upstream.name) === 'off')
      return items.map((item) => rename(item, upstream));
    const review = pins.review(upstream, kind, items, signed);
    for (const change of review.changes)
      changed.push(changeMeta(change, this.#clientName(upstream, change), pins.mode(upstream.name)));
    return review.items.map((item) => rename(item, upstream));
  }

  /** The signature verdict on a signing upstream's tools/list pages (pinning/signature.ts). */
  async #signature(
    method: string,
    upstream: Upstream,
    pages: readonly Result[],
  ): Promise<SignatureVerdict | undefined> {
    const pins = this.#options.pins;
    if (method !== 'tools/list' || !pins?.signs(upstream.name)) return undefined;
    return pins.verifyPages(upstream, pages as Record<string, unknown>[]);
  }

  /** A changed definition's name as clients know it (a template's URI template namespaced like its URIs). */
  #clientName(upstream: Upstream, change: PinChange): string {
    if (!this.#multi) return change.name;
    return change.kind === 'resource-template'
      ? String(this.#uriOut(upstream, change.name))
      : namespacedName(upstream.name, change.name);
  }

  /** A list result that names the definitions found changed (never removing what the upstream's `_meta` held). */
  #withPinNotes(result: Result, changed: readonly Record<string, unknown>[]): Result {
    if (changed.length === 0) return result;
    const meta = (result as { _meta?: Record<string, unknown> })._meta;
    return { ...result, _meta: { ...meta, [PINS_META_KEY]: { changed } } };
  }

  /** Whether an upstream offers what a list method lists (its capability, or the skills extension). */
  #offers(upstream: Upstream, method: string): boolean {
    if (method === SKILLS_LIST)
      return this.#extensionsOf(upstream).includes('io.modelcontextprotocol/skills');
    if (method === 'tasks/list') return upstream.capabilities.tasks !== undefined;
    const kind = method.split('/')[0] as keyof ServerCapabilities;
    return Boolean(upstream.capabilities[kind]);
  }

  #extensionsOf(upstream: Upstream): string[] {
    const caps = upstream.capabilities as { extensions?: unknown; experimental?: unknown };
    const keys = (value: unknown) =>
      typeof value === 'object' && value !== null ? Object.keys(value as object) : [];
    return [...keys(caps.extensions), ...keys(caps.experimental)];
  }

  #prefixed(item: Record<string, unknown>, upstream: Upstream): Record<string, unknown> {
    if (!this.#multi) return item;
    const named = { ...item, name: namespacedName(upstream.name, String(item.name)) };
    // An MCP App's tool names its `ui://` resource, which clients read by the namespaced URI.
    const meta = item._meta as { ui?: { resourceUri?: unknown } } | undefined;
    if (typeof meta?.ui?.resourceUri !== 'string') return named;
    return {
      ...named,
      _meta: { ...meta, ui: { ...meta.ui, resourceUri: this.#uriOut(upstream, meta.ui.resourceUri) } },
    };
  }

  /** Where a request naming a URI goes (subscriptions, completions): its upstream, else the first with resources. */
  #routeUri(uri: unknown): { upstream: Upstream; uri: unknown } {
    return this.#resolveUri(uri) ?? { upstream: this.#resourceHolders()[0] ?? this.#first(), uri };
  }

  /**
   * Notes which upstream had a URI a read found. Reads can name any number of
   * URIs (templates), so the oldest note goes once there are too many; a URI
   * no longer noted is only asked around again.
   */
  #remember(uri: string, upstream: Upstream): void {
    if (this.#resourceOwners.size >= MAX_REMEMBERED_RESOURCES) {
      const oldest = this.#resourceOwners.keys().next().value;
      if (oldest !== undefined) this.#resourceOwners.delete(oldest);
    }
    this.#resourceOwners.set(uri, upstream);
  }

  /** Notes the upstream a list named a URI of, unless one earlier in the configuration did. */
  #ownFirst(uri: string, upstream: Upstream): void {
    const noted = this.#resourceOwners.get(uri);
    if (noted && this.#upstreams.indexOf(noted) <= this.#upstreams.indexOf(upstream)) return;
    this.#resourceOwners.set(uri, upstream);
  }

  /** The upstreams that serve resources, in configuration order. */
  #resourceHolders(): Upstream[] {
    return this.#upstreams.filter((upstream) => upstream.available && upstream.capabilities.resources);
  }

  /**
   * Reads a resource. A URI no list has named yet (one from a template, or
   * from before a restart) is asked of each upstream that serves resources in
   * turn; the first that has it is remembered as its owner.
   */
  async #read(params: Record<string, unknown> | undefined, ctx: ServerContext): Promise<Result> {
    const uri = params?.uri;
    if (this.#options.ownResources?.owns(uri)) {
      const principal = ctx.http?.authInfo?.extra?.principal;
      return this.#options.ownResources.read(uri, typeof principal === 'string' ? principal : undefined);
    }
    const resolved = this.#resolveUri(uri);
    if (resolved) this.#admitUri(ctx, resolved.upstream.name, resolved.uri, uri);
    // Asked around: only the upstreams whose resource the caller may read are asked.
    const candidates = resolved ? [resolved.upstream] : this.#readable(ctx, uri);
    const sent = resolved ? { ...params, uri: resolved.uri } : params;
    let firstError: unknown;
    for (const upstream of candidates) {
      try {
        const result = await this.#forward(upstream, 'resources/read', sent, ctx);
        if (this.#multi && typeof uri === 'string' && !resolved) this.#remember(uri, upstream);
        // Asked by its namespaced URI: the contents carry the URI they were asked by.
        if (resolved && resolved.uri !== uri) return this.#contentsOut(upstream, result);
        return result;
      } catch (error) {
        // Only the upstream's own refusal moves on to the next; a cancelled request stops here.
        if (!(error instanceof ProtocolError) || ctx.mcpReq.signal.aborted) throw error;
        firstError ??= error;
      }
    }
    throw firstError ?? notFound(`Unknown resource: ${String(uri)}`);
  }

  /**
   * The upstreams serving resources that the caller may read `uri` of; none
   * allowed, the refusal of the first (an upgrade hint, or unknown).
   */
  #readable(ctx: ServerContext, uri: unknown): Upstream[] {
    const holders = this.#resourceHolders();
    if (!this.#options.access || typeof uri !== 'string') return holders;
    const allowed = holders.filter(
      (upstream) => this.#decide(ctx, upstream.name, this.#uriNames(uri))?.allowed !== false,
    );
    if (allowed.length === 0 && holders[0]) this.#admitUri(ctx, holders[0].name, uri);
    return allowed;
  }

  /** tools/list: each tool's own entry, with the output schema enforcement advertises for it. */
  readonly #toolsList = this.#handle((params, ctx) =>
    this.#list('tools/list', 'tools', params, ctx, (item, upstream) => {
      const tool = this.#prefixed(item, upstream);
      const schema = this.#options.outputSchemaFor?.(tool as unknown as Tool, upstream.name);
      if (schema === undefined) return tool;
      // The tool's own outputSchema (the payload's shape) stays listed, beside the envelope's.
      const own = (tool as { outputSchema?: unknown }).outputSchema;
      if (own === undefined) return { ...tool, outputSchema: schema };
      const meta = (tool as { _meta?: Record<string, unknown> })._meta;
      return { ...tool, outputSchema: schema, _meta: { ...meta, [RESULT_SCHEMA_META_KEY]: own } };
    }),
  );

  /** tools/call, through the tool-call hook (enforcement, the tier gate, the call log). */
  readonly #toolsCall = this.#handle(async (params, ctx) => {
    const { upstream, name } = this.#split(params?.name);
    const handler = this.#options.toolCallHandler ?? passthroughToolCalls;
    const invoke: InvokeUpstream = async (call) => {
      const result = await this.#forward(upstream, 'tools/call', { ...params, ...call, name }, ctx);
      // A task handle names the task as clients will ask for it.
      if (this.#multi && isCreateTaskResult(result))
        return {
          ...result,
          task: this.#taskOut(upstream, (result as { task: unknown }).task),
        } as unknown as CallToolResult;
      return result as CallToolResult;
    };
    // A tool hidden from the caller is not looked up (nor its pin checked): the hook's pipeline
    // answers it as an unknown tool before anything else.
    const access = this.#decide(ctx, upstream.name, [name]);
    const hidden = access !== undefined && !access.allowed && access.upgradeTier === undefined;
    const pins = this.#options.pins;
    const pinned = pins !== undefined && pins.mode(upstream.name) !== 'off' && !hidden;
    const described =
      (handler === passthroughToolCalls && !pinned) || hidden
        ? {}
        : await this.#describe(upstream, name, handler);
    // Checked before anything goes upstream: in enforce, a changed tool is refused here. A tool
    // the upstream does not list is the pipeline's NOT_FOUND, and one that is down its failure;
    // in passthrough, where the upstream would be asked anyway, enforce refuses it here.
    const unchecked = !described.tool && (described.unavailable || handler !== passthroughToolCalls);
    const definitionDigest =
      pinned && !unchecked
        ? await pins.checkCall(
            upstream,
            described.tool,
            () => upstream.listedTools(),
            String(params?.name),
            () => verifySignedList(pins, upstream),
          )
        : undefined;
    const protocolVersion = this.server.getNegotiatedProtocolVersion();
    return handler({ ...(params as CallToolParams), name }, invoke, {
      upstream: upstream.name,
      signal: ctx.mcpReq.signal,
      ...described,
      ...(definitionDigest ? { definitionDigest } : {}),
      ...(ctx.http?.authInfo ? { authInfo: ctx.http.authInfo } : {}),
      ...(upstream.serverInfo ? { serverInfo: upstream.serverInfo } : {}),
      request: {
        id: ctx.mcpReq.id,
        ...(ctx.sessionId === undefined ? {} : { sessionId: ctx.sessionId }),
        ...(protocolVersion === undefined ? {} : { protocolVersion }),
      },
    });
  });

  /**
   * The tool's definition for a call. In passthrough the upstream answers for
   * its own tools: one that cannot list them is still called (its pin check
   * then finds no definition).
   */
  async #describe(
    upstream: Upstream,
    name: string,
    handler: ToolCallHandler,
  ): Promise<Awaited<ReturnType<Upstream['describeForCall']>>> {
    if (handler !== passthroughToolCalls) return upstream.describeForCall(name);
    return upstream.describeForCall(name).catch(() => ({}));
  }

  #registerHandlers(capabilities: ServerCapabilities): void {
    const server = this.server;
    if (capabilities.tools) {
      server.setRequestHandler('tools/list', this.#toolsList);
      server.setRequestHandler('tools/call', this.#toolsCall);
    }
    if (capabilities.prompts) {
      server.setRequestHandler(
        'prompts/list',
        this.#handle((params, ctx) =>
          this.#list('prompts/list', 'prompts', params, ctx, (item, upstream) =>
            this.#prefixed(item, upstream),
          ),
        ),
      );
      server.setRequestHandler(
        'prompts/get',
        this.#handle((params, ctx) => {
          const { upstream, name } = this.#split(params?.name);
          this.#admitPrompt(ctx, upstream, name, params?.name);
          return this.#forward(upstream, 'prompts/get', { ...params, name }, ctx);
        }),
      );
    }
    if (capabilities.resources) {
      for (const [method, { key, member }] of Object.entries(URI_LISTS)) {
        server.setRequestHandler(
          method as keyof typeof URI_LISTS,
          this.#handle((params, ctx) =>
            this.#list(method, key, params, ctx, (item, upstream) => {
              // A URI a list named is its upstream's, in the form it has there too (a tool's link).
              // Listed by several as it is: the first in configuration order has it.
              if (member === 'uri' && this.#multi && typeof item.uri === 'string')
                this.#ownFirst(item.uri, upstream);
              return this.#multi ? { ...item, [member]: this.#uriOut(upstream, item[member]) } : item;
            }),
          ),
        );
      }
      server.setRequestHandler(
        'resources/read',
        this.#handle((params, ctx) => this.#read(params, ctx)),
      );
      for (const method of ['resources/subscribe', 'resources/unsubscribe'] as const) {
        server.setRequestHandler(
          method,
          this.#handle((params, ctx) => {
            const { upstream, uri } = this.#routeUri(params?.uri);
            this.#admitUri(ctx, upstream.name, uri);
            return this.#forward(upstream, method, { ...params, uri }, ctx);
          }),
        );
      }
    }
    if (capabilities.completions) {
      server.setRequestHandler(
        'completion/complete',
        this.#handle((params, ctx) => {
          const ref = params?.ref as { type?: string; name?: string; uri?: string } | undefined;
          if (ref?.type === 'ref/prompt') {
            const { upstream, name } = this.#split(ref.name);
            this.#admitPrompt(ctx, upstream, name, ref.name);
            return this.#forward(upstream, 'completion/complete', { ...params, ref: { ...ref, name } }, ctx);
          }
          const { upstream, uri } = this.#routeUri(ref?.uri);
          this.#admitUri(ctx, upstream.name, uri);
          return this.#forward(upstream, 'completion/complete', { ...params, ref: { ...ref, uri } }, ctx);
        }),
      );
    }
    if (capabilities.logging) {
      server.setRequestHandler(
        'logging/setLevel',
        this.#handle(async (params, ctx) => {
          for (const upstream of this.#upstreams)
            if (upstream.available && upstream.capabilities.logging)
              await this.#forward(upstream, 'logging/setLevel', params, ctx);
          return {};
        }),
      );
    }
    // Methods outside the spec (or newer than this build) go to the single upstream as they are.
    // The fallback is no registered handler, so the SDK does not wrap it: its requests are traced here.
    server.fallbackRequestHandler = (server as RelayServer).traced(
      async (request: JSONRPCRequest, ctx: ServerContext) => {
        // An upstream that answers tools without declaring them is enforced all the same: what it
        // declares must not decide whether its calls are gated, wrapped and logged.
        if (request.method === 'tools/call') return this.#toolsCall(request, ctx);
        if (request.method === 'tools/list') return this.#toolsList(request, ctx);
        if (this.#multi) return this.#other(request.method)(request, ctx);
        // One upstream's skills pass as they are, checked against their pins and filtered for the caller.
        if (request.method === SKILLS_LIST && (this.#options.pins || this.#options.access))
          return this.#singleSkills(request, ctx);
        if ((request.method === SKILLS_GET || request.method === DIRECTORY_READ) && this.#options.access)
          return this.#singleSkillRead(request, ctx);
        try {
          return await this.#forward(this.#first(), request.method, request.params, ctx);
        } catch (error) {
          throw toProtocolError(error, this.server.getNegotiatedProtocolVersion());
        }
      },
    );
    server.fallbackNotificationHandler = async (notification: Notification) => {
      // A shared upstream that answers with a request of its own (roots/list after
      // roots/list_changed) asks the client that spoke last.
      this.downstream.touch();
      for (const upstream of this.#upstreams) await upstream.notify(notification);
    };
  }

  readonly #singleSkills = this.#handle((params, ctx) =>
    this.#list(SKILLS_LIST, 'skills', params, ctx, (skill) => skill),
  );

  /** One upstream's skills/get or directory read, admitted for the caller first. */
  #singleSkillRead(request: JSONRPCRequest, ctx: ServerContext): Promise<Result> {
    return this.#handle((params, ctx) => {
      this.#admitUri(ctx, this.#first().name, params?.uri);
      return this.#forward(this.#first(), request.method, params, ctx);
    })(request, ctx);
  }

  /** Admits a prompt (see `#admit`), refused as a name no upstream has. */
  #admitPrompt(ctx: ServerContext, upstream: Upstream, name: string, called: unknown): void {
    this.#admit(ctx, upstream.name, [name], String(called), () =>
      notFound(`Unknown name: ${String(called)}`),
    );
  }

  /**
   * Methods outside the core set, with several upstreams: skills and their
   * directories by URI, tasks by id, lists of them gathered; any other method
   * goes to the upstream it is namespaced for (`<upstream>__<method>`), else to
   * the one upstream whose declared extensions share its vendor prefix (the
   * part before the first `/`), else to the one that declares any extension.
   */
  #other(method: string) {
    return this.#handle(async (params, ctx) => {
      if (method === SKILLS_LIST) {
        return this.#list(
          method,
          'skills',
          params,
          ctx,
          (skill, upstream) => this.#skillOut(upstream, skill) as Record<string, unknown>,
        );
      }
      if (method === 'tasks/list') {
        return this.#list(
          method,
          'tasks',
          params,
          ctx,
          (task, upstream) => this.#taskOut(upstream, task) as Record<string, unknown>,
        );
      }
      if (method === SKILLS_GET || method === DIRECTORY_READ) {
        const resolved = this.#resolveUri(params?.uri);
        if (!resolved) throw notFound(`Unknown resource: ${String(params?.uri)}`);
        this.#admitUri(ctx, resolved.upstream.name, resolved.uri, params?.uri);
        // Skills results carry caching hints on every revision; an upstream of the older one gives none.
        const result = {
          ...UNCACHED,
          ...(await this.#forward(resolved.upstream, method, { ...params, uri: resolved.uri }, ctx)),
        };
        if (method === SKILLS_GET)
          return {
            ...result,
            skill: this.#skillOut(resolved.upstream, (result as { skill?: unknown }).skill),
          };
        const children = (result as { resources?: unknown }).resources;
        if (!Array.isArray(children)) return result;
        return {
          ...result,
          resources: children.map((child) => ({
            ...child,
            uri: this.#uriOut(resolved.upstream, (child as { uri?: unknown }).uri),
          })),
        };
      }
      if (TASK_METHODS.has(method)) {
        const { upstream, name: taskId } = this.#split(params?.taskId);
        const result = await this.#forward(upstream, method, { ...params, taskId }, ctx);
        if (method !== 'tasks/result') return this.#taskOut(upstream, result) as Result;
        // The result names its task in `_meta` too.
        const meta = (result as { _meta?: Record<string, unknown> })._meta;
        const related = meta?.[RELATED_TASK_META_KEY];
        if (!related) return result;
        return { ...result, _meta: { ...meta, [RELATED_TASK_META_KEY]: this.#taskOut(upstream, related) } };
      }
      const named = splitName(method, this.#names);
      if (named) return this.#forward(this.#byName.get(named.upstream) as Upstream, named.name, params, ctx);
      return this.#forward(this.#extensionOwner(method), method, params, ctx);
    }) as (request: { params?: unknown }, ctx: ServerContext) => Promise<Result>;
  }

  /** The upstream an extension method goes to (see `#other`). */
  #extensionOwner(method: string): Upstream {
    const vendor = method.split('/')[0];
    const declaring = this.#upstreams.filter((upstream) => this.#extensionsOf(upstream).length > 0);
    const matching = declaring.filter((upstream) =>
      this.#extensionsOf(upstream).some((id) => id.split('/')[0] === vendor),
    );
    const [only] = matching.length > 0 ? matching : declaring;
    if (only && (matching.length === 1 || (matching.length === 0 && declaring.length === 1))) return only;
    throw toProtocolError(
      new EnvelopeError(
        'NOT_FOUND',
        `Which upstream serves ${method} is not known: call it as <upstream>${NAMESPACE_SEPARATOR}${method}`,
        { method, upstreams: [...this.#names] },
      ),
    );
  }

  async close(): Promise<void> {
    if (this.#ownsDownstream) this.downstream.close();
    await this.server.close().catch(() => {});
  }
}
