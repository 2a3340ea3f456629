import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  describeErrorCode,
  EnvelopeError,
  ERROR_CODES,
  type ErrorCode,
  isErrorCode,
  isKnownErrorCode,
  lookupErrorCode,
} from '../../../src/errors/index.ts';

describe('the ErrorCode union and the named table', () => {
  it('every ERROR_CODES entry round-trips through describeErrorCode', () => {
    expect(ERROR_CODES.length).toBeGreaterThan(0);
    for (const spec of ERROR_CODES) {
      expect(isErrorCode(spec.code), spec.code).toBe(true);
      expect(isKnownErrorCode(spec.code), spec.code).toBe(true);
      expect(lookupErrorCode(spec.code), spec.code).toBe(spec);
      expect(describeErrorCode(spec.code), spec.code).toEqual(spec);
      const error = new EnvelopeError(spec.code);
      expect(error.code).toBe(spec.code);
      expect(error.message).toBe(spec.message);
      expect(error.httpStatus).toBe(spec.httpStatus);
      expect(error.retriable).toBe(spec.retriable);
    }
  });

  it('isErrorCode accepts only canonical codes', () => {
    expect(isErrorCode('NOT_FOUND')).toBe(true);
    expect(isErrorCode('ADAPTER.EXECUTION.FAILED')).toBe(true);
    // A dialect spelling is understood by describeErrorCode but is not a canonical code.
    expect(isErrorCode('not_found')).toBe(false);
    expect(isErrorCode('NOT_A_REAL_CODE')).toBe(false);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode(404)).toBe(false);
    expect(isErrorCode(undefined)).toBe(false);
  });

  it('the union is enforced by the type checker', () => {
    expectTypeOf<'INVALID_INPUT'>().toExtend<ErrorCode>();
    expectTypeOf<EnvelopeError['code']>().toEqualTypeOf<ErrorCode>();
    // @ts-expect-error a misspelt or unknown code does not compile
    const unknown = new EnvelopeError('NOT_A_REAL_CODE', 'x');
    expect(unknown.code).toBe('NOT_A_REAL_CODE');
    // @ts-expect-error a dialect spelling is not a canonical code either
    expect(new EnvelopeError('not_found', 'x').code).toBe('not_found');
  });
});
