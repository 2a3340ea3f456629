/**
 * What checking an OAuth access token costs per request, against the static
 * bearer-token check it sits beside (the peer), both through the gateway's
 * Authenticator as the HTTP guard calls it: the JWT's signature verified with
 * the issuer's key already cached (jose's remote key set, fetched once from a
 * loopback server standing for the authorization server), then issuer,
 * audience, times, scopes and tier; the static token compared as a SHA-256
 * digest against every configured token (ten here). p50 and p99 in µs, one
 * call at a time, for each signature algorithm accepted by default: a token
 * sent again (as a client does until it expires: its verdict is cached) over
 * BENCH_N calls, and tokens each seen for the first time (signature verified)
 * over BENCH_FRESH. Target: a JWT adds under 50 µs at p50 over the static check.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Authenticator, BearerAuth } from '../src/gateway/http/auth.ts';
import { OAuthResourceServer } from '../src/gateway/http/oauth/resource-server.ts';
import { quantile } from './support.ts';

const N = Number(process.env.BENCH_N ?? 20_000);
const WARMUP = 2_000;
/** Tokens signed for the first-sight figures (RSA signing is slow). */
const FRESH = Number(process.env.BENCH_FRESH ?? 2_000);
const RESOURCE = 'http://127.0.0.1:9/mcp';
const ALGORITHMS = ['ES256', 'RS256', 'EdDSA', 'PS256'] as const;

const keys = await Promise.all(
  ALGORITHMS.map(async (alg) => {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    return { alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid: `key-${alg}`, alg, use: 'sig' } };
  }),
);

// The authorization server: its metadata and key set, on loopback.
const as = createServer((req, res) => {
  const body =
    req.url === '/jwks'
      ? { keys: keys.map(({ jwk }) => jwk) }
      : { issuer, jwks_uri: `${issuer}/jwks`, token_endpoint: `${issuer}/token` };
  res.writeHead(req.url === '/jwks' || req.url?.startsWith('/.well-known/') ? 200 : 404, {
    'content-type': 'application/json',
  });
  res.end(JSON.stringify(body));
});
await new Promise<void>((resolve) => as.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${(as.address() as AddressInfo).port}`;

const tokens = Array.from({ length: 10 }, (_, i) => ({
  token: `static-token-${i}-0123456789abcdef`,
  tier: 'pro',
}));
const statics = new BearerAuth(tokens);
const staticOnly = new Authenticator(statics, false);
const oauth = new Authenticator(statics, true);
oauth.attachOAuth(
  new OAuthResourceServer(
    {
      issuer,
      algorithms: ['RS256', 'ES256', 'EdDSA', 'PS256'],
      clockSkewSeconds: 30,
      requiredScopes: ['mcp:tools'],
      tiers: [{ scope: 'mcp:pro', tier: 'pro' }],
      defaultTier: 'community',
      dpop: 'off',
    },
    RESOURCE,
  ),
);

function request(authorization: string): IncomingMessage {
  return { headers: { authorization }, method: 'POST' } as unknown as IncomingMessage;
}

/** p50 and p99 of one call at a time, in µs: `reqs` in turn (after a warm-up on the first). */
async function measure(
  auth: Authenticator,
  reqs: IncomingMessage[],
  n: number,
): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < Math.min(WARMUP, n); i++) await auth.authenticate(reqs[0] as IncomingMessage, '/mcp');
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const req = reqs[i % reqs.length] as IncomingMessage;
    const start = performance.now();
    await auth.authenticate(req, '/mcp');
    times.push((performance.now() - start) * 1000);
  }
  times.sort((a, b) => a - b);
  return { p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

const us = (value: number): string => `${value.toFixed(1).padStart(7)} µs`;
const line = (label: string, cost: { p50: number; p99: number }, peer?: { p50: number }): string =>
  `${label.padEnd(48)} p50 ${us(cost.p50)}  p99 ${us(cost.p99)}` +
  (peer ? `  ratio ${(cost.p50 / peer.p50).toFixed(1)}x, adds ${(cost.p50 - peer.p50).toFixed(1)} µs` : '');

function sign(alg: string, privateKey: (typeof keys)[number]['privateKey']): Promise<string> {
  return new SignJWT({ aud: RESOURCE, sub: 'alice', client_id: 'bench', scope: 'mcp:tools mcp:pro' })
    .setProtectedHeader({ alg, typ: 'at+jwt', kid: `key-${alg}` })
    .setIssuer(issuer)
    .setIssuedAt()
    .setExpirationTime('1h')
    .setJti(crypto.randomUUID())
    .sign(privateKey);
}

const peer = await measure(staticOnly, [request(`Bearer ${tokens[9]?.token}`)], N);
console.log(line('static bearer token (10 configured), the peer:', peer));
let worstRepeated = 0;
for (const { alg, privateKey } of keys) {
  // A client sends one token with every request until it expires: its checks are done once.
  const repeated = await measure(oauth, [request(`Bearer ${await sign(alg, privateKey)}`)], N);
  worstRepeated = Math.max(worstRepeated, repeated.p50 - peer.p50);
  console.log(line(`JWT ${alg}, the same token again:`, repeated, peer));
  // Each token seen for the first time: its signature verified with the cached key.
  const fresh = await Promise.all(
    Array.from({ length: FRESH }, async () => request(`Bearer ${await sign(alg, privateKey)}`)),
  );
  console.log(
    line(`JWT ${alg}, first sight (signature verified):`, await measure(oauth, fresh, FRESH), peer),
  );
}
console.log(
  `most a token already seen adds at p50: ${worstRepeated.toFixed(1)} µs (target < 50 µs; ${N} calls each, ${FRESH} first sights)`,
);
as.close();
