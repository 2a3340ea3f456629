import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { RateDecision } from '../../ratelimit/gcra.ts';
import type { Principal } from './auth.ts';

/**
 * One HTTP request as the gateway's guards see it: the request and its
 * response, and what each guard learned of it on the way in (who the caller
 * is, what the body says, who to tell of a denial). The guards are plain
 * functions of it, run in order by the route table (server.ts); it travels
 * with the request to the era's handler.
 */

/** Told when a rate limit denies the call a request carries. */
export type RateLimitedListener = (decision: RateDecision) => void;

export interface RequestScope {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The path, without the query. */
  readonly path: string;
  /** Whose bearer token the request carries (auth.ts); undefined for an anonymous caller. */
  principal?: Principal;
  /** The tier that token gives; undefined for an anonymous caller. */
  tier?: string;
  /** A POST's body, read and parsed (body.ts). */
  body?: unknown;
  /** Who to tell when a rate limit denies the request's call (rate-limit.ts). */
  onRateLimited?: RateLimitedListener;
  /** What the SDK is handed as the caller's `AuthInfo`, once built (`authInfoOf`). */
  authInfo?: AuthInfo;
}

export function openScope(req: IncomingMessage, res: ServerResponse): RequestScope {
  return { req, res, path: (req.url ?? '/').split('?')[0] ?? '/' };
}

/**
 * Who the request's traffic is counted against and owned by: its static
 * bearer token (`token:<name>`), its OAuth issuer and subject
 * (`oauth:<issuer>#<subject>`, the same principal whichever token it holds
 * now), else (anonymous) the address it came from.
 */
export function ownerOf(scope: RequestScope): string {
  const principal = scope.principal;
  if (!principal) return `anonymous:${scope.req.socket.remoteAddress ?? 'unknown'}`;
  // An OAuth principal's id is already `oauth:<issuer>#<subject>`.
  return principal.oauth ? principal.tokenId : `token:${principal.tokenId}`;
}

/**
 * Whose upstream connections a request uses: its bearer token's. Anonymous 2026-07-28 requests
 * share one set that never guesses whose a server-to-client request is; an anonymous 2025-era
 * session has a set of its own (sessions.ts).
 */
export function poolKeyOf(scope: RequestScope): string {
  return scope.principal?.tokenId ?? '';
}

/** Whether the request's `Accept` names `type`. */
export function accepts(scope: RequestScope, type: string): boolean {
  return (scope.req.headers.accept ?? '').toLowerCase().includes(type);
}

/**
 * Scopes by the `AuthInfo` the SDK carries to each handler of their request:
 * what reaches enforcement of the request is that object, so the scope's
 * listeners are found through it and nothing function-valued rides in `extra`.
 */
const scopes = new WeakMap<AuthInfo, RequestScope>();

/**
 * The request's `AuthInfo`, built once: `extra.principal` names the principal
 * for rate limits, artifacts and input rounds (its token, else its address;
 * within an anonymous 2025-era session, the session itself), `extra.tier` the
 * token's tier.
 */
export function authInfoOf(scope: RequestScope): AuthInfo {
  if (scope.authInfo) return scope.authInfo;
  const extra: Record<string, unknown> = { principal: ownerOf(scope) };
  const principal = scope.principal;
  const oauth = principal?.oauth;
  // `token` names the principal, never the credential: handlers and upstreams must not be able to replay it.
  const authInfo: AuthInfo = oauth
    ? {
        token: (principal as Principal).tokenId,
        clientId: oauth.clientId ?? '',
        scopes: oauth.scopes,
        ...(oauth.expiresAt === undefined ? {} : { expiresAt: oauth.expiresAt }),
        resource: new URL(oauth.resource),
        extra: {
          tier: (principal as Principal).tier,
          ...extra,
          subject: oauth.subject,
          issuer: oauth.issuer,
          ...(oauth.tokenId === undefined ? {} : { tokenId: oauth.tokenId }),
          // Only the claims access rules and tiers name: never the token.
          ...(oauth.claims === undefined ? {} : { claims: oauth.claims }),
        },
      }
    : principal
      ? {
          token: principal.tokenId,
          clientId: principal.tokenId,
          scopes: [...(principal.scopes ?? [])],
          extra: { tier: principal.tier, ...extra },
        }
      : { token: '', clientId: '', scopes: [], extra };
  scope.authInfo = authInfo;
  scopes.set(authInfo, scope);
  return authInfo;
}

/** Who to tell that a bucket denied the call: the HTTP request it came in, when it listens. */
export function rateLimitedListener(authInfo: AuthInfo | undefined): RateLimitedListener | undefined {
  return authInfo ? scopes.get(authInfo)?.onRateLimited : undefined;
}

/** The W3C trace-context headers of the HTTP request an `AuthInfo` was built for (telemetry's parent). */
export function traceHeadersOf(
  authInfo: AuthInfo | undefined,
): { traceparent?: string; tracestate?: string } | undefined {
  const headers = authInfo ? scopes.get(authInfo)?.req.headers : undefined;
  if (!headers) return undefined;
  const { traceparent, tracestate } = headers;
  return {
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
    ...(typeof tracestate === 'string' ? { tracestate } : {}),
  };
}
