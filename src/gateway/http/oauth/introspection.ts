import { createHash } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { EnvelopeError } from '../../../errors/index.ts';
import { AUTH_SERVER_TIMEOUT_MS } from './discovery.ts';
import { AUTH_SERVER_RETRY_MS } from './jwt.ts';

/** RFC 7662 introspection: where, and the gateway's own client credentials there. */
export interface IntrospectionOptions {
  /** The endpoint; undefined: the issuer's `introspection_endpoint`, found by discovery. */
  endpoint: () => Promise<string>;
  clientId: string;
  clientSecret: string;
}

/** The longest an introspection answer is reused (a revoked token keeps working at most this long). */
export const INTROSPECTION_CACHE_MS = 60_000;
/** Most answers kept; the oldest go first. */
export const INTROSPECTION_CACHE_ENTRIES = 10_000;

interface Cached {
  claims: JWTPayload | undefined;
  until: number;
}

/**
 * Asks the authorization server about opaque tokens (RFC 7662), with the
 * gateway's client credentials (`client_secret_basic`). Answers are cached
 * under the token's SHA-256 (never the token) until the token expires or
 * INTROSPECTION_CACHE_MS pass, whichever is first, in a bounded map.
 */
export class Introspector {
  readonly #options: IntrospectionOptions;
  readonly #cache = new Map<string, Cached>();
  readonly #now: () => number;
  /** As for the key set: after a failure, the same answer for AUTH_SERVER_RETRY_MS without asking. */
  #unreachable: { until: number; error: EnvelopeError } | undefined;

  constructor(options: IntrospectionOptions, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
  }

  /** The token's claims when active; UNAUTHORIZED when not; AUTH_SERVER_UNAVAILABLE when unanswered. */
  async introspect(token: string): Promise<JWTPayload> {
    const key = createHash('sha256').update(token).digest('base64url');
    const now = this.#now();
    const cached = this.#cache.get(key);
    let claims: JWTPayload | undefined;
    if (cached && cached.until > now) claims = cached.claims;
    else {
      this.#cache.delete(key);
      if (this.#unreachable && now < this.#unreachable.until) throw this.#unreachable.error;
      try {
        claims = await this.#ask(token);
      } catch (error) {
        if (error instanceof EnvelopeError && error.code === 'AUTH_SERVER_UNAVAILABLE') {
          this.#unreachable = { until: now + AUTH_SERVER_RETRY_MS, error };
        }
        throw error;
      }
      const exp = typeof claims?.exp === 'number' ? claims.exp * 1000 : Number.POSITIVE_INFINITY;
      this.#cache.set(key, { claims, until: Math.min(now + INTROSPECTION_CACHE_MS, exp) });
      while (this.#cache.size > INTROSPECTION_CACHE_ENTRIES) {
        this.#cache.delete(this.#cache.keys().next().value as string);
      }
    }
    if (!claims) throw new EnvelopeError('UNAUTHORIZED', 'The access token is not active');
    return claims;
  }

  async #ask(token: string): Promise<JWTPayload | undefined> {
    const { clientId, clientSecret } = this.#options;
    let response: Response;
    let endpoint: string;
    try {
      endpoint = await this.#options.endpoint();
      response = await fetch(endpoint, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/x-www-form-urlencoded',
          // RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
          authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
        redirect: 'error',
        signal: AbortSignal.timeout(AUTH_SERVER_TIMEOUT_MS),
      });
    } catch (error) {
      if (error instanceof EnvelopeError) throw error;
      throw new EnvelopeError(
        'AUTH_SERVER_UNAVAILABLE',
        `Token introspection failed: ${(error as Error).message}`,
      );
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new EnvelopeError(
        'AUTH_SERVER_UNAVAILABLE',
        `Token introspection answered HTTP ${response.status}`,
      );
    }
    const answer = (await response.json().catch(() => undefined)) as
      | (JWTPayload & { active?: unknown })
      | undefined;
    if (typeof answer !== 'object' || answer === null) {
      throw new EnvelopeError('AUTH_SERVER_UNAVAILABLE', 'Token introspection did not answer a JSON object');
    }
    if (answer.active !== true) return undefined;
    const { active: _active, ...claims } = answer;
    return claims;
  }
}
