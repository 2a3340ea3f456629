/**
 * Who calls, read off the `AuthInfo` the HTTP guards built for the request
 * (http/scope.ts): an OAuth access token's issuer, subject, client, token id,
 * scopes and the claims the configuration names; a static token's name and
 * scopes; each with its tier. A request without one (stdio, HTTP without a
 * token) is anonymous. Never the token: `AuthInfo.token` names the principal.
 */
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { CarriedClaims } from './claims.ts';
import type { AccessPrincipal } from './policy.ts';

/** Who an authenticated caller is, as the call log and the provenance record name it. */
export interface CallerIdentity {
  /** `token:<name>` for a static token, `oauth:<issuer>#<subject>` for an access token. */
  principal: string;
  /** The access token's `sub` (its client when it has none). */
  subject?: string;
  issuer?: string;
  /** The OAuth client the access token was issued to. */
  clientId?: string;
  tier: string;
  /** The access token's `jti`, or the static token's configured name: never the token. */
  tokenId?: string;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The identity a credential gave the caller; undefined for callers none authenticated. */
export function callerIdentity(authInfo: AuthInfo | undefined): CallerIdentity | undefined {
  const extra = authInfo?.extra;
  const tier = text(extra?.tier);
  const principal = text(extra?.principal);
  if (!authInfo || tier === undefined || principal === undefined) return undefined;
  const issuer = text(extra?.issuer);
  if (issuer === undefined) return { principal, tier, tokenId: authInfo.token };
  const tokenId = text(extra?.tokenId);
  return {
    principal,
    subject: text(extra?.subject) as string,
    issuer,
    ...(authInfo.clientId ? { clientId: authInfo.clientId } : {}),
    tier,
    ...(tokenId === undefined ? {} : { tokenId }),
  };
}

/** The anonymous caller of each tier, made once: stdio calls allocate nothing for it. */
const anonymousCallers = new Map<string, AccessPrincipal>();

function anonymousAt(tier: string): AccessPrincipal {
  let principal = anonymousCallers.get(tier);
  if (!principal) {
    principal = Object.freeze({ anonymous: true, scopes: Object.freeze([]) as readonly string[], tier });
    anonymousCallers.set(tier, principal);
  }
  return principal;
}

/** The caller as access rules see it; `anonymousTier` for callers no credential authenticated. */
export function accessPrincipalOf(authInfo: AuthInfo | undefined, anonymousTier: string): AccessPrincipal {
  const extra = authInfo?.extra;
  const tier = text(extra?.tier);
  if (!authInfo || tier === undefined) return anonymousAt(anonymousTier);
  const issuer = text(extra?.issuer);
  const claims = extra?.claims as CarriedClaims | undefined;
  return issuer === undefined
    ? { anonymous: false, token: authInfo.token, scopes: authInfo.scopes, tier }
    : { anonymous: false, issuer, scopes: authInfo.scopes, ...(claims ? { claims } : {}), tier };
}
