import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convert, normalize } from '../../src/envelope/convert.ts';
import { detectDialect } from '../../src/envelope/detect.ts';
import type { Loss, ResultDialectId } from '../../src/envelope/dialect.ts';
import type { NormalizedResult } from '../../src/envelope/model.ts';
import { canonicalCode } from '../../src/errors/index.ts';
import { ENVELOPE_ARBITRARIES } from '../support/dialect-arbitraries.ts';

const DIALECTS = Object.keys(ENVELOPE_ARBITRARIES) as ResultDialectId[];

/**
 * The fields of a model, by JSON Pointer: what "lossless" is checked against.
 * The error code is compared in its canonical spelling (a dialect's own spelling
 * is translated on the way, by design); decodedFrom is bookkeeping.
 */
function fields(model: NormalizedResult): Map<string, unknown> {
  const out = new Map<string, unknown>();
  out.set('/ok', model.ok);
  out.set('/data', model.data ?? null);
  for (const key of ['tool', 'warnings', 'provenance'] as const) {
    if (model[key] !== undefined) out.set(`/${key}`, model[key]);
  }
  if (model.errors !== undefined) {
    out.set(
      '/errors',
      model.errors.map((entry) => ({ ...entry, code: canonicalCode(entry.code) })),
    );
  }
  if (model.error) {
    out.set('/error/code', model.error.code);
    out.set('/error/message', model.error.message);
    out.set('/error/retriable', model.error.retriable);
    if (model.error.details !== undefined) out.set('/error/details', model.error.details);
  }
  for (const [key, value] of Object.entries(model.meta ?? {})) {
    if (value !== undefined) out.set(`/meta/${key}`, value);
  }
  for (const [key, value] of Object.entries(model.extensions ?? {})) out.set(`/extensions/${key}`, value);
  return out;
}

/** errors[0] is the model's `error`: a loss reported on one covers the other. */
const alias = (path: string): string => path.replace(/^\/errors(\/0)?(?=\/|$)/, '/error');

const related = (a: string, b: string): boolean => {
  const [x, y] = [alias(a), alias(b)];
  return x === y || x.startsWith(`${y}/`) || y.startsWith(`${x}/`);
};

/** Every field of the source survives A → B → A unless a leg reported losing it. */
function expectNoSilentLoss(value: unknown, to: ResultDialectId, losses: Loss[], back: unknown): void {
  const before = fields(normalize(value).model);
  const after = fields(normalize(back).model);
  for (const [path, original] of before) {
    if (losses.some((loss) => related(loss.path, path))) continue;
    expect({ path, to, value: after.get(path) }).toEqual({ path, to, value: original });
  }
}

describe('dialect round trips over generated payloads', () => {
  for (const from of DIALECTS) {
    it(`generates values that are detected as ${from}`, () => {
      fc.assert(
        fc.property(ENVELOPE_ARBITRARIES[from], (value) => {
          const report = detectDialect(value);
          expect(report.reasons).toEqual([]);
          expect(report.dialect).toBe(from);
        }),
        { numRuns: 150 },
      );
    });

    for (const to of DIALECTS) {
      it(`${from} → ${to} → ${from} keeps every field it does not report as lost`, () => {
        fc.assert(
          fc.property(ENVELOPE_ARBITRARIES[from], (value) => {
            const there = convert(value, to);
            expect(there.from).toBe(from);
            expect(detectDialect(there.value).dialect).toBe(to);
            const back = convert(there.value, from);
            expectNoSilentLoss(value, to, [...there.losses, ...back.losses], back.value);
            // Both legs lossless: the very same value comes back.
            if (there.losses.length === 0 && back.losses.length === 0) expect(back.value).toEqual(value);
            if (from === to) expect(there.value).toBe(value);
          }),
          { numRuns: 60 },
        );
      });
    }
  }

  it('strict conversion throws CONVERSION_LOSSY exactly when losses are reported', () => {
    fc.assert(
      fc.property(fc.constantFrom(...DIALECTS), fc.constantFrom(...DIALECTS), fc.nat(), (from, to, seed) => {
        const [value] = fc.sample(ENVELOPE_ARBITRARIES[from], { numRuns: 1, seed });
        const loose = convert(value, to);
        if (loose.losses.length === 0) {
          expect(convert(value, to, { strict: true }).losses).toEqual([]);
        } else {
          expect(() => convert(value, to, { strict: true })).toThrow(
            expect.objectContaining({ code: 'CONVERSION_LOSSY' }),
          );
        }
      }),
      { numRuns: 200 },
    );
  });
});
