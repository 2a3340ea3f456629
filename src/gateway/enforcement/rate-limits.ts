/**
 * Rate limits for upstreams whose results are relayed untouched (dialect
 * passthrough). Their results are never rewritten, so the rate metadata of an
 * admitted call goes in the result's `_meta` (only when a rule applies: there
 * is nothing to say otherwise). A denied call has no upstream result to pass
 * through: it is answered by the gateway itself, as an mcp.envelope.v0.1 error
 * (RATE_LIMITED, retryable, `reset_at` in the error's details) so that any
 * envelope reader, callToolWithRetry included, knows when to come back.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo, CallToolResult } from '@modelcontextprotocol/server';
import { envelopeV01For } from '../../mcp/dialects.ts';
import { RATE_LIMIT_META_KEY } from '../../mcp/pipeline/rate-limit.ts';
import { valueToToolResult } from '../../mcp/tool-result.ts';
import type { RateDecision } from '../../ratelimit/gcra.ts';
import { rateLimitedError, rateLimitInfo, retryAfterSeconds } from '../../ratelimit/info.ts';

/** The gateway's own answer to a call of a passthrough upstream that a bucket denied. */
export function deniedPassthrough(decision: RateDecision): CallToolResult {
  const info = rateLimitInfo(decision);
  const envelope = envelopeV01For({
    ok: false,
    data: null,
    error: rateLimitedError(decision),
    meta: { adapter: 'mcp-envelope-gateway', rate_limit: info },
  });
  return valueToToolResult(envelope, { isError: true, meta: { [RATE_LIMIT_META_KEY]: info } });
}

/** An upstream's result as it came, with the binding decision's rate metadata in `_meta`. */
export function withRateMeta(result: CallToolResult, decision: RateDecision): CallToolResult {
  return { ...result, _meta: { ...result._meta, [RATE_LIMIT_META_KEY]: rateLimitInfo(decision) } };
}

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
