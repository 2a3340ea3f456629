import { randomUUID } from 'node:crypto';
import { base64url, calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** A client's DPoP key: the private half signs proofs, the thumbprint is what tokens are bound to (`cnf.jkt`). */
export interface DpopKey {
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  jwk: JWK;
  jkt: string;
}

export async function dpopKey(): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/** A DPoP proof (RFC 9449 §4.2) for a request with `token`; `POST`, now, a fresh `jti` unless told otherwise. */
export async function dpopProof(
  key: DpopKey,
  token: string,
  target: { htu: string; htm?: string; iat?: number },
): Promise<string> {
  const ath = base64url.encode(
    new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token))),
  );
  return new SignJWT({
    htm: target.htm ?? 'POST',
    htu: target.htu,
    iat: target.iat ?? Math.floor(Date.now() / 1000),
    jti: randomUUID(),
    ath,
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}
