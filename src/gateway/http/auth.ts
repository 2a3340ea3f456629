import { createHash, timingSafeEqual } from 'node:crypto';
import { EnvelopeError } from '../../errors/index.ts';
import type { RequestScope } from './scope.ts';

/** A bearer token, the tier its holder gets, and the name it is configured under. */
export interface TokenGrant {
  token: string;
  tier: string;
  /** Names the token's holder wherever a principal is named (owners, rate-limit keys, logs). */
  name?: string;
}

export interface Principal {
  /**
   * The token's configured name (else its place among the tokens, `token-1`…):
   * never the token, nor anything computed from it, which could be tried
   * against guesses offline.
   */
  tokenId: string;
  tier: string;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Checks `Authorization: Bearer` headers against configured tokens. Tokens are
 * compared as SHA-256 digests with timingSafeEqual, so neither the length nor
 * the content of a configured token leaks through response timing.
 *
 * Not the SDK's `verifyBearerToken` / `requireBearerAuth`: they are async
 * (the HTTP router calls `authenticate` synchronously), refuse tokens without
 * an `expiresAt` (configured tokens have none), answer with OAuth error JSON
 * that cannot tell a missing token (AUTH_REQUIRED) from a wrong one
 * (UNAUTHORIZED), and take the first word after `Bearer ` as the token,
 * ignoring anything after it. The comparison would be ours either way: the SDK
 * leaves it to the verifier.
 */
export class BearerAuth {
  readonly #grants: { digest: Buffer; tier: string; tokenId: string }[];

  constructor(grants: readonly TokenGrant[]) {
    this.#grants = grants.map((grant, index) => ({
      digest: digest(grant.token),
      tier: grant.tier,
      tokenId: grant.name ?? `token-${index + 1}`,
    }));
  }

  get enabled(): boolean {
    return this.#grants.length > 0;
  }

  /** The principal for a request, or an AUTH_REQUIRED / UNAUTHORIZED error. */
  authenticate(header: string | undefined): Principal {
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw new EnvelopeError('AUTH_REQUIRED', 'A bearer token is required');
    const presented = digest(match[1]);
    let found: Principal | undefined;
    // Compare against every grant so the time taken does not depend on which one matched.
    for (const grant of this.#grants) {
      if (timingSafeEqual(presented, grant.digest)) found = { tokenId: grant.tokenId, tier: grant.tier };
    }
    if (!found) throw new EnvelopeError('UNAUTHORIZED', 'The bearer token is not valid');
    return found;
  }
}

/**
 * The bearer-token guard: a presented token is always checked (a wrong one is
 * never taken for no token); without one the caller is anonymous unless
 * `required`. Names the scope's principal and tier, or throws AUTH_REQUIRED /
 * UNAUTHORIZED, answered with `challengeHeaders`.
 */
export function authenticate(scope: RequestScope, auth: BearerAuth, required: boolean): void {
  const header = scope.req.headers.authorization;
  if (!required && !(auth.enabled && header !== undefined)) return;
  const principal = auth.authenticate(header);
  scope.principal = principal;
  scope.tier = principal.tier;
}

/** The headers an HTTP error answer carries: a refused token's says how to authenticate. */
export function challengeHeaders(error: EnvelopeError): Record<string, string> {
  return error.code === 'AUTH_REQUIRED' || error.code === 'UNAUTHORIZED'
    ? { 'www-authenticate': 'Bearer realm="mcp-envelope"' }
    : {};
}
