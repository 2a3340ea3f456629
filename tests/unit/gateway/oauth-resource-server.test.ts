import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { AUTH_SERVER_RETRY_MS, JwtVerifier } from '../../../src/gateway/http/oauth/jwt.ts';
import { type OAuthOptions, OAuthResourceServer } from '../../../src/gateway/http/oauth/resource-server.ts';
import {
  type AuthServer,
  CLIENT_ID,
  GATEWAY_CLIENT_ID,
  GATEWAY_CLIENT_SECRET,
  startAuthServer,
} from '../../support/auth-server.ts';

/**
 * The resource server's checks against a real authorization server
 * (oidc-provider): tokens it issued, its key set found from its metadata, a
 * key rotated in picked up on the first token that names it, opaque tokens
 * introspected. The refusal vectors run through the gateway itself
 * (tests/gateway/oauth.test.ts).
 */

const RESOURCE = 'http://127.0.0.1:9/mcp';

let as: AuthServer;

function options(overrides: Partial<OAuthOptions> = {}): OAuthOptions {
  return {
    issuer: as.issuer,
    algorithms: ['RS256', 'ES256', 'EdDSA', 'PS256'],
    clockSkewSeconds: 30,
    requiredScopes: ['mcp:tools'],
    tiers: [{ scope: 'mcp:pro', tier: 'pro' }],
    defaultTier: 'community',
    dpop: 'off',
    ...overrides,
  };
}

function bearer(token: string) {
  return { scheme: 'bearer' as const, token, method: 'POST', url: RESOURCE };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(EnvelopeError);
  return (error as EnvelopeError).code;
}

beforeAll(async () => {
  as = await startAuthServer();
  as.resource = RESOURCE;
});

afterAll(async () => {
  await as.close();
});

describe('the OAuth resource server', () => {
  it('accepts an access token the authorization server issued for this resource, naming who holds it', async () => {
    const server = new OAuthResourceServer(options(), RESOURCE);
    const issued = await as.clientCredentials('mcp:tools mcp:pro');
    const { identity, tier } = await server.authenticate(bearer(issued.access_token as string));
    expect(tier).toBe('pro');
    expect(identity).toMatchObject({
      issuer: as.issuer,
      subject: CLIENT_ID,
      clientId: CLIENT_ID,
      resource: RESOURCE,
    });
    expect(identity.scopes.sort()).toEqual(['mcp:pro', 'mcp:tools']);
    expect(identity.expiresAt).toBeGreaterThan(Date.now() / 1000);
    expect(typeof identity.tokenId).toBe('string');
    // Without a tier scope, the default tier.
    const plain = await as.clientCredentials('mcp:tools');
    expect((await server.authenticate(bearer(plain.access_token as string))).tier).toBe('community');
  });

  it('picks up a key rotated in at the authorization server when a token names it', async () => {
    const server = new OAuthResourceServer(options({ jwksCooldownMs: 0 }), RESOURCE);
    const before = await as.sign({
      aud: RESOURCE,
      sub: 'alice',
      scope: 'mcp:tools',
      exp: Math.floor(Date.now() / 1000) + 60,
    });
    await server.authenticate(bearer(before));
    const rotated = await as.rotate();
    const after = await as.sign(
      { aud: RESOURCE, sub: 'alice', scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + 60 },
      { key: rotated },
    );
    expect((await server.authenticate(bearer(after))).identity.subject).toBe('alice');
    // A key the server never published is still refused after the refresh it causes.
    const stranger = await as.sign(
      { aud: RESOURCE, sub: 'mallory', scope: 'mcp:tools', exp: Math.floor(Date.now() / 1000) + 60 },
      { key: await as.strangerKey() },
    );
    expect(await refusal(server.authenticate(bearer(stranger)))).toBe('TOKEN_SIGNATURE');
  });

  it('reuses a verdict on a token seen before only while the token is valid', async () => {
    let now = Date.now();
    const verifier = new JwtVerifier(
      { issuer: as.issuer, audiences: [RESOURCE], algorithms: ['ES256'], clockSkewSeconds: 30 },
      async () => `${as.issuer}/jwks`,
      { now: () => now },
    );
    const exp = Math.floor(now / 1000) + 60;
    const token = await as.sign({ aud: RESOURCE, sub: 'alice', exp });
    expect((await verifier.verify(token)).sub).toBe('alice');
    // Seen again with the authorization server down: the cached verdict, no key needed.
    as.down = true;
    try {
      expect((await verifier.verify(token)).sub).toBe('alice');
    } finally {
      as.down = false;
    }
    // Past exp and the skew: refused, cached or not.
    now = (exp + 31) * 1000;
    expect(await refusal(verifier.verify(token))).toBe('TOKEN_EXPIRED');
  });

  it('refuses everyone while the authorization server cannot be reached, asking it again only after a while', async () => {
    let now = Date.now();
    const server = new OAuthResourceServer(options({ now: () => now }), RESOURCE);
    const token = await as.sign({
      aud: RESOURCE,
      sub: 'alice',
      scope: 'mcp:tools',
      exp: Math.floor(Date.now() / 1000) + 60,
    });
    as.down = true;
    try {
      expect(await refusal(server.authenticate(bearer(token)))).toBe('AUTH_SERVER_UNAVAILABLE');
    } finally {
      as.down = false;
    }
    // Up again, but the outage is the answer for AUTH_SERVER_RETRY_MS, without asking.
    const asked = as.requests.length;
    expect(await refusal(server.authenticate(bearer(token)))).toBe('AUTH_SERVER_UNAVAILABLE');
    expect(as.requests.length).toBe(asked);
    // Then discovery is tried again.
    now += AUTH_SERVER_RETRY_MS;
    expect((await server.authenticate(bearer(token))).identity.subject).toBe('alice');
  });

  it('introspects opaque tokens, bound to this resource', async () => {
    const server = new OAuthResourceServer(
      options({ introspection: { clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET } }),
      RESOURCE,
    );
    as.format = 'opaque';
    try {
      const issued = await as.clientCredentials('mcp:tools');
      const token = issued.access_token as string;
      expect(token.split('.')).toHaveLength(1);
      const { identity } = await server.authenticate(bearer(token));
      expect(identity).toMatchObject({ subject: CLIENT_ID, clientId: CLIENT_ID, scopes: ['mcp:tools'] });
      expect(await refusal(server.authenticate(bearer('not-a-token-the-server-issued')))).toBe(
        'UNAUTHORIZED',
      );
      // Introspected for another audience: refused.
      const elsewhere = new OAuthResourceServer(
        options({ introspection: { clientId: GATEWAY_CLIENT_ID, clientSecret: GATEWAY_CLIENT_SECRET } }),
        'http://127.0.0.1:9/other',
      );
      expect(await refusal(elsewhere.authenticate(bearer(token)))).toBe('TOKEN_AUDIENCE');
    } finally {
      as.format = 'jwt';
    }
  });

  it('publishes its metadata and challenges with it', () => {
    const server = new OAuthResourceServer(options({ dpop: 'allowed' }), RESOURCE);
    expect(server.metadataUrl).toBe('http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp');
    expect(server.metadata()).toMatchObject({
      resource: RESOURCE,
      authorization_servers: [as.issuer],
      scopes_supported: ['mcp:tools', 'mcp:pro'],
      bearer_methods_supported: ['header'],
      dpop_bound_access_tokens_required: false,
    });
    const challenge = server.challenge(new EnvelopeError('INSUFFICIENT_SCOPE', 'needs "more"'));
    expect(challenge).toBe(
      'Bearer error="insufficient_scope", error_description="needs \\"more\\"", scope="mcp:tools", ' +
        'resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", DPoP algs="RS256 ES256 EdDSA PS256"',
    );
    expect(server.challenge(new EnvelopeError('FORBIDDEN', 'origin'))).toBeUndefined();
  });
});
