import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { isJsonObject } from '../../../canonical/json-value.ts';
import { type ClientIdentity, initializingClient, requestingClient } from '../../relay/client-identity.ts';
import { type ClientSession, openClientSession, reopenForClient } from '../../relay/client-session.ts';
import { ListenWatchingTransport, ResourceListens } from '../../relay/listen.ts';
import type { UpstreamFleet } from '../../relay/upstream-fleet.ts';
import { FirstMessageHold } from './first-message.ts';
import { LineServerTransport } from './line-server-transport.ts';

export interface StdioGateway {
  /** The session serving the client: its own upstreams once its first message named it, those started ahead until then. */
  readonly session: ClientSession;
  /** Resolves when the downstream client closed stdin or stopped reading stdout (or close() was called). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Who a connection's first message says its client is: an `initialize`'s
 * params, or a 2026-07-28 request's `_meta`; undefined for anything else.
 */
function clientOf(first: JSONRPCMessage): ClientIdentity | undefined {
  const message = first as { method?: unknown; params?: unknown };
  if (message.method === 'initialize') return initializingClient(first);
  const params = isJsonObject(message.params) ? message.params : undefined;
  return typeof message.method === 'string' && isJsonObject(params?._meta)
    ? requestingClient(first)
    : undefined;
}

/**
 * Serves the relay on this process's own stdin/stdout, to either era: the SDK
 * pins the connection to the era its first message speaks. Only MCP messages
 * are written to stdout; everything else belongs on stderr.
 *
 * The upstreams are started ahead, told of no client, so that the operator
 * sees each one's state at once and a gateway none of whose upstreams starts
 * does not start. The client's first message then says what it declared and
 * who it is: the upstreams that are up are started again told exactly that
 * (an upstream lists tools by what its client can do, and learns the
 * client's name), in the client's era, before anything reaches the relay,
 * and those started ahead are closed; one that is down keeps retrying. A 2026-07-28 client of upstreams that all speak 2026-07-28 is told
 * per request and keeps them.
 */
export async function serveGatewayOnStdio(fleet: UpstreamFleet): Promise<StdioGateway> {
  let session = await openClientSession(fleet);
  let listens = new ResourceListens(session.upstreams);
  let closing = false;
  let markClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
  const decide = async (first: JSONRPCMessage) => {
    const client = clientOf(first);
    if (!client) return;
    if (client.era === 'modern' && session.upstreams.every((upstream) => upstream.modern)) return;
    // None of them starting told who the client is leaves it with those started ahead.
    const own = await reopenForClient(fleet, session, client).catch(() => undefined);
    if (!own) return;
    if (closing) return own.close();
    session = own;
    listens = new ResourceListens(own.upstreams);
  };
  // serveStdio answers subscriptions/listen itself; watching its input keeps the upstream subscribed.
  const transport = new ListenWatchingTransport(
    new FirstMessageHold(new LineServerTransport(), decide),
    () => listens,
  );
  const handle = serveStdio(() => session.relay.server, { transport, onerror: () => {} });
  process.stdin.once('end', () => markClosed());
  process.stdin.once('close', () => markClosed());
  // A client that stopped reading (EPIPE) is gone as surely as one that closed stdin.
  process.stdout.once('error', () => markClosed());
  process.stdout.once('close', () => markClosed());
  const close = async () => {
    closing = true;
    await handle.close().catch(() => {});
    await session.close();
    markClosed();
  };
  return {
    get session() {
      return session;
    },
    closed,
    close,
  };
}
