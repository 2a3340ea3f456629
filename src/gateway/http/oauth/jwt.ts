import { createRemoteJWKSet, errors, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { EnvelopeError, type ErrorCode } from '../../../errors/index.ts';
import { AUTH_SERVER_TIMEOUT_MS } from './discovery.ts';

/** What a JWT access token must satisfy, besides a signature by one of the issuer's keys. */
export interface JwtPolicy {
  issuer: string;
  /** `aud` must contain one of these (RFC 8707: the resource, or the configured audience). */
  audiences: readonly string[];
  /** Accepted `alg` values; never `none`, never a symmetric one (the schema allows neither). */
  algorithms: readonly string[];
  clockSkewSeconds: number;
}

/**
 * After a refresh of the key set, how long before an unknown `kid` may cause
 * another: tokens naming made-up key ids cannot make the gateway fetch the
 * issuer's keys on every request.
 */
export const JWKS_COOLDOWN_MS = 30_000;

/**
 * After the issuer's metadata or keys could not be fetched, how long tokens
 * that need them are refused at once instead of asking again: an outage of the
 * authorization server is not passed on to it as one request per client request.
 */
export const AUTH_SERVER_RETRY_MS = 5_000;

/** How long a fetched key set is used before it is fetched again. */
export const JWKS_MAX_AGE_MS = 10 * 60_000;

/**
 * Most verdicts kept. A client sends the same access token with every request
 * until it expires; verifying its signature each time (60–200 µs on the
 * event loop's thread pool) is done once, and the claims reused while they
 * hold (never past `exp`, nor longer than a key set is kept).
 */
export const VERDICT_CACHE_ENTRIES = 10_000;

interface Verdict {
  payload: JWTPayload;
  /** Valid from and until, in ms, the clock skew included. */
  from: number;
  until: number;
}

function refused(code: ErrorCode, message: string): EnvelopeError {
  return new EnvelopeError(code, message);
}

/**
 * Why jose refused a token, as one of the table's codes. Anything that is not
 * a verdict on the token (the key set could not be fetched or read) is
 * AUTH_SERVER_UNAVAILABLE: fail closed, and say it is not the caller's fault.
 */
export function classifyJoseError(error: unknown): EnvelopeError {
  if (error instanceof EnvelopeError) return error;
  if (error instanceof errors.JWTExpired) return refused('TOKEN_EXPIRED', 'The access token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss')
      return refused('TOKEN_ISSUER', 'The access token was issued by another issuer');
    if (error.claim === 'aud')
      return refused('TOKEN_AUDIENCE', 'The access token was not issued for this resource');
    if (error.claim === 'nbf') return refused('TOKEN_EXPIRED', 'The access token is not valid yet');
    return refused('UNAUTHORIZED', `The access token's "${error.claim}" claim is missing or invalid`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return refused(
      'TOKEN_ALGORITHM',
      'The access token is signed with an algorithm this resource does not accept',
    );
  }
  if (
    error instanceof errors.JWSSignatureVerificationFailed ||
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys
  ) {
    return refused(
      'TOKEN_SIGNATURE',
      "The access token's signature does not verify against the issuer's keys",
    );
  }
  if (
    error instanceof errors.JWSInvalid ||
    error instanceof errors.JWTInvalid ||
    error instanceof errors.JOSENotSupported
  ) {
    return refused('UNAUTHORIZED', 'The access token is not a well-formed signed JWT');
  }
  return new EnvelopeError(
    'AUTH_SERVER_UNAVAILABLE',
    `The authorization server's keys could not be fetched: ${(error as Error)?.message ?? String(error)}`,
  );
}

/**
 * Verifies JWT access tokens against the issuer's key set, fetched from its
 * `jwks_uri` by jose's remote key set: cached for JWKS_MAX_AGE_MS, fetched
 * again when a token names a `kid` it does not hold (a key rotated in at the
 * issuer), at most once per cooldown.
 */
export class JwtVerifier {
  readonly #policy: JwtPolicy;
  readonly #jwksUri: () => Promise<string>;
  readonly #cooldownMs: number;
  readonly #now: () => number;
  /** Tokens that passed every check, by the token itself: memory only, never written anywhere. */
  readonly #verdicts = new Map<string, Verdict>();
  #keys: Promise<JWTVerifyGetKey> | undefined;
  /** Until when (ms) the last failure to reach the issuer is the answer, and what it was. */
  #unreachable: { until: number; error: EnvelopeError } | undefined;

  constructor(
    policy: JwtPolicy,
    jwksUri: () => Promise<string>,
    options: { cooldownMs?: number; now?: () => number } = {},
  ) {
    this.#policy = policy;
    this.#jwksUri = jwksUri;
    this.#cooldownMs = options.cooldownMs ?? JWKS_COOLDOWN_MS;
    this.#now = options.now ?? Date.now;
  }

  #keySet(): Promise<JWTVerifyGetKey> {
    if (!this.#keys) {
      this.#keys = this.#jwksUri().then((uri) =>
        createRemoteJWKSet(new URL(uri), {
          cooldownDuration: this.#cooldownMs,
          cacheMaxAge: JWKS_MAX_AGE_MS,
          timeoutDuration: AUTH_SERVER_TIMEOUT_MS,
        }),
      );
      // Where the keys are is asked again next time when it could not be found now.
      this.#keys.catch(() => {
        this.#keys = undefined;
      });
    }
    return this.#keys;
  }

  /** The token's claims once every check passed; else the EnvelopeError saying which failed. */
  async verify(token: string): Promise<JWTPayload> {
    const now = this.#now();
    const known = this.#verdicts.get(token);
    if (known) {
      if (now >= known.from && now < known.until) return known.payload;
      // Expired (or not valid yet): checked again, so the refusal says which.
      this.#verdicts.delete(token);
    }
    if (this.#unreachable && now < this.#unreachable.until) throw this.#unreachable.error;
    const policy = this.#policy;
    let payload: JWTPayload;
    try {
      const keys = await this.#keySet();
      ({ payload } = await jwtVerify(token, keys, {
        issuer: policy.issuer,
        audience: [...policy.audiences],
        algorithms: [...policy.algorithms],
        clockTolerance: policy.clockSkewSeconds,
        requiredClaims: ['exp'],
        currentDate: new Date(now),
      }));
    } catch (error) {
      const refusal = classifyJoseError(error);
      if (refusal.code === 'AUTH_SERVER_UNAVAILABLE') {
        this.#unreachable = { until: now + AUTH_SERVER_RETRY_MS, error: refusal };
      }
      throw refusal;
    }
    const skewMs = policy.clockSkewSeconds * 1000;
    this.#verdicts.set(token, {
      payload,
      from: typeof payload.nbf === 'number' ? payload.nbf * 1000 - skewMs : 0,
      until: Math.min((payload.exp as number) * 1000 + skewMs, now + JWKS_MAX_AGE_MS),
    });
    if (this.#verdicts.size > VERDICT_CACHE_ENTRIES) {
      this.#verdicts.delete(this.#verdicts.keys().next().value as string);
    }
    return payload;
  }
}
