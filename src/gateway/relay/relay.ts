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
  Server,
} from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../errors/index.ts';
import { RESULT_SCHEMA_META_KEY } from '../../mcp/tool-result.ts';
import { PACKAGE_VERSION } from '../../version.ts';
import { toProtocolError } from '../jsonrpc/messages.ts';
import { collectPages } from '../jsonrpc/pagination.ts';
import type { ClientIdentity, Upstream } from '../upstreams/upstream.ts';
import { connectionSink, Downstream, isStatelessEra } from './downstream.ts';
import { NAMESPACE_SEPARATOR } from './namespace.ts';
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
}

/** Resources the gateway answers for itself. */
export interface OwnResources {
  owns(uri: unknown): uri is string;
  /** `caller`: the principal a bearer token made of the client, when one did. */
  read(uri: string, caller?: string): Promise<Result>;
}

/** Resource URIs found by reads whose upstream is kept in mind (lists add theirs besides). */
const MAX_REMEMBERED_RESOURCES = 10_000;

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
  readonly #options: RelayOptions;
  readonly #resourceOwners: Map<string, Upstream>;

  constructor(upstreams: readonly Upstream[], options: RelayOptions = {}) {
    if (upstreams.length === 0) throw new EnvelopeError('USAGE_ERROR', 'A relay needs at least one upstream');
    this.#upstreams = upstreams;
    this.#byName = new Map(upstreams.map((upstream) => [upstream.name, upstream]));
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
    this.server = new Server(info, {
      capabilities,
      instructions: single?.instructions,
      // A 2026-07-28 retry's requestState is checked before any handler sees it; 2025-era
      // requests have no rounds, so whatever they carry there stays theirs, as before.
      requestState: {
        verify: (state, ctx) =>
          isStatelessEra(this.server) ? this.downstream.rounds.verify(state, ctx) : undefined,
      },
    });
    this.#registerHandlers(capabilities);
    if (this.#ownsDownstream) this.downstream.setSink(connectionSink(this.server));
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
    return this.downstream.forward(upstream, method, params, ctx, this.#client(ctx));
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
    const at = name.indexOf(NAMESPACE_SEPARATOR);
    const upstream = at > 0 ? this.#byName.get(name.slice(0, at)) : undefined;
    if (!upstream) throw notFound(`Unknown name: ${name}`);
    return { upstream, name: name.slice(at + NAMESPACE_SEPARATOR.length) };
  }

  /** Lists across all upstreams; a single upstream's page and cursor pass through unchanged. */
  async #list(
    method: string,
    key: 'tools' | 'prompts' | 'resources' | 'resourceTemplates',
    params: Record<string, unknown> | undefined,
    ctx: ServerContext,
    rename: (item: Record<string, unknown>, upstream: Upstream) => Record<string, unknown>,
  ): Promise<Result> {
    if (!this.#multi) {
      const upstream = this.#first();
      // Resources advertised for the gateway's own alone: the upstream has none to list.
      if (this.#options.ownResources && method.startsWith('resources/') && !upstream.capabilities.resources)
        return { [key]: [] };
      const page = await this.#forward(upstream, method, params, ctx);
      const items = page[key];
      if (!Array.isArray(items)) return page;
      return { ...page, [key]: items.map((item) => rename(item as Record<string, unknown>, upstream)) };
    }
    const all: Record<string, unknown>[] = [];
    for (const upstream of this.#upstreams) {
      // An upstream that is down has nothing to list; list_changed announces it when it is back.
      if (!upstream.available) continue;
      // Nor has one that never offered this kind of thing (`prompts/list` needs `prompts`, …).
      const kind = method.split('/')[0] as keyof ServerCapabilities;
      if (!upstream.capabilities[kind]) continue;
      const items = await collectPages((params) => this.#forward(upstream, method, params, ctx), key);
      for (const item of items) all.push(rename(item as Record<string, unknown>, upstream));
    }
    return { [key]: all };
  }

  #prefixed(item: Record<string, unknown>, upstream: Upstream): Record<string, unknown> {
    return this.#multi
      ? { ...item, name: `${upstream.name}${NAMESPACE_SEPARATOR}${String(item.name)}` }
      : item;
  }

  #resourceUpstream(uri: unknown): Upstream {
    if (!this.#multi) return this.#first();
    return (
      (typeof uri === 'string' ? this.#resourceOwners.get(uri) : undefined) ??
      this.#resourceHolders()[0] ??
      this.#first()
    );
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
    const known = typeof uri === 'string' ? this.#resourceOwners.get(uri) : undefined;
    const candidates = !this.#multi || known ? [this.#resourceUpstream(uri)] : this.#resourceHolders();
    let firstError: unknown;
    for (const upstream of candidates) {
      try {
        const result = await this.#forward(upstream, 'resources/read', params, ctx);
        if (this.#multi && typeof uri === 'string' && !known) this.#remember(uri, upstream);
        return result;
      } catch (error) {
        // Only the upstream's own refusal moves on to the next; a cancelled request stops here.
        if (!(error instanceof ProtocolError) || ctx.mcpReq.signal.aborted) throw error;
        firstError ??= error;
      }
    }
    throw firstError ?? notFound(`Unknown resource: ${String(uri)}`);
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
    const invoke: InvokeUpstream = async (call) =>
      (await this.#forward(upstream, 'tools/call', { ...params, ...call, name }, ctx)) as CallToolResult;
    const described = handler === passthroughToolCalls ? {} : await upstream.describeForCall(name);
    return handler({ ...(params as CallToolParams), name }, invoke, {
      upstream: upstream.name,
      signal: ctx.mcpReq.signal,
      ...described,
      ...(ctx.http?.authInfo ? { authInfo: ctx.http.authInfo } : {}),
      ...(upstream.serverInfo ? { serverInfo: upstream.serverInfo } : {}),
    });
  });

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
          return this.#forward(upstream, 'prompts/get', { ...params, name }, ctx);
        }),
      );
    }
    if (capabilities.resources) {
      const own = (item: Record<string, unknown>, upstream: Upstream) => {
        if (typeof item.uri === 'string') this.#resourceOwners.set(item.uri, upstream);
        return item;
      };
      server.setRequestHandler(
        'resources/list',
        this.#handle((params, ctx) => this.#list('resources/list', 'resources', params, ctx, own)),
      );
      server.setRequestHandler(
        'resources/templates/list',
        this.#handle((params, ctx) =>
          this.#list('resources/templates/list', 'resourceTemplates', params, ctx, (item) => item),
        ),
      );
      server.setRequestHandler(
        'resources/read',
        this.#handle((params, ctx) => this.#read(params, ctx)),
      );
      for (const method of ['resources/subscribe', 'resources/unsubscribe'] as const) {
        server.setRequestHandler(
          method,
          this.#handle((params, ctx) =>
            this.#forward(this.#resourceUpstream(params?.uri), method, params, ctx),
          ),
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
            return this.#forward(upstream, 'completion/complete', { ...params, ref: { ...ref, name } }, ctx);
          }
          return this.#forward(this.#resourceUpstream(ref?.uri), 'completion/complete', params, ctx);
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
    server.fallbackRequestHandler = async (request: JSONRPCRequest, ctx: ServerContext) => {
      // An upstream that answers tools without declaring them is enforced all the same: what it
      // declares must not decide whether its calls are gated, wrapped and logged.
      if (request.method === 'tools/call') return this.#toolsCall(request, ctx);
      if (request.method === 'tools/list') return this.#toolsList(request, ctx);
      try {
        return await this.#forward(this.#first(), request.method, request.params, ctx);
      } catch (error) {
        throw toProtocolError(error, this.server.getNegotiatedProtocolVersion());
      }
    };
    server.fallbackNotificationHandler = async (notification: Notification) => {
      // A shared upstream that answers with a request of its own (roots/list after
      // roots/list_changed) asks the client that spoke last.
      this.downstream.touch();
      for (const upstream of this.#upstreams) await upstream.notify(notification);
    };
  }

  async close(): Promise<void> {
    if (this.#ownsDownstream) this.downstream.close();
    await this.server.close().catch(() => {});
  }
}
