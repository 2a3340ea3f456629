import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, type JWK, jwtVerify } from 'jose';
import { EnvelopeError } from '../../../errors/index.ts';

/** How old a DPoP proof's `iat` may be (RFC 9449 §11.1 leaves the window to the server). */
export const DPOP_PROOF_MAX_AGE_SECONDS = 300;
/** Most proof ids remembered at once; past it, new proofs are refused rather than old ids forgotten. */
export const DPOP_REPLAY_ENTRIES = 100_000;

/** What a proof must match: the request it came with and the token it presents. */
export interface DpopRequest {
  method: string;
  /** The request's URL without query or fragment, as the client addressed it. */
  url: string;
  token: string;
  /** The token's `cnf.jkt`: the thumbprint of the key the token is bound to. */
  jkt: string;
}

function invalid(message: string): EnvelopeError {
  return new EnvelopeError('DPOP_INVALID', message);
}

/** `htu` and the request's URL compared as RFC 9449 §4.3 says: no query or fragment, scheme and host in any case. */
function sameTarget(htu: string, url: string): boolean {
  let a: URL;
  let b: URL;
  try {
    a = new URL(htu);
    b = new URL(url);
  } catch {
    return false;
  }
  return a.origin === b.origin && a.pathname === b.pathname;
}

/**
 * Checks DPoP proofs (RFC 9449 §4.3): a `dpop+jwt` signed by the public key it
 * carries, with an allowed asymmetric algorithm, for this request's method and
 * URL, recent (`iat` within DPOP_PROOF_MAX_AGE_SECONDS, give or take the skew),
 * for this token (`ath`), by the key the token is bound to (`cnf.jkt`), and
 * never seen before (`jti`, remembered per key until the proof would be too old
 * anyway).
 */
export class DpopVerifier {
  readonly #algorithms: string[];
  readonly #skew: number;
  readonly #now: () => number;
  /** `<jkt> <jti>` → when the proof stops being acceptable anyway (ms). */
  readonly #seen = new Map<string, number>();

  constructor(algorithms: readonly string[], clockSkewSeconds: number, now: () => number = Date.now) {
    this.#algorithms = [...algorithms];
    this.#skew = clockSkewSeconds;
    this.#now = now;
  }

  async verify(proof: string | undefined, request: DpopRequest): Promise<void> {
    if (proof === undefined || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(proof)) {
      throw invalid('A DPoP-bound token needs exactly one DPoP proof header');
    }
    let payload: Record<string, unknown>;
    let jwk: JWK;
    try {
      const verified = await jwtVerify(proof, EmbeddedJWK, {
        typ: 'dpop+jwt',
        algorithms: this.#algorithms,
        maxTokenAge: DPOP_PROOF_MAX_AGE_SECONDS,
        clockTolerance: this.#skew,
        requiredClaims: ['jti', 'htm', 'htu', 'iat'],
        currentDate: new Date(this.#now()),
      });
      payload = verified.payload;
      jwk = decodeProtectedHeader(proof).jwk as JWK;
    } catch (error) {
      throw invalid(`The DPoP proof is not valid: ${(error as Error).message}`);
    }
    if (payload.htm !== request.method) throw invalid('The DPoP proof is for another HTTP method');
    if (typeof payload.htu !== 'string' || !sameTarget(payload.htu, request.url)) {
      throw invalid('The DPoP proof is for another URL');
    }
    const ath = createHash('sha256').update(request.token).digest('base64url');
    if (payload.ath !== ath) throw invalid('The DPoP proof is for another access token (ath)');
    if ((await calculateJwkThumbprint(jwk, 'sha256')) !== request.jkt) {
      throw invalid('The DPoP proof is signed by another key than the token is bound to (cnf.jkt)');
    }
    this.#remember(`${request.jkt} ${String(payload.jti)}`, payload.iat as number);
  }

  #remember(id: string, iat: number): void {
    const now = this.#now();
    const seen = this.#seen.get(id);
    if (seen !== undefined && seen > now) throw invalid('The DPoP proof was used before (jti replayed)');
    if (this.#seen.size >= DPOP_REPLAY_ENTRIES) {
      for (const [key, until] of this.#seen) if (until <= now) this.#seen.delete(key);
    }
    // Fail closed: forgetting a live id would let its proof be replayed.
    if (this.#seen.size >= DPOP_REPLAY_ENTRIES)
      throw invalid('Too many recent DPoP proofs; try again shortly');
    this.#seen.set(id, (iat + DPOP_PROOF_MAX_AGE_SECONDS + this.#skew) * 1000);
  }
}
