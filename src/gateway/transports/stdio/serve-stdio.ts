import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { type ClientSession, openClientSession } from '../../relay/client-session.ts';
import { ListenWatchingTransport, ResourceListens } from '../../relay/listen.ts';
import type { UpstreamFleet } from '../../relay/upstream-fleet.ts';
import { LineServerTransport } from './line-server-transport.ts';

export interface StdioGateway {
  session: ClientSession;
  /** Resolves when the downstream client closed stdin or stopped reading stdout (or close() was called). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the relay on this process's own stdin/stdout, to either era: the SDK
 * pins the connection to the era its first message speaks. Only MCP messages
 * are written to stdout; everything else belongs on stderr.
 */
export async function serveGatewayOnStdio(fleet: UpstreamFleet): Promise<StdioGateway> {
  const session = await openClientSession(fleet);
  let markClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
  // serveStdio answers subscriptions/listen itself; watching its input keeps the upstream subscribed.
  const listens = new ResourceListens(session.upstreams);
  const transport = new ListenWatchingTransport(new LineServerTransport(), listens);
  const handle = serveStdio(() => session.relay.server, { transport, onerror: () => {} });
  process.stdin.once('end', () => markClosed());
  process.stdin.once('close', () => markClosed());
  // A client that stopped reading (EPIPE) is gone as surely as one that closed stdin.
  process.stdout.once('error', () => markClosed());
  process.stdout.once('close', () => markClosed());
  const close = async () => {
    await handle.close().catch(() => {});
    await session.close();
    markClosed();
  };
  return { session, closed, close };
}
