import { createPublicKey, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { base64url, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLatestCallLogs } from '../../src/gateway/operations/call-log.ts';
import { type AuthServer, CLIENT_ID, CLIENT_SECRET, startAuthServer } from '../support/auth-server.ts';
import { type DpopKey, dpopKey, dpopProof } from '../support/dpop.ts';
import { type GatewayDir, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { initializeMessage, type Running, startListening } from './processes.ts';

/**
 * The gateway as an OAuth 2.1 resource server, against a real authorization
 * server (oidc-provider, tests/support/auth-server.ts): the official SDK
 * client (both eras) finds the authorization server through the gateway's 401
 * and its protected resource metadata, gets a token by client credentials and
 * calls a tool; rate limits count a subject's calls across its tokens; every refusal of tests/fixtures/oauth/access-token-vectors.json gets
 * its status, stable code and challenge; static tokens work beside OAuth; the
 * client's token never reaches an upstream; and with the authorization server
 * down nobody gets in.
 */

const PROBE = fileURLToPath(new URL('../fixtures/servers/settings-probe.ts', import.meta.url));
const VECTORS = JSON.parse(
  readFileSync(
    fileURLToPath(new URL('../fixtures/oauth/access-token-vectors.json', import.meta.url)),
    'utf8',
  ),
) as Vectors;
const STATIC_TOKEN = 'static-token-for-oauth-tests-0123456789';
const UPSTREAM_CREDENTIAL = 'Bearer upstream-own-credential-0123456789';

interface Vector {
  name: string;
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
  sign?: 'issuer' | 'stranger' | 'none' | 'hs256-public-key';
  tamper?: 'payload' | 'signature';
  token?: string;
  authorization?: 'absent';
  dpop?: { proof: string };
  bearerBound?: boolean;
  expect: { status: number; code?: string; challenge?: Record<string, string> };
}

interface Vectors {
  requiredScopes: string[];
  base: { header: Record<string, unknown>; claims: Record<string, unknown> };
  cases: Vector[];
}

let as: AuthServer;
let upstream: Running;
let gateway: Running;
let paths: GatewayDir;

function configFor(issuer: string, dpop: string): (config: Record<string, unknown>) => void {
  return (config) => {
    config.upstreams = [
      { name: 'probe', url: { url: upstream.url, headers: { authorization: UPSTREAM_CREDENTIAL } } },
    ];
    // Two echo calls per caller: whose calls count together is what the principal decides.
    config.rateLimits = [{ bucket: 'echo', tool: 'echo', limit: 2, windowMs: 3_600_000 }];
    config.auth = {
      tokens: [{ name: 'operator', token: STATIC_TOKEN, tier: 'enterprise' }],
      oauth: {
        issuer,
        requiredScopes: VECTORS.requiredScopes,
        tiers: [{ scope: 'mcp:pro', tier: 'pro' }],
        dpop,
      },
    };
  };
}

beforeAll(async () => {
  as = await startAuthServer();
  upstream = await startListening([PROBE, '--http']);
  paths = gatewayDir(configFor(as.issuer, 'allowed'));
  gateway = await startGatewayHttp(['--config', paths.config]);
  as.resource = gateway.url;
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.stop();
  await as?.close();
  removeGatewayDirs();
});

/** The parameters of the first challenge of a `WWW-Authenticate` value. */
function challengeOf(header: string | null): { scheme: string; params: Record<string, string> } | undefined {
  if (!header) return undefined;
  const scheme = header.split(' ')[0] as string;
  const firstEnd = header.search(/,\s*DPoP\s/);
  const first = firstEnd > 0 ? header.slice(0, firstEnd) : header;
  const params: Record<string, string> = {};
  for (const match of first.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
    params[match[1] as string] = (match[2] as string).replace(/\\(.)/g, '$1');
  }
  return { scheme, params };
}

async function post(headers: Record<string, string>): Promise<Response> {
  return fetch(gateway.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(initializeMessage()),
  });
}

function resolveValue(value: unknown, now: number): unknown {
  if (typeof value !== 'string') return value;
  if (value === '$issuer') return as.issuer;
  if (value === '$resource') return as.resource;
  if (value === '$kid') return as.key.kid;
  if (value === '$unique') return randomUUID();
  const time = /^\$now(?:([+-])(\d+))?$/.exec(value);
  if (time) return now + (time[1] === '-' ? -1 : 1) * Number(time[2] ?? 0);
  return value;
}

function resolveAll(members: Record<string, unknown>, now: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(members)) {
    if (value !== null) out[name] = resolveValue(value, now);
  }
  return out;
}

const encode = (value: unknown): string => base64url.encode(JSON.stringify(value));

/** A proof for the gateway's endpoint unless told otherwise. */
function proof(key: DpopKey, token: string, overrides: { htm?: string; htu?: string; iat?: number } = {}) {
  return dpopProof(key, token, { htu: gateway.url, ...overrides });
}

/** The token a vector describes, signed as it says. */
async function tokenOf(vector: Vector, cnf?: { jkt: string }): Promise<string> {
  if (vector.token !== undefined) return vector.token;
  const now = Math.floor(Date.now() / 1000);
  const claims = resolveAll({ ...VECTORS.base.claims, ...vector.claims, ...(cnf ? { cnf } : {}) }, now);
  const header = resolveAll({ ...VECTORS.base.header, ...vector.header }, now);
  let token: string;
  switch (vector.sign ?? 'issuer') {
    case 'issuer':
      token = await as.sign(claims, { header });
      break;
    case 'stranger': {
      const stranger = await as.strangerKey();
      token = await as.sign(claims, { header: { ...header, kid: stranger.kid }, key: stranger });
      break;
    }
    case 'none':
      token = `${encode({ ...header, alg: 'none' })}.${encode(claims)}.`;
      break;
    case 'hs256-public-key': {
      const { d: _d, ...publicJwk } = as.key.privateJwk;
      const pem = createPublicKey({ key: publicJwk as never, format: 'jwk' }).export({
        type: 'spki',
        format: 'pem',
      });
      token = await new SignJWT(claims)
        .setProtectedHeader({ ...header, alg: 'HS256' })
        .sign(new TextEncoder().encode(String(pem)));
      break;
    }
  }
  if (vector.tamper === 'payload') {
    const [head, , signature] = token.split('.');
    token = `${head}.${encode({ ...claims, scope: 'mcp:tools mcp:read mcp:admin' })}.${signature}`;
  } else if (vector.tamper === 'signature') {
    const [head, payload, signature] = token.split('.') as [string, string, string];
    token = `${head}.${payload}.${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
  }
  return token;
}

/** The requests a vector makes: one, or for a replayed proof the same one twice (the last is checked). */
async function requestsOf(vector: Vector): Promise<Record<string, string>[]> {
  if (vector.authorization === 'absent') return [{}];
  if (!vector.dpop) return [{ authorization: `Bearer ${await tokenOf(vector)}` }];
  const key = await dpopKey();
  const token = await tokenOf(vector, { jkt: key.jkt });
  if (vector.bearerBound) return [{ authorization: `Bearer ${token}` }];
  const bound = { authorization: `DPoP ${token}` };
  switch (vector.dpop.proof) {
    case 'valid':
      return [{ ...bound, dpop: await proof(key, token) }];
    case 'missing':
      return [bound];
    case 'replayed': {
      const once = { ...bound, dpop: await proof(key, token) };
      return [once, once];
    }
    case 'other-url':
      return [{ ...bound, dpop: await proof(key, token, { htu: new URL('/elsewhere', gateway.url).href }) }];
    case 'other-method':
      return [{ ...bound, dpop: await proof(key, token, { htm: 'GET' }) }];
    case 'other-key':
      return [{ ...bound, dpop: await proof(await dpopKey(), token) }];
    case 'other-token':
      return [{ ...bound, dpop: await proof(key, `${token}x`) }];
    case 'stale':
      return [{ ...bound, dpop: await proof(key, token, { iat: Math.floor(Date.now() / 1000) - 600 }) }];
    default:
      throw new Error(`unknown proof ${vector.dpop.proof}`);
  }
}

describe('the gateway as an OAuth resource server', () => {
  it('publishes protected resource metadata at both well-known locations, and points to it from a 401', async () => {
    const origin = new URL(gateway.url).origin;
    const expected = {
      resource: gateway.url,
      authorization_servers: [as.issuer],
      scopes_supported: ['mcp:tools', 'mcp:read', 'mcp:pro'],
      bearer_methods_supported: ['header'],
      dpop_bound_access_tokens_required: false,
    };
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      const response = await fetch(`${origin}${path}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject(expected);
    }
    const refused = await post({});
    expect(refused.status).toBe(401);
    expect(challengeOf(refused.headers.get('www-authenticate'))).toEqual({
      scheme: 'Bearer',
      params: {
        scope: 'mcp:tools mcp:read',
        resource_metadata: `${origin}/.well-known/oauth-protected-resource/mcp`,
      },
    });
    expect(refused.headers.get('www-authenticate')).toContain('DPoP algs="RS256 ES256 EdDSA PS256"');
  });

  it.each(['2025-11-25', '2026-07-28'])(
    'lets the SDK client (%s) discover the authorization server, get a token and call a tool; the token stays here',
    async (era) => {
      const client = new Client(
        { name: 'oauth-test', version: '1.0.0' },
        era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {},
      );
      const provider = new ClientCredentialsProvider({
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        expectedIssuer: as.issuer,
      });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(gateway.url), { authProvider: provider }),
      );
      try {
        const result = await client.callTool({ name: 'headers', arguments: {} });
        const seen = (result.structuredContent as { result: { authorization: unknown } }).result;
        // The upstream gets its own configured credential, never the client's access token.
        expect(seen.authorization).toBe(UPSTREAM_CREDENTIAL);
        expect(provider.tokens()?.access_token).toBeTypeOf('string');
      } finally {
        await client.close();
      }
    },
  );

  it('counts the calls of one subject together across its tokens, and apart from another subject', async () => {
    const tokenFor = (sub: string) =>
      as.sign({
        aud: gateway.url,
        sub,
        scope: 'mcp:tools mcp:read',
        exp: Math.floor(Date.now() / 1000) + 300,
      });
    const echo = async (token: string): Promise<string | undefined> => {
      const client = new Client({ name: 'oauth-limits', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(gateway.url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      try {
        const result = await client.callTool({ name: 'echo', arguments: { text: 'x' } });
        return (result.structuredContent as { errors?: { code: string }[] }).errors?.[0]?.code;
      } finally {
        await client.close();
      }
    };
    // Three tokens of alice (each a new token, as when one is renewed): her bucket holds two calls.
    expect(await echo(await tokenFor('alice'))).toBeUndefined();
    expect(await echo(await tokenFor('alice'))).toBeUndefined();
    expect(await echo(await tokenFor('alice'))).toBe('RATE_LIMITED');
    expect(await echo(await tokenFor('bob'))).toBeUndefined();
  });

  it('shows the server card to an access token, and refuses a bad one there as at the endpoint', async () => {
    const card = `${gateway.url}/server-card`;
    const token = await as.sign({
      aud: gateway.url,
      sub: 'user-1',
      scope: 'mcp:tools mcp:read',
      exp: Math.floor(Date.now() / 1000) + 300,
    });
    const shown = await fetch(card, { headers: { authorization: `Bearer ${token}` } });
    expect(shown.status).toBe(200);
    expect(shown.headers.get('cache-control')).toBe('private, no-cache');
    await shown.body?.cancel();
    const refused = await fetch(card, { headers: { authorization: `Bearer ${token}x` } });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('TOKEN_SIGNATURE');
    expect(challengeOf(refused.headers.get('www-authenticate'))?.params.error).toBe('invalid_token');
  });

  it("opens the ledger's pages to a static token, not to an access token without ledgerScope (they show every caller's calls)", async () => {
    const token = await as.sign({
      aud: gateway.url,
      sub: 'user-1',
      scope: 'mcp:tools mcp:read',
      exp: Math.floor(Date.now() / 1000) + 300,
    });
    const refused = await fetch(new URL('/ledger', gateway.url), {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(refused.status).toBe(401);
    await refused.body?.cancel();
    const shown = await fetch(new URL('/ledger', gateway.url), {
      headers: { authorization: `Bearer ${STATIC_TOKEN}` },
    });
    expect(shown.status).toBe(200);
    expect(await shown.text()).toContain('<h1>Runs</h1>');
  });

  it('accepts a static bearer token beside OAuth', async () => {
    const response = await post({ authorization: `Bearer ${STATIC_TOKEN}` });
    expect(response.status).toBe(200);
    await response.body?.cancel();
  });

  for (const vector of VECTORS.cases) {
    it(`vector: ${vector.name}`, async () => {
      const requests = await requestsOf(vector);
      let response: Response | undefined;
      for (const headers of requests) {
        await response?.body?.cancel();
        response = await post(headers);
        if (requests.length > 1 && headers !== requests.at(-1)) expect(response.status).toBe(200);
      }
      const last = response as Response;
      expect(last.status).toBe(vector.expect.status);
      if (vector.expect.status === 200) {
        await last.body?.cancel();
        return;
      }
      const body = (await last.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe(vector.expect.code);
      const challenge = challengeOf(last.headers.get('www-authenticate'));
      expect(challenge?.scheme).toBe('Bearer');
      expect(challenge?.params.resource_metadata).toBe(
        `${new URL(gateway.url).origin}/.well-known/oauth-protected-resource/mcp`,
      );
      for (const [name, value] of Object.entries(vector.expect.challenge ?? {})) {
        expect(challenge?.params[name]).toBe(value);
      }
      if (!vector.expect.challenge?.error) expect(challenge?.params.error).toBeUndefined();
      // Never the token in what is answered.
      const presented = requests.at(-1)?.authorization?.split(' ')[1];
      if (presented) expect(JSON.stringify(body)).not.toContain(presented);
    });
  }

  it('logs who called: the OAuth principal and its client, or the static token', async () => {
    await gateway.stop();
    const lines = readLatestCallLogs(join(paths.logs, 'gateway'));
    expect(
      lines.some(
        (line) => line.principal === `oauth:${as.issuer}#${CLIENT_ID}` && line.clientId === CLIENT_ID,
      ),
    ).toBe(true);
    expect(lines.filter((line) => line.principal === `oauth:${as.issuer}#alice`)).toHaveLength(3);
    for (const line of lines) expect(JSON.stringify(line)).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });
});

describe('with the authorization server down', () => {
  it('lets nobody in with an access token, while static tokens still work', async () => {
    const downPaths = gatewayDir(configFor(as.issuer, 'off'));
    const down = await startGatewayHttp(['--config', downPaths.config]);
    const previous = as.resource;
    as.resource = down.url;
    const token = await as.sign({
      aud: down.url,
      sub: 'user-1',
      scope: 'mcp:tools mcp:read',
      exp: Math.floor(Date.now() / 1000) + 300,
    });
    as.down = true;
    try {
      const refused = await fetch(down.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify(initializeMessage()),
      });
      expect(refused.status).toBe(503);
      // Not the caller's fault: no challenge to throw the token away, a time to come back.
      expect(refused.headers.get('www-authenticate')).toBeNull();
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
        'AUTH_SERVER_UNAVAILABLE',
      );
      const operator = await fetch(down.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${STATIC_TOKEN}`,
        },
        body: JSON.stringify(initializeMessage()),
      });
      expect(operator.status).toBe(200);
      await operator.body?.cancel();
    } finally {
      as.down = false;
      as.resource = previous;
      await down.stop();
    }
  });
});
