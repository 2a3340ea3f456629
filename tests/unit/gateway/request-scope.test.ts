import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { Authenticator, authenticate, BearerAuth } from '../../../src/gateway/http/auth.ts';
import { retryAfterOnDenial } from '../../../src/gateway/http/rate-limit.ts';
import { authInfoOf, openScope, rateLimitedListener } from '../../../src/gateway/http/scope.ts';
import type { RateDecision } from '../../../src/ratelimit/gcra.ts';

const TOKEN = 'scope-token-0123456789';

/** Only what the guards read of a request and write to a response. */
function exchange(body: unknown, headers: Record<string, string> = {}) {
  const req = {
    method: 'POST',
    url: '/mcp?x=1',
    headers,
    socket: { remoteAddress: '127.0.0.9' },
  } as unknown as IncomingMessage;
  const set = new Map<string, string>();
  const res = {
    headersSent: false,
    setHeader(name: string, value: string) {
      set.set(name, value);
    },
  } as unknown as ServerResponse & { headersSent: boolean };
  const scope = openScope(req, res);
  scope.body = body;
  return { scope, res, set };
}

const denial: RateDecision = {
  allowed: false,
  limit: 1,
  remaining: 0,
  reset_at: '2030-01-01T00:00:00.000Z',
  bucket: 'b',
  retryAfterMs: 2500,
};

const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } };

describe('a request scope', () => {
  it('names its caller in AuthInfo, and carries nothing function-valued there', async () => {
    const { scope } = exchange(call, { authorization: `Bearer ${TOKEN}` });
    await authenticate(
      scope,
      new Authenticator(new BearerAuth([{ token: TOKEN, tier: 'pro', name: 'a' }]), false),
      false,
    );
    retryAfterOnDenial(scope);
    const authInfo = authInfoOf(scope);
    expect(scope.path).toBe('/mcp');
    expect(authInfo).toMatchObject({ clientId: 'a', extra: { principal: 'token:a', tier: 'pro' } });
    expect(Object.values(authInfo.extra ?? {}).some((value) => typeof value === 'function')).toBe(false);
    // The same object, as the SDK hands it to enforcement, finds the request's listener.
    expect(authInfoOf(scope)).toBe(authInfo);
    expect(rateLimitedListener(authInfo)).toBe(scope.onRateLimited);
    expect(rateLimitedListener({ ...authInfo })).toBeUndefined();
  });

  it('names an anonymous caller by its address', async () => {
    const { scope } = exchange(call);
    await authenticate(
      scope,
      new Authenticator(new BearerAuth([{ token: TOKEN, tier: 'pro' }]), false),
      false,
    );
    expect(authInfoOf(scope).extra).toEqual({ principal: 'anonymous:127.0.0.9' });
  });

  it('sets Retry-After on a denial of a lone tools/call while the head is unsent', () => {
    const { scope, set } = exchange(call);
    retryAfterOnDenial(scope);
    rateLimitedListener(authInfoOf(scope))?.(denial);
    expect(set.get('retry-after')).toBe('3');
  });

  it('sets none once the head is out, nor listens for a batch or another method', () => {
    const streaming = exchange(call);
    retryAfterOnDenial(streaming.scope);
    streaming.res.headersSent = true;
    streaming.scope.onRateLimited?.(denial);
    expect(streaming.set.size).toBe(0);
    for (const body of [[call], { ...call, method: 'tools/list' }]) {
      const { scope } = exchange(body);
      retryAfterOnDenial(scope);
      expect(rateLimitedListener(authInfoOf(scope))).toBeUndefined();
    }
  });
});
