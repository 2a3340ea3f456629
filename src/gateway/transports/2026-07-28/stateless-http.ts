import type { IncomingMessage, ServerResponse } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { AuthInfo, McpHttpHandler } from '@modelcontextprotocol/server';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../../errors/index.ts';
import { sendJson } from '../../http/reply.ts';
import { connectUpstreams, type GatewayOptions, watchRecoveries } from '../../relay/client-session.ts';
import { Downstream, errorResponse, listenSink, requestIdOf } from '../../relay/downstream.ts';
import { listenedResources, MAX_OPEN_LISTENS, ResourceListens, tooManyListens } from '../../relay/listen.ts';
import { Relay } from '../../relay/relay.ts';
import { advertisedCapabilities } from '../../upstreams/availability.ts';
import type { Upstream } from '../../upstreams/upstream.ts';

/**
 * Stateless 2026-07-28 HTTP. Each request is served by a relay of its own,
 * over an upstream session shared by every request of the same principal (the
 * bearer token; anonymous callers share one). The upstream cannot say which
 * downstream request its server-to-client requests and log messages belong
 * to, so the gateway attributes them to the principal's newest call in
 * flight; keeping sessions per principal means a guess can only ever land
 * with the same principal, never with another's client. Each principal also
 * has its own listen streams, so change notifications stay within it too.
 */

export interface StatelessHttpOptions {
  gateway: GatewayOptions;
  maxBodyBytes: number;
  onError: (error: unknown) => void;
}

interface PrincipalSession {
  upstreams: readonly Upstream[];
  downstream: Downstream;
  listens: ResourceListens;
  handler: McpHttpHandler;
  serve: ReturnType<typeof toNodeHandler>;
  /** Listen streams open for this principal; the SDK's own refusal past its limit carries no canonical code. */
  openListens: number;
}

/** A request refused before it is served gets its JSON-RPC error in-band, as the SDK's own refusals do. */
function refuse(res: ServerResponse, body: unknown, error: EnvelopeError): void {
  sendJson(res, 200, errorResponse(requestIdOf(body) ?? null, error));
}

export class StatelessHttp {
  readonly #options: StatelessHttpOptions;
  readonly #sessions = new Map<string, Promise<PrincipalSession>>();

  constructor(options: StatelessHttpOptions) {
    this.#options = options;
  }

  /** Serves one 2026-07-28 request for its principal (`authInfo.clientId`, the token's id). */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo?: AuthInfo): Promise<void> {
    let session: PrincipalSession;
    try {
      session = await this.#session(authInfo?.clientId ?? '');
    } catch (error) {
      const failure =
        error instanceof EnvelopeError ? error : new EnvelopeError('ADAPTER.EXECUTION.FAILED', String(error));
      sendJson(res, 502, errorResponse(requestIdOf(body) ?? null, failure));
      return;
    }
    const listen = (body as { method?: unknown } | null)?.method === 'subscriptions/listen';
    if (listen && session.openListens >= MAX_OPEN_LISTENS) {
      refuse(res, body, tooManyListens());
      return;
    }
    let uris: string[] | undefined;
    try {
      uris = listenedResources(body);
      if (uris?.length) await session.listens.acquire(uris);
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error;
      refuse(res, body, error);
      return;
    }
    if (uris?.length) {
      const listened = uris;
      res.once('close', () => session.listens.release(listened));
    }
    if (listen) {
      session.openListens++;
      res.once('close', () => {
        session.openListens--;
      });
    }
    await session.serve(Object.assign(req, { auth: authInfo }), res, body);
  }

  async close(): Promise<void> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(
      sessions.map(async (pending) => {
        const session = await pending.catch(() => undefined);
        if (!session) return;
        await session.handler.close().catch(() => {});
        session.downstream.close();
        await Promise.all(session.upstreams.map((upstream) => upstream.close()));
      }),
    );
  }

  #session(principal: string): Promise<PrincipalSession> {
    let session = this.#sessions.get(principal);
    if (!session) {
      session = this.#open().catch((error: unknown) => {
        this.#sessions.delete(principal);
        throw error;
      });
      this.#sessions.set(principal, session);
    }
    return session;
  }

  async #open(): Promise<PrincipalSession> {
    const { gateway, maxBodyBytes, onError } = this.#options;
    const upstreams = await connectUpstreams(gateway);
    const capabilities = advertisedCapabilities(gateway, upstreams);
    const downstream = new Downstream(upstreams, { maxParked: gateway.maxParkedCalls });
    // Each request has a relay of its own: where the resources are is kept across them.
    const resourceOwners = new Map<string, Upstream>();
    const handler = createMcpHandler(
      () => new Relay(upstreams, { ...gateway, capabilities, downstream, resourceOwners }).server,
      {
        legacy: 'reject',
        maxRequestBodySize: maxBodyBytes,
        onerror: onError,
      },
    );
    downstream.setSink(listenSink(handler.notify));
    // An upstream back from being down: its lists changed, which listen streams are told.
    watchRecoveries(gateway, upstreams, (upstream) => {
      if (upstream.capabilities.tools) handler.notify.toolsChanged();
      if (upstream.capabilities.prompts) handler.notify.promptsChanged();
      if (upstream.capabilities.resources) handler.notify.resourcesChanged();
    });
    const listens = new ResourceListens(upstreams, onError);
    return {
      upstreams,
      downstream,
      listens,
      handler,
      serve: toNodeHandler(handler, { onerror: onError }),
      openListens: 0,
    };
  }
}
