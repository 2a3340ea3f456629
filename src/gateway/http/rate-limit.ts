import { retryAfterSeconds } from '../../ratelimit/info.ts';
import type { RequestScope } from './scope.ts';

/**
 * How a denial by a rate limit reaches the HTTP response. The pipeline's rate
 * stage decides and answers for every mode, passthrough included, and tells
 * the call's listener (found through the request's `AuthInfo`, scope.ts);
 * this guard is that listener, and adds `Retry-After`.
 */

/**
 * Listens for a denial of the request's call when the request is a single
 * tools/call, so that the response whose one answer is the denial carries a
 * `Retry-After` header (whole seconds), as hosted servers send one. The
 * denial comes before the answer is written, so the header is set then; a
 * response whose head is already out (an SSE stream that started before any
 * answer existed) gets none, and its answer still says `reset_at`.
 */
export function retryAfterOnDenial(scope: RequestScope): void {
  const { req, res, body } = scope;
  const single = req.method === 'POST' && typeof body === 'object' && body !== null && !Array.isArray(body);
  if (!single || (body as { method?: unknown }).method !== 'tools/call') return;
  scope.onRateLimited = (decision) => {
    if (!res.headersSent) res.setHeader('retry-after', String(retryAfterSeconds(decision)));
  };
}
