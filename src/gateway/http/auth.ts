import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { EnvelopeError } from '../../errors/index.ts';
import { AUTH_SERVER_RETRY_MS } from './oauth/jwt.ts';
import type { OAuthIdentity, OAuthResourceServer } from './oauth/resource-server.ts';
import type { RequestScope } from './scope.ts';

/** A bearer token, the tier its holder gets, and the name it is configured under. */
export interface TokenGrant {
  token: string;
  tier: string;
  /** Names the token's holder wherever a principal is named (owners, rate-limit keys, logs). */
  name?: string;
  /** Scopes its holder is treated as having, for access rules. */
  scopes?: readonly string[];
}

export interface Principal {
  /**
   * A static token's configured name (else its place among the tokens,
   * `token-1`…); for an OAuth access token, `oauth:<issuer>#<subject>`. Never
   * the token, nor anything computed from it, which could be tried against
   * guesses offline.
   */
  tokenId: string;
  tier: string;
  /** A static token's configured scopes; an access token's are in `oauth`. */
  scopes?: readonly string[];
  /** Who an OAuth access token names; undefined for a static token. */
  oauth?: OAuthIdentity;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Checks `Authorization: Bearer` headers against configured tokens. Tokens are
 * compared as SHA-256 digests with timingSafeEqual, so neither the length nor
 * the content of a configured token leaks through response timing.
 *
 * Not the SDK's `verifyBearerToken` / `requireBearerAuth`: they refuse tokens
 * without an `expiresAt` (configured tokens have none), answer with OAuth error JSON
 * that cannot tell a missing token (AUTH_REQUIRED) from a wrong one
 * (UNAUTHORIZED), and take the first word after `Bearer ` as the token,
 * ignoring anything after it. The comparison would be ours either way: the SDK
 * leaves it to the verifier.
 */
export class BearerAuth {
  readonly #grants: { digest: Buffer; tier: string; tokenId: string; scopes: readonly string[] }[];

  constructor(grants: readonly TokenGrant[]) {
    this.#grants = grants.map((grant, index) => ({
      digest: digest(grant.token),
      tier: grant.tier,
      tokenId: grant.name ?? `token-${index + 1}`,
      scopes: grant.scopes ?? [],
    }));
  }

  get enabled(): boolean {
    return this.#grants.length > 0;
  }

  /** Whether `token` is one of these (the same comparison as a bearer header's). */
  accepts(token: string): boolean {
    try {
      this.authenticate(`Bearer ${token}`);
      return true;
    } catch {
      return false;
    }
  }

  /** The principal for a request, or an AUTH_REQUIRED / UNAUTHORIZED error. */
  authenticate(header: string | undefined): Principal {
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw new EnvelopeError('AUTH_REQUIRED', 'A bearer token is required');
    const presented = digest(match[1]);
    let found: Principal | undefined;
    // Compare against every grant so the time taken does not depend on which one matched.
    for (const grant of this.#grants) {
      if (timingSafeEqual(presented, grant.digest)) {
        found = {
          tokenId: grant.tokenId,
          tier: grant.tier,
          ...(grant.scopes.length > 0 ? { scopes: grant.scopes } : {}),
        };
      }
    }
    if (!found) throw new EnvelopeError('UNAUTHORIZED', 'The bearer token is not valid');
    return found;
  }
}

/** Seconds a client is told to wait when the authorization server could not be reached: as long as the gateway waits. */
export const AUTH_SERVER_RETRY_AFTER_S = AUTH_SERVER_RETRY_MS / 1000;

/** The Authorization header's scheme and credential; undefined when it is not one of ours. */
function credentialOf(header: string | undefined): { scheme: 'bearer' | 'dpop'; token: string } | undefined {
  const match = header === undefined ? null : /^(Bearer|DPoP)\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1] || !match[2]) return undefined;
  return { scheme: match[1].toLowerCase() === 'dpop' ? 'dpop' : 'bearer', token: match[2] };
}

/**
 * Who a request is: its static bearer token when it presents one of them,
 * else, with `auth.oauth`, the OAuth access token it presents (checked by the
 * resource server; async, since that may fetch the issuer's keys). The OAuth
 * side is attached once the gateway listens, when its resource URL is known.
 */
export class Authenticator {
  readonly static: BearerAuth;
  #oauth: OAuthResourceServer | undefined;
  readonly #oauthConfigured: boolean;

  constructor(tokens: BearerAuth, oauthConfigured: boolean) {
    this.static = tokens;
    this.#oauthConfigured = oauthConfigured;
  }

  get oauth(): OAuthResourceServer | undefined {
    return this.#oauth;
  }

  attachOAuth(server: OAuthResourceServer): void {
    this.#oauth = server;
  }

  /** Whether any credential can be accepted (static tokens, or OAuth). */
  get enabled(): boolean {
    return this.static.enabled || this.#oauthConfigured;
  }

  /** The request's principal, or the EnvelopeError refusing it (answered with `challengeHeaders`). */
  async authenticate(req: IncomingMessage, path: string): Promise<Principal> {
    const header = req.headers.authorization;
    const oauth = this.#oauth;
    if (!oauth) return this.static.authenticate(header);
    const credential = credentialOf(header);
    if (!credential) throw new EnvelopeError('AUTH_REQUIRED', 'A bearer token is required');
    if (credential.scheme === 'bearer' && this.static.enabled) {
      try {
        return this.static.authenticate(header);
      } catch {
        // Not one of the static tokens: an OAuth access token, then.
      }
    }
    const dpop = req.headers.dpop;
    const { identity, tier } = await oauth.authenticate({
      ...credential,
      method: req.method ?? 'GET',
      // The URL the client addressed: the resource's origin (it may sit behind a proxy) and this path.
      url: `${oauth.origin}${path}`,
      ...(typeof dpop === 'string' ? { dpop } : {}),
    });
    return { tokenId: `oauth:${identity.issuer}#${identity.subject}`, tier, oauth: identity };
  }

  /** The headers an HTTP error answer carries: a refused credential's say how to authenticate. */
  challengeHeaders(error: EnvelopeError): Record<string, string> {
    // The token may be good: come back once the authorization server answers again.
    if (error.code === 'AUTH_SERVER_UNAVAILABLE') return { 'retry-after': String(AUTH_SERVER_RETRY_AFTER_S) };
    if (this.#oauth) {
      const challenge = this.#oauth.challenge(error);
      return challenge === undefined ? {} : { 'www-authenticate': challenge };
    }
    return error.code === 'AUTH_REQUIRED' || error.code === 'UNAUTHORIZED'
      ? { 'www-authenticate': 'Bearer realm="mcp-envelope"' }
      : {};
  }
}

/**
 * The credential guard: a presented credential is always checked (a wrong one
 * is never taken for none); without one the caller is anonymous unless
 * `required`. Names the scope's principal and tier, or throws the refusal,
 * answered with `Authenticator.challengeHeaders`.
 */
export async function authenticate(
  scope: RequestScope,
  auth: Authenticator,
  required: boolean,
): Promise<void> {
  const header = scope.req.headers.authorization;
  if (!required && !(auth.enabled && header !== undefined)) return;
  const principal = await auth.authenticate(scope.req, scope.path);
  scope.principal = principal;
  scope.tier = principal.tier;
}
