import type { IncomingMessage, ServerResponse } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { AuthInfo, McpHttpHandler } from '@modelcontextprotocol/server';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { STATELESS_WIRE_REVISION } from '../../../errors/codes.ts';
import { EnvelopeError } from '../../../errors/index.ts';
import { sendJson } from '../../http/reply.ts';
import { closeWhenUnread } from '../../http/unread-bound.ts';
import { errorResponse, requestIdOf } from '../../jsonrpc/messages.ts';
import { type ClientIdentity, capabilityGroup, requestingClient } from '../../relay/client-identity.ts';
import { Downstream, listenSink } from '../../relay/downstream.ts';
import { listenedResources, MAX_OPEN_LISTENS, ResourceListens, tooManyListens } from '../../relay/listen.ts';
import { Relay } from '../../relay/relay.ts';
import { noneStarted, type UpstreamFleet } from '../../relay/upstream-fleet.ts';
import type { PoolLease, SharedSet, UpstreamPool } from '../../relay/upstream-pool.ts';
import type { Upstream } from '../../upstreams/upstream.ts';
import { withWireStatus } from './wire-status.ts';

/**
 * Stateless 2026-07-28 HTTP. Each request is served by a relay of its own,
 * over the upstream connections of its principal (the bearer token), which its
 * 2025-era sessions share too (upstream-pool.ts). The upstream cannot say which
 * downstream request its server-to-client requests and log messages belong
 * to, so the gateway attributes them to the principal's newest call in flight;
 * keeping connections per principal means a guess can only ever land with the
 * same principal, never with another's client. Anonymous requests carry
 * nothing that tells their clients apart, so they share one set that never
 * guesses: an upstream message goes to a call only while it is the one
 * running there, and a server-to-client request is refused while several are
 * (`exclusive` in downstream.ts); their requestState is bound to their address.
 * Each principal also has its own listen streams, so change notifications
 * stay within it too.
 */

export interface StatelessHttpOptions {
  /** The gateway's upstreams: each principal's own ones are started over it. */
  fleet: UpstreamFleet;
  /** Where each principal's shared upstreams come from. */
  pool: UpstreamPool;
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
  close(): Promise<void>;
}

/** A principal's stateless side, bound to the shared set it was built over. */
interface Opened {
  set: SharedSet;
  session: Promise<PrincipalSession>;
}

/** A request refused before it is served gets its JSON-RPC error in-band, as the SDK's own refusals do. */
function refuse(res: ServerResponse, body: unknown, error: EnvelopeError): void {
  sendJson(res, 200, errorResponse(requestIdOf(body) ?? null, error, undefined, STATELESS_WIRE_REVISION));
}

export class StatelessHttp {
  readonly #options: StatelessHttpOptions;
  readonly #sessions = new Map<string, Opened>();

  constructor(options: StatelessHttpOptions) {
    this.#options = options;
  }

  /** Serves one 2026-07-28 request for its principal (`authInfo.clientId`, the token's id). */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo?: AuthInfo): Promise<void> {
    const principal = authInfo?.clientId ?? '';
    // Clients of a principal that declared the same capabilities share upstreams (client-identity.ts).
    const client = requestingClient(body);
    const group = `${principal}\u0000${capabilityGroup(client)}`;
    let lease: PoolLease | undefined;
    let session: PrincipalSession;
    try {
      lease = await this.#options.pool.acquire(principal, { client });
      session = await this.#session(group, lease.set, principal === '', client);
    } catch (error) {
      lease?.release();
      const failure =
        error instanceof EnvelopeError ? error : new EnvelopeError('ADAPTER.EXECUTION.FAILED', String(error));
      sendJson(
        res,
        502,
        errorResponse(requestIdOf(body) ?? null, failure, undefined, STATELESS_WIRE_REVISION),
      );
      return;
    }
    // The principal's upstreams stay while a request (a listen stream included) is being served.
    const held = lease;
    res.once('close', () => held.release());
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
    closeWhenUnread(res, (message) => this.#options.onError(new Error(message)));
    await session.serve(Object.assign(req, { auth: authInfo }), res, body);
  }

  async close(): Promise<void> {
    const opened = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(opened.map(async ({ session }) => (await session.catch(() => undefined))?.close()));
  }

  /** A principal's stateless side for one capability group, over its current shared set, built on first use. */
  #session(
    group: string,
    set: SharedSet,
    anonymous: boolean,
    client: ClientIdentity,
  ): Promise<PrincipalSession> {
    const existing = this.#sessions.get(group);
    if (existing?.set === set) return existing.session;
    const session = this.#open(set, anonymous, client).catch((error: unknown) => {
      if (this.#sessions.get(group)?.session === session) this.#sessions.delete(group);
      throw error;
    });
    this.#sessions.set(group, { set, session });
    // A set closes once idle: what was built over it goes too, and the next request builds anew.
    set.onClosed(() => {
      if (this.#sessions.get(group)?.session === session) this.#sessions.delete(group);
      void session.then(
        (opened) => opened.close(),
        () => {},
      );
    });
    return session;
  }

  async #open(set: SharedSet, anonymous: boolean, client: ClientIdentity): Promise<PrincipalSession> {
    const { fleet, maxBodyBytes, onError } = this.#options;
    const gateway = fleet.options;
    // Requests of several clients share these: they are told what the clients declared, not who they are.
    const own = await fleet.startOwn(client, false);
    const upstreams = fleet.arrange(set.upstreams, own);
    if (upstreams.every((upstream) => !upstream.available)) {
      await Promise.all(own.map((upstream) => upstream.close()));
      throw noneStarted(upstreams);
    }
    const capabilities = fleet.advertisedCapabilities(upstreams);
    const downstream = new Downstream(upstreams, {
      maxParked: gateway.maxParkedCalls,
      shared: set.shared,
      exclusive: anonymous,
    });
    // Each request has a relay of its own: where the resources are is kept across them.
    const resourceOwners = new Map<string, Upstream>();
    const handler = createMcpHandler(
      () => new Relay(upstreams, { ...gateway, capabilities, downstream, resourceOwners }).server,
      {
        legacy: 'reject',
        maxRequestBodySize: maxBodyBytes,
        // The gateway counts listen streams itself, as their connections close. The SDK can
        // keep counting a closed one until its next keep-alive frame (up to 15 s: the request's
        // signal stops following the connection once the Request is garbage-collected), which
        // would refuse a client that closed a stream and opened another; its limit only backs ours.
        maxSubscriptions: 2 * MAX_OPEN_LISTENS,
        onerror: onError,
      },
    );
    downstream.setSink(listenSink(handler.notify));
    fleet.reportDown(upstreams);
    const stops = [
      ...own.map((upstream) => fleet.watch(upstream)),
      // An upstream back from being down: its lists changed, which listen streams are told.
      ...upstreams.map((upstream) =>
        upstream.onRecovered(() => {
          if (upstream.capabilities.tools) handler.notify.toolsChanged();
          if (upstream.capabilities.prompts) handler.notify.promptsChanged();
          if (upstream.capabilities.resources) handler.notify.resourcesChanged();
        }),
      ),
    ];
    const listens = new ResourceListens(upstreams, onError, (upstream, method, params) =>
      downstream.request(upstream, method, params),
    );
    let closed: Promise<void> | undefined;
    return {
      upstreams,
      downstream,
      listens,
      handler,
      serve: toNodeHandler(withWireStatus(handler), { onerror: onError }),
      openListens: 0,
      close() {
        closed ??= (async () => {
          await handler.close().catch(() => {});
          downstream.close();
          for (const stop of stops) stop();
          await Promise.all(own.map((upstream) => upstream.close()));
        })();
        return closed;
      },
    };
  }
}
