/**
 * What an error reported by the SDK's Streamable HTTP client transport says
 * about the connection. The transport never closes on its own: it reports
 * network failures, retries a broken SSE stream a few times and then gives up,
 * while the requests that stream carried wait for their timeouts. The upstream
 * decides from these errors when the connection is gone, and reconnects.
 */

export type ConnectionVerdict =
  /** The server cannot be reached, or no longer knows the session (it restarted). */
  | 'lost'
  /** A stream broke: the server may be gone, or only that stream; a ping tells which. */
  | 'suspect'
  /** Anything else (a malformed message, an HTTP error on one request). */
  | 'unrelated';

function httpStatus(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return undefined;
  return (error as { data?: { status?: unknown } }).data?.status;
}

/** `stateless`: the connection speaks 2026-07-28, which has no session to lose. */
export function connectionVerdict(error: unknown, stateless = false): ConnectionVerdict {
  // A 404 on a session means the server lost it: restarted, or the session expired. Without a
  // session, it is the server's answer to a method it does not know.
  if (httpStatus(error) === 404) return stateless ? 'unrelated' : 'lost';
  // undici's one message for every network failure (refused, reset, unreachable, TLS).
  if (error instanceof TypeError && error.message === 'fetch failed') return 'lost';
  if (
    error instanceof Error &&
    /^(SSE stream disconnected|Failed to reconnect SSE stream)/.test(error.message)
  )
    return 'suspect';
  return 'unrelated';
}

/** A short reason for logs and errors: the message, and the network error code when there is one. */
export function lossReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? `${error.message} (${code})` : error.message;
}
