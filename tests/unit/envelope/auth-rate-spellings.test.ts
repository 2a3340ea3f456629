import { describe, expect, it } from 'vitest';
import { codecFor } from '../../../src/envelope/dialects/index.ts';
import type { NormalizedResult, RateLimitInfo } from '../../../src/envelope/model.ts';
import { describeErrorCode } from '../../../src/errors/index.ts';
import { readToolResult } from '../../../src/mcp/read-tool-result.ts';
import { composeToolResult } from '../../../src/mcp/tool-result.ts';

/**
 * The auth and rate-limit errors in every result dialect that carries errors:
 * encoded from the model and decoded back, each keeps its canonical code and
 * retriable flag, and a rate-limited error keeps its rate metadata (reset_at,
 * the bucket) so that a client knows when to come back.
 */

const DIALECTS = ['prov-v0.1', 'hosted-v2', 'scalpel-v1', 'a11y-v0.1'] as const;
const CODES = ['RATE_LIMITED', 'AUTH_REQUIRED', 'UNAUTHORIZED'] as const;
const RATE: RateLimitInfo = {
  limit: 2,
  remaining: 0,
  reset_at: '2026-11-24T09:43:00.000Z',
  bucket: 'mcp:fill',
};

function failure(code: (typeof CODES)[number]): NormalizedResult {
  return {
    ok: false,
    tool: 'fill_template',
    data: null,
    error: { code, message: `${code} happened`, retriable: describeErrorCode(code).retriable },
    ...(code === 'RATE_LIMITED' ? { meta: { rate_limit: RATE } } : {}),
  };
}

describe('auth and rate-limit errors in every dialect', () => {
  it('the canonical table says which are retriable', () => {
    expect(CODES.map((code) => describeErrorCode(code).retriable)).toEqual([true, false, false]);
  });

  for (const dialect of DIALECTS) {
    for (const code of CODES) {
      it(`${code} round-trips through ${dialect}`, () => {
        const codec = codecFor(dialect);
        const model = failure(code);
        const encoded = codec.encode(model, { tool: 'fill_template', requestId: 'req_abc123' });
        expect(encoded.losses.filter((loss) => loss.path.startsWith('/error'))).toEqual([]);
        expect(codec.detect(encoded.value).match).toBe(true);
        const decoded = codec.decode(encoded.value);
        expect(decoded.ok).toBe(false);
        expect(decoded.error?.code).toBe(code);
        expect(decoded.error?.retriable).toBe(model.error?.retriable);
        if (code === 'RATE_LIMITED') {
          expect(encoded.losses.filter((loss) => loss.path.startsWith('/meta/rate_limit'))).toEqual([]);
          expect(decoded.meta?.rate_limit).toEqual(RATE);
          // The flat or nested metadata is the model's, not left behind in the details as well.
          expect(decoded.error?.details?.rate_limit).toBeUndefined();
          expect(decoded.error?.details?.reset_at).toBeUndefined();
        }
        // Encoding the decoded model again gives the same envelope.
        expect(codec.encode(decoded, { tool: 'fill_template' }).value).toEqual(encoded.value);
      });

      it(`${code} in ${dialect} reads back through readToolResult`, () => {
        const { value } = codecFor(dialect).encode(failure(code), { tool: 'fill_template' });
        const read = readToolResult(
          composeToolResult({ envelope: value as Record<string, unknown>, isError: true, meta: {} }),
        );
        expect(read.dialect).toBe(dialect);
        expect(read.ok).toBe(false);
        if (read.ok) return;
        expect(read.error.code).toBe(code);
        expect(read.error.retriable).toBe(code === 'RATE_LIMITED');
        if (code === 'RATE_LIMITED') expect(read.meta?.rate_limit?.reset_at).toBe(RATE.reset_at);
      });
    }
  }

  it('Code Scalpel writes rate metadata in error_details, and a success still reports it as a loss', () => {
    const codec = codecFor('scalpel-v1');
    const { value } = codec.encode(failure('RATE_LIMITED'));
    expect((value as { error: { error_details: unknown } }).error.error_details).toEqual({
      rate_limit: RATE,
    });
    const ok = codec.encode({ ok: true, data: { a: 1 }, meta: { rate_limit: RATE } });
    expect(ok.losses.map((loss) => loss.path)).toContain('/meta/rate_limit');
  });

  it('the accessibility suite writes rate metadata as a member of its error', () => {
    const { value } = codecFor('a11y-v0.1').encode(failure('RATE_LIMITED'));
    expect((value as { error: Record<string, unknown> }).error).toMatchObject({
      code: 'RATE_LIMITED',
      rate_limit: RATE,
    });
  });

  it('a legacy payload cannot say an error; the legacy codec reports it rather than dropping it silently', () => {
    const { losses } = codecFor('legacy').encode(failure('RATE_LIMITED'));
    expect(losses.map((loss) => loss.path)).toEqual(
      expect.arrayContaining(['/ok', '/error', '/meta/rate_limit']),
    );
  });
});
