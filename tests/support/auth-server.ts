import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload, SignJWT } from 'jose';
import Provider from 'oidc-provider';

/**
 * A real OAuth 2.1 authorization server for tests: oidc-provider on
 * 127.0.0.1, with resource indicators (RFC 8707) issuing JWT access tokens
 * whose `aud` is the resource asked for (opaque ones when `format` says so),
 * the client credentials grant, introspection and DPoP. Its signing key is the
 * test's too, so a test can sign the tokens this server would not issue
 * (expired, for another audience) with the very key it publishes.
 */

export const CLIENT_ID = 'mcp-test-client';
export const CLIENT_SECRET = 'mcp-test-client-secret-0123456789';
/** The gateway's own client, for introspection. */
export const GATEWAY_CLIENT_ID = 'mcp-gateway';
export const GATEWAY_CLIENT_SECRET = 'mcp-gateway-secret-0123456789abcdef';
/** Where the server also answers introspection requests. */
export const INTROSPECTION_ALIAS = '/alias/introspection';
export const SCOPES = ['mcp:tools', 'mcp:read', 'mcp:pro', 'mcp:admin'];

interface SigningKey {
  kid: string;
  privateJwk: JWK;
}

export interface AuthServer {
  issuer: string;
  /** The resource tokens may be asked for (the gateway's), set once it listens. */
  resource: string;
  /** `jwt` (default) or `opaque` access tokens. */
  format: 'jwt' | 'opaque';
  /** The key tokens are signed with now. */
  readonly key: SigningKey;
  /** Signs claims with the server's current key (or `key`), as the server would: `iss`, `iat`, `jti` filled. */
  sign(claims: JWTPayload, options?: { header?: Record<string, unknown>; key?: SigningKey }): Promise<string>;
  /** A new signing key, published beside the old one and used from now on (the server restarts with both). */
  rotate(): Promise<SigningKey>;
  /** A signing key the server never published. */
  strangerKey(): Promise<SigningKey>;
  /** Answer 503 to everything (metadata, keys, tokens) until set back. */
  down: boolean;
  /**
   * Claims the server adds to the access tokens it issues from now on
   * (oidc-provider's `extraTokenClaims`), as an identity provider adds a
   * user's groups or role; default none.
   */
  extraClaims: Record<string, unknown>;
  /** The path of every request it was sent, in order. */
  readonly requests: string[];
  /** Access tokens issued by the client credentials grant, as the SDK would ask. */
  clientCredentials(scope: string, options?: { dpop?: string }): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

async function newKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomUUID();
  return { kid, privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' } };
}

export async function startAuthServer(): Promise<AuthServer> {
  const keys: SigningKey[] = [await newKey()];
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const state = {
    resource: '',
    format: 'jwt' as 'jwt' | 'opaque',
    down: false,
    extraClaims: {} as Record<string, unknown>,
  };
  let handler: ReturnType<Provider['callback']>;

  const build = (): void => {
    // Newest key first: oidc-provider signs with the first key of an algorithm.
    const provider = new Provider(issuer, {
      ttl: { ClientCredentials: 300 },
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
          token_endpoint_auth_method: 'client_secret_basic',
          id_token_signed_response_alg: 'ES256',
          scope: SCOPES.join(' '),
        },
        {
          client_id: GATEWAY_CLIENT_ID,
          client_secret: GATEWAY_CLIENT_SECRET,
          grant_types: [],
          redirect_uris: [],
          response_types: [],
          token_endpoint_auth_method: 'client_secret_basic',
          id_token_signed_response_alg: 'ES256',
        },
      ],
      jwks: { keys: [...keys].reverse().map((key) => key.privateJwk) },
      extraTokenClaims: () => ({ ...state.extraClaims }),
      scopes: SCOPES,
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        dPoP: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => state.resource,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (indicator !== state.resource) throw new Provider.errors.InvalidTarget();
            return {
              scope: SCOPES.join(' '),
              audience: indicator,
              accessTokenTTL: 300,
              accessTokenFormat: state.format,
              ...(state.format === 'jwt' ? { jwt: { sign: { alg: 'ES256' } } } : {}),
            };
          },
        },
      },
    });
    handler = provider.callback();
  };
  build();
  const requests: string[] = [];
  http.on('request', (req, res) => {
    requests.push(req.url ?? '/');
    // The introspection endpoint under a second name, which no metadata gives: only a configured endpoint reaches it.
    if (req.url === INTROSPECTION_ALIAS) req.url = '/token/introspection';
    if (state.down) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('down');
      return;
    }
    handler(req, res);
  });

  const server: AuthServer = {
    issuer,
    requests,
    get resource() {
      return state.resource;
    },
    set resource(value: string) {
      state.resource = value;
    },
    get format() {
      return state.format;
    },
    set format(value: 'jwt' | 'opaque') {
      state.format = value;
    },
    get down() {
      return state.down;
    },
    get extraClaims() {
      return state.extraClaims;
    },
    set extraClaims(value: Record<string, unknown>) {
      state.extraClaims = value;
    },
    set down(value: boolean) {
      state.down = value;
    },
    get key() {
      return keys[keys.length - 1] as SigningKey;
    },
    async sign(claims, options = {}) {
      const key = options.key ?? server.key;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, iat: now, jti: randomUUID(), ...claims })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid, ...options.header })
        .sign(await importJWK(key.privateJwk, 'ES256'));
    },
    async rotate() {
      const key = await newKey();
      keys.push(key);
      build();
      return key;
    },
    strangerKey: newKey,
    async clientCredentials(scope, options = {}) {
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          ...(options.dpop ? { dpop: options.dpop } : {}),
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource: state.resource }),
      });
      const body = (await response.json()) as Record<string, unknown>;
      if (response.status !== 200) throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body;
    },
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
  return server;
}
