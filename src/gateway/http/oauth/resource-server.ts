import type { JWTPayload } from 'jose';
import { EnvelopeError } from '../../../errors/index.ts';
import { type CarriedClaims, type ClaimValue, carriedClaims, claimsHold } from '../../access/claims.ts';
import { discoverAuthorizationServer } from './discovery.ts';
import { DpopVerifier } from './dpop.ts';
import { Introspector } from './introspection.ts';
import { JwtVerifier } from './jwt.ts';

/** `off`: DPoP is not accepted; `allowed`: bound tokens need their proof; `required`: every token must be bound. */
export type DpopMode = 'off' | 'allowed' | 'required';

/** The gateway as an OAuth 2.1 resource server (the resolved `auth.oauth`). */
export interface OAuthOptions {
  issuer: string;
  /** Accepted in `aud` besides the resource itself. */
  audience?: string;
  /** The MCP endpoint's URL as clients reach it; undefined: the listening URL. */
  resource?: string;
  /** The issuer's key set; undefined: its metadata's `jwks_uri`. */
  jwksUri?: string;
  algorithms: string[];
  clockSkewSeconds: number;
  /** Scopes every request needs. */
  requiredScopes: string[];
  /**
   * The scope that also opens the ledger's pages (`/ledger`) to an access
   * token; undefined: only static tokens open them. Read by the HTTP server.
   */
  ledgerScope?: string;
  /** The first entry whose scope the token has and whose claims it carries gives the tier; else `defaultTier`. */
  tiers: OAuthTier[];
  /**
   * The claim paths the configuration names (`access` rules, `tiers` entries):
   * what is read of a token's claims and carried with its requests. Default none.
   */
  claimPaths?: readonly string[];
  defaultTier: string;
  /** Opaque tokens are introspected (RFC 7662) when set; `endpoint` undefined: the issuer's. */
  introspection?: { endpoint?: string; clientId: string; clientSecret: string };
  dpop: DpopMode;
  /** How soon an unknown `kid` may fetch the key set again (default JWKS_COOLDOWN_MS). */
  jwksCooldownMs?: number;
  /** The clock (ms), for tests; default Date.now. */
  now?: () => number;
}

/** A tier a token gets by its scope, its claims, or both. */
export interface OAuthTier {
  scope?: string;
  claims?: Readonly<Record<string, ClaimValue>>;
  tier: string;
}

/** Who an access token names: never the token itself. */
export interface OAuthIdentity {
  issuer: string;
  subject: string;
  /** `client_id`, else `azp`. */
  clientId?: string;
  /** `jti`, naming the token without being it. */
  tokenId?: string;
  scopes: string[];
  /** Seconds since the epoch. */
  expiresAt?: number;
  /** The resource the token was accepted for. */
  resource: string;
  /** The claims at the configured paths the token carries; absent when it carries none of them. */
  claims?: CarriedClaims;
}

/** The request an access token came with, as far as its checks need it. */
export interface PresentedToken {
  scheme: 'bearer' | 'dpop';
  token: string;
  method: string;
  /** The URL the client addressed, without query. */
  url: string;
  /** The DPoP header, when one was sent. */
  dpop?: string;
}

/** The refusals a challenge answers: no token, a token that failed a check, too few scopes. */
export const CHALLENGED: ReadonlySet<string> = new Set([
  'AUTH_REQUIRED',
  'UNAUTHORIZED',
  'TOKEN_EXPIRED',
  'TOKEN_AUDIENCE',
  'TOKEN_ISSUER',
  'TOKEN_SIGNATURE',
  'TOKEN_ALGORITHM',
  'INSUFFICIENT_SCOPE',
  'DPOP_INVALID',
]);

const JWT_SHAPE = /^[\w-]+\.[\w-]*\.[\w-]*$/;

/** `scope` (RFC 9068: space-separated) or `scp` (a list, or a string, as some servers write it). */
function scopesOf(claims: JWTPayload): string[] {
  const raw = claims.scope ?? claims.scp;
  if (typeof raw === 'string') return raw.split(' ').filter((scope) => scope.length > 0);
  if (Array.isArray(raw)) return raw.filter((scope): scope is string => typeof scope === 'string');
  return [];
}

/** Whether `aud` (a string or a list) names one of `audiences`. */
function audienceMatches(aud: unknown, audiences: readonly string[]): boolean {
  const named = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  return named.some((value) => audiences.includes(value));
}

/**
 * Validates access tokens for one resource (the MCP endpoint): JWTs against
 * the issuer's keys, opaque tokens by introspection when configured, DPoP
 * proofs where tokens are bound; then the scopes every request needs and the
 * tier the token's scopes give. Where the issuer's keys are is discovered from
 * its metadata on first use; until that succeeds nobody is let in
 * (AUTH_SERVER_UNAVAILABLE).
 */
export class OAuthResourceServer {
  readonly options: OAuthOptions;
  readonly resource: string;
  /** The resource's origin: a DPoP proof's `htu` is this and the request's path. */
  readonly origin: string;
  readonly #audiences: string[];
  readonly #jwt: JwtVerifier;
  readonly #introspector: Introspector | undefined;
  readonly #dpop: DpopVerifier;
  #metadata: ReturnType<typeof discoverAuthorizationServer> | undefined;

  constructor(options: OAuthOptions, resource: string) {
    this.options = options;
    this.resource = resource;
    this.origin = new URL(resource).origin;
    this.#audiences = options.audience === undefined ? [resource] : [resource, options.audience];
    this.#jwt = new JwtVerifier(
      {
        issuer: options.issuer,
        audiences: this.#audiences,
        algorithms: options.algorithms,
        clockSkewSeconds: options.clockSkewSeconds,
      },
      async () => options.jwksUri ?? this.#discovered('jwks_uri'),
      {
        ...(options.jwksCooldownMs === undefined ? {} : { cooldownMs: options.jwksCooldownMs }),
        ...(options.now === undefined ? {} : { now: options.now }),
      },
    );
    const introspection = options.introspection;
    this.#introspector = introspection
      ? new Introspector({
          endpoint: async () => introspection.endpoint ?? this.#discovered('introspection_endpoint'),
          clientId: introspection.clientId,
          clientSecret: introspection.clientSecret,
        })
      : undefined;
    this.#dpop = new DpopVerifier(options.algorithms, options.clockSkewSeconds);
  }

  /** The RFC 9728 document's URL: the well-known segment inserted before the resource's path. */
  get metadataUrl(): string {
    const url = new URL(this.resource);
    const path = url.pathname === '/' ? '' : url.pathname;
    return `${url.origin}/.well-known/oauth-protected-resource${path}`;
  }

  /** Scopes clients are told of: those every request needs, then those that give tiers. */
  get scopesSupported(): string[] {
    const tierScopes = this.options.tiers.flatMap(({ scope }) => (scope === undefined ? [] : [scope]));
    return [...new Set([...this.options.requiredScopes, ...tierScopes])];
  }

  /** The RFC 9728 protected resource metadata. */
  metadata(): Record<string, unknown> {
    const dpop = this.options.dpop;
    return {
      resource: this.resource,
      authorization_servers: [this.options.issuer],
      scopes_supported: this.scopesSupported,
      bearer_methods_supported: ['header'],
      resource_name: 'mcp-envelope gateway',
      ...(dpop === 'off'
        ? {}
        : {
            dpop_signing_alg_values_supported: this.options.algorithms,
            dpop_bound_access_tokens_required: dpop === 'required',
          }),
    };
  }

  async #discovered(member: 'jwks_uri' | 'introspection_endpoint'): Promise<string> {
    if (!this.#metadata) {
      this.#metadata = discoverAuthorizationServer(this.options.issuer);
      // A failed discovery is tried again by the next request, not remembered.
      this.#metadata.catch(() => {
        this.#metadata = undefined;
      });
    }
    const value = (await this.#metadata)[member];
    if (typeof value !== 'string') {
      throw new EnvelopeError(
        'AUTH_SERVER_UNAVAILABLE',
        `The authorization server ${this.options.issuer} publishes no ${member}`,
      );
    }
    return value;
  }

  /** The token's identity and tier, or the EnvelopeError saying why it is refused. */
  async authenticate(presented: PresentedToken): Promise<{ identity: OAuthIdentity; tier: string }> {
    const { dpop } = this.options;
    if (presented.scheme === 'dpop' && dpop === 'off') {
      throw new EnvelopeError('DPOP_INVALID', 'DPoP-bound tokens are not accepted here');
    }
    const claims = await this.#claims(presented.token);
    const jkt = (claims.cnf as { jkt?: unknown } | undefined)?.jkt;
    if (typeof jkt === 'string') {
      // A bound token shown as a bearer token is what a thief without the key would do.
      if (presented.scheme !== 'dpop' || dpop === 'off') {
        throw new EnvelopeError(
          'DPOP_INVALID',
          'The access token is DPoP-bound: present it with the DPoP scheme and a proof',
        );
      }
      await this.#dpop.verify(presented.dpop, {
        method: presented.method,
        url: presented.url,
        token: presented.token,
        jkt,
      });
    } else if (presented.scheme === 'dpop' || dpop === 'required') {
      throw new EnvelopeError('DPOP_INVALID', 'The access token is not DPoP-bound (no cnf.jkt)');
    }
    const subject = typeof claims.sub === 'string' ? claims.sub : undefined;
    const clientId =
      typeof claims.client_id === 'string'
        ? claims.client_id
        : typeof claims.azp === 'string'
          ? claims.azp
          : undefined;
    const who = subject ?? clientId;
    if (who === undefined)
      throw new EnvelopeError('UNAUTHORIZED', 'The access token names no subject or client');
    const scopes = scopesOf(claims);
    const missing = this.options.requiredScopes.filter((scope) => !scopes.includes(scope));
    if (missing.length > 0) {
      throw new EnvelopeError(
        'INSUFFICIENT_SCOPE',
        `The access token lacks the scopes ${missing.join(', ')}`,
        {
          required: this.options.requiredScopes,
        },
      );
    }
    const paths = this.options.claimPaths ?? [];
    const carried = paths.length > 0 ? carriedClaims(claims, paths) : undefined;
    const tier =
      this.options.tiers.find(
        (entry) =>
          (entry.scope === undefined || scopes.includes(entry.scope)) &&
          (entry.claims === undefined || claimsHold(carried, Object.entries(entry.claims))),
      )?.tier ?? this.options.defaultTier;
    return {
      tier,
      identity: {
        issuer: this.options.issuer,
        subject: who,
        ...(clientId === undefined ? {} : { clientId }),
        ...(typeof claims.jti === 'string' ? { tokenId: claims.jti } : {}),
        scopes,
        ...(typeof claims.exp === 'number' ? { expiresAt: claims.exp } : {}),
        resource: this.resource,
        ...(carried && Object.keys(carried).length > 0 ? { claims: carried } : {}),
      },
    };
  }

  /** A JWT's verified claims, or an opaque token's introspected ones, held to the same issuer, audience and time. */
  async #claims(token: string): Promise<JWTPayload> {
    if (JWT_SHAPE.test(token)) return this.#jwt.verify(token);
    if (!this.#introspector) throw new EnvelopeError('UNAUTHORIZED', 'The access token is not a JWT');
    const claims = await this.#introspector.introspect(token);
    if (claims.iss !== undefined && claims.iss !== this.options.issuer) {
      throw new EnvelopeError('TOKEN_ISSUER', 'The access token was issued by another issuer');
    }
    // Fail closed: a token no audience binds to this resource could be any resource's.
    if (!audienceMatches(claims.aud, this.#audiences)) {
      throw new EnvelopeError('TOKEN_AUDIENCE', 'The access token was not issued for this resource');
    }
    const now = Date.now() / 1000;
    const skew = this.options.clockSkewSeconds;
    if (typeof claims.exp === 'number' && claims.exp + skew <= now) {
      throw new EnvelopeError('TOKEN_EXPIRED', 'The access token has expired');
    }
    if (typeof claims.nbf === 'number' && claims.nbf - skew > now) {
      throw new EnvelopeError('TOKEN_EXPIRED', 'The access token is not valid yet');
    }
    return claims;
  }

  /**
   * The `WWW-Authenticate` value for a refusal (RFC 6750 §3, RFC 9728 §5.1):
   * where the metadata is and which scopes to ask for; `invalid_token` for a
   * token that failed its checks, `insufficient_scope` naming every scope a
   * request needs; with DPoP accepted, a DPoP challenge too (RFC 9449 §7.1).
   */
  challenge(error: EnvelopeError): string | undefined {
    const code = error.code;
    if (!CHALLENGED.has(code)) return undefined;
    const params: string[] = [];
    if (code === 'INSUFFICIENT_SCOPE') params.push('error="insufficient_scope"');
    else if (code !== 'AUTH_REQUIRED') params.push('error="invalid_token"');
    if (code !== 'AUTH_REQUIRED') params.push(`error_description="${quoted(error.message)}"`);
    const scope = code === 'INSUFFICIENT_SCOPE' ? this.options.requiredScopes : this.#challengeScopes();
    if (scope.length > 0) params.push(`scope="${quoted(scope.join(' '))}"`);
    params.push(`resource_metadata="${quoted(this.metadataUrl)}"`);
    const challenges = [`Bearer ${params.join(', ')}`];
    if (this.options.dpop !== 'off') {
      const dpopParams = [`algs="${this.options.algorithms.join(' ')}"`];
      if (code === 'DPOP_INVALID') dpopParams.unshift('error="invalid_dpop_proof"');
      challenges.push(`DPoP ${dpopParams.join(', ')}`);
    }
    return challenges.join(', ');
  }

  /** What a client without a (good) token is told to ask for: the required scopes, else every scope clients are told of. */
  #challengeScopes(): string[] {
    return this.options.requiredScopes.length > 0 ? this.options.requiredScopes : this.scopesSupported;
  }
}

/** A quoted-string's content (RFC 9110 §5.6.4): backslash and quote escaped, controls dropped. */
function quoted(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: controls are what is removed.
  return text.replace(/[\u0000-\u001f\u007f]/g, ' ').replace(/["\\]/g, '\\$&');
}
