/**
 * How a denial by a rate limit reaches the HTTP response: the pipeline tells
 * the call's listener, and the server adds `Retry-After`. (The pipeline's
 * rate stage decides and answers for every mode, passthrough included.)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { RateDecision } from '../../ratelimit/gcra.ts';
import { retryAfterSeconds } from '../../ratelimit/info.ts';

/** The member of `AuthInfo.extra` through which the HTTP server hears of a denied call. */
export const RATE_LIMITED_LISTENER = 'onRateLimited';

export type RateLimitedListener = (decision: RateDecision) => void;

/** Who to tell that a bucket denied this call: the HTTP server serving it, when it listens. */
export function rateLimitedListener(authInfo: AuthInfo | undefined): RateLimitedListener | undefined {
  const listener = authInfo?.extra?.[RATE_LIMITED_LISTENER];
  return typeof listener === 'function' ? (listener as RateLimitedListener) : undefined;
}

/**
 * A `Retry-After` header (whole seconds) on an HTTP response whose one answer
 * is a denied tools/call, as hosted servers send one. Returns the listener to
 * put in the request's `AuthInfo.extra`, or undefined when the body is not a
 * single tools/call. The header joins the response when its head is written
 * after the denial: a JSON response. An SSE response has sent its head before
 * any answer exists, so it gets none (its answer still says `reset_at`).
 */
export function retryAfterOnDenial(
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): RateLimitedListener | undefined {
  const single = req.method === 'POST' && typeof body === 'object' && body !== null && !Array.isArray(body);
  if (!single || (body as { method?: unknown }).method !== 'tools/call') return undefined;
  let denied: RateDecision | undefined;
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
    if (denied && args[0] === 200 && !res.headersSent)
      res.setHeader('retry-after', String(retryAfterSeconds(denied)));
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
  return (decision) => {
    denied = decision;
  };
}
