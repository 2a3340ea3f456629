import { describe, expect, it } from 'vitest';
import { convert, normalize } from '../../src/envelope/convert.ts';
import { detectDialect } from '../../src/envelope/detect.ts';
import type { ResultDialectId } from '../../src/envelope/dialect.ts';
import { canonicalCode, describeErrorCode } from '../../src/errors/index.ts';
import { readToolResult } from '../../src/mcp/index.ts';
import { payloadText, realCases } from '../support/real-corpus.ts';

/** Tool results captured from real servers, read and converted by the library. */

const CASES = realCases();
const TARGETS: ResultDialectId[] = ['prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'];

describe('the real-server corpus', () => {
  it('holds captures of every server named in the fixtures README', () => {
    const servers = new Set(CASES.map((item) => item.server));
    expect([...servers].sort()).toEqual(['a11y', 'code-scalpel', 'openagreements']);
    expect(CASES.length).toBeGreaterThan(100);
  });

  for (const item of CASES) {
    describe(item.id, () => {
      it(`detects ${item.expect.dialect}${item.expect.version ? ` ${item.expect.version}` : ''}`, () => {
        const report = detectDialect(payloadText(item.result));
        expect(report.reasons).toEqual([]);
        expect(report.dialect).toBe(item.expect.dialect);
        expect(report.version).toBe(item.expect.version);
      });

      it('reads ok, code and retriable as the envelope says', () => {
        const read = readToolResult(item.result);
        expect(read.dialect).toBe(item.expect.dialect);
        expect(read.ok).toBe(item.expect.ok);
        if (read.ok) return;
        if (item.expect.code !== null) {
          expect(read.error.code).toBe(canonicalCode(item.expect.code));
          // Dialects without a flag (Code Scalpel, the accessibility suite) get the code's known default.
          const retriable = item.expect.retriable ?? describeErrorCode(read.error.code).retriable;
          expect(read.error.retriable).toBe(retriable);
        }
        if (item.expect.reset_at) expect(read.meta?.rate_limit?.reset_at).toBe(item.expect.reset_at);
      });

      if (item.expect.reset_at) {
        it('finds the rate metadata where the server put it', () => {
          expect(readToolResult(item.result).meta?.rate_limit).toMatchObject({
            reset_at: item.expect.reset_at,
            bucket: expect.any(String),
          });
        });
      }

      it('converts to every dialect and back with the payload intact', () => {
        const text = payloadText(item.result);
        const source = normalize(text).model;
        for (const to of TARGETS) {
          const there = convert(text, to, { tool: item.request.name });
          const back = normalize(there.value).model;
          const lostData = there.losses.find((loss) => loss.path === '/data');
          // The accessibility suite's result must be an object: anything else is carried as result.value.
          const carried = lostData?.reshaped === true;
          const data = carried ? (back.data as { value: unknown }).value : back.data;
          // A payload is carried intact unless the target reports that it could not.
          if (!lostData || carried) expect(data, to).toEqual(source.data);
          if (source.ok || to !== 'legacy') expect(back.ok, to).toBe(source.ok);
        }
      });
    });
  }
});
