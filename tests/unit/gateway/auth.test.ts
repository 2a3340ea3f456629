import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { Authenticator, BearerAuth } from '../../../src/gateway/http/auth.ts';

describe('BearerAuth', () => {
  const token = 'pro-token-for-the-auth-test-0123456789';
  const auth = new BearerAuth([
    { name: 'ops', token, tier: 'pro' },
    { token: 'second-token-for-the-auth-test-987654', tier: 'community' },
  ]);

  it('names a token’s holder by the name it is configured under, never by anything computed from the token', () => {
    const principal = auth.authenticate(`Bearer ${token}`);
    expect(principal).toEqual({ tokenId: 'ops', tier: 'pro' });
    const hash = createHash('sha256').update(token).digest('hex');
    expect(hash).not.toContain(principal.tokenId);
    // Unnamed (the proxy's --token): its place among the tokens.
    expect(auth.authenticate('Bearer second-token-for-the-auth-test-987654').tokenId).toBe('token-2');
  });

  it('tells a missing token from a wrong one', () => {
    expect(() => auth.authenticate(undefined)).toThrow(expect.objectContaining({ code: 'AUTH_REQUIRED' }));
    expect(() => auth.authenticate('Bearer nope')).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
  });
});

describe('Authenticator', () => {
  const token = 'static-token-for-the-authenticator-0123456789';
  const request = (authorization?: string) =>
    ({ headers: authorization === undefined ? {} : { authorization }, method: 'POST' }) as IncomingMessage;

  it('with static tokens only, answers as BearerAuth did, challenging with a realm', async () => {
    const auth = new Authenticator(new BearerAuth([{ name: 'ops', token, tier: 'pro' }]), false);
    expect(auth.enabled).toBe(true);
    expect(await auth.authenticate(request(`Bearer ${token}`), '/mcp')).toEqual({
      tokenId: 'ops',
      tier: 'pro',
    });
    await expect(auth.authenticate(request(), '/mcp')).rejects.toMatchObject({ code: 'AUTH_REQUIRED' });
    await expect(auth.authenticate(request('Bearer nope'), '/mcp')).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
    expect(auth.challengeHeaders(new EnvelopeError('UNAUTHORIZED'))).toEqual({
      'www-authenticate': 'Bearer realm="mcp-envelope"',
    });
    expect(auth.challengeHeaders(new EnvelopeError('FORBIDDEN'))).toEqual({});
  });

  it('asks a client to come back later, unchallenged, when the authorization server is out of reach', () => {
    const auth = new Authenticator(new BearerAuth([]), true);
    expect(auth.enabled).toBe(true);
    expect(auth.challengeHeaders(new EnvelopeError('AUTH_SERVER_UNAVAILABLE'))).toEqual({
      'retry-after': '5',
    });
  });
});
