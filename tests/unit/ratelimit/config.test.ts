import { describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { resolveGatewayConfig } from '../../../src/gateway/operations/config.ts';

/** The gateway's `rateLimits` section as the configuration loader reads it. */

const upstreams = [
  { name: 'docs', stdio: { command: 'x' } },
  { name: 'files', stdio: { command: 'y' } },
];

function load(rateLimits: unknown): ReturnType<typeof resolveGatewayConfig> {
  return resolveGatewayConfig({ upstreams, ...(rateLimits === undefined ? {} : { rateLimits }) }, '/tmp');
}

function refusal(rateLimits: unknown): EnvelopeError {
  try {
    load(rateLimits);
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
  throw new Error('the configuration was accepted');
}

describe('rateLimits in the gateway configuration', () => {
  it('defaults to no rules, and each rule to one bucket per principal', () => {
    expect(load(undefined).rateLimits).toEqual([]);
    expect(load([{ bucket: 'mcp:fill', limit: 2, windowMs: 60_000, tool: 'fill' }]).rateLimits).toEqual([
      { bucket: 'mcp:fill', limit: 2, windowMs: 60_000, tool: 'fill', per: 'principal' },
    ]);
  });

  it('refuses a bucket named twice, and an upstream that is not configured, with the pointer', () => {
    const twice = refusal([
      { bucket: 'b', limit: 1, windowMs: 1000 },
      { bucket: 'b', limit: 2, windowMs: 1000, per: 'global' },
    ]);
    expect(twice).toMatchObject({ code: 'CONFIG_INVALID', details: { pointer: '/rateLimits/1/bucket' } });
    const unknown = refusal([{ bucket: 'b', limit: 1, windowMs: 1000, upstream: 'nowhere' }]);
    expect(unknown).toMatchObject({ code: 'CONFIG_INVALID', details: { pointer: '/rateLimits/0/upstream' } });
    expect(unknown.message).toContain('docs, files');
  });

  it('refuses what the schema does not admit', () => {
    for (const rule of [
      { bucket: 'b', limit: 0, windowMs: 1000 },
      { bucket: 'b', limit: 1.5, windowMs: 1000 },
      { bucket: 'b', limit: 1, windowMs: 0 },
      { bucket: '', limit: 1, windowMs: 1000 },
      { bucket: 'b', limit: 1, windowMs: 1000, per: 'tool' },
      { bucket: 'b', limit: 1, windowMs: 1000, extra: true },
      { limit: 1, windowMs: 1000 },
    ]) {
      expect(refusal([rule]).code, JSON.stringify(rule)).toBe('CONFIG_INVALID');
    }
  });
});
