import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BearerAuth } from '../../../src/gateway/http/auth.ts';

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
