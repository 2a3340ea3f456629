import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  describeErrorCode,
  EnvelopeError,
  ERROR_CODES,
  isEnvelopeError,
  isKnownErrorCode,
  lookupErrorCode,
  toJsonRpcError,
} from '../../../src/errors/index.ts';

describe('error table', () => {
  it('every code has an HTTP status, a JSON-RPC code and a retriable flag, once', () => {
    const seen = new Set<string>();
    for (const spec of ERROR_CODES) {
      expect(seen.has(spec.code)).toBe(false);
      seen.add(spec.code);
      expect(spec.httpStatus).toBeGreaterThanOrEqual(400);
      expect(spec.httpStatus).toBeLessThan(600);
      expect(Number.isInteger(spec.jsonRpcCode)).toBe(true);
      expect(spec.jsonRpcCode).toBeLessThan(-32000 + 1);
      expect(typeof spec.retriable).toBe('boolean');
      expect(spec.message.length).toBeGreaterThan(0);
      expect(Object.isFrozen(spec)).toBe(true);
    }
  });

  it('holds the validation spec table exactly', () => {
    const expected = {
      INVALID_INPUT: [400, -32602],
      INVALID_OUTPUT: [502, -32002],
      NOT_FOUND: [404, -32004],
      UNAUTHORIZED: [401, -32001],
      INTERNAL_ERROR: [500, -32603],
    };
    for (const [code, [http, rpc]] of Object.entries(expected)) {
      expect(lookupErrorCode(code)).toMatchObject({ httpStatus: http, jsonRpcCode: rpc });
    }
  });

  it('gives codes outside the table neutral defaults and keeps their spelling', () => {
    expect(isKnownErrorCode('TOOL.OWN_CODE')).toBe(false);
    expect(describeErrorCode('TOOL.OWN_CODE')).toMatchObject({ code: 'TOOL.OWN_CODE', httpStatus: 500 });
  });

  it('every code the sources throw is in the table', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.ts')) files.push(path);
      }
    };
    walk('src');
    const thrown = new Set<string>();
    for (const file of files) {
      for (const match of readFileSync(file, 'utf8').matchAll(/new EnvelopeError\(\s*'([^']+)'/g)) {
        thrown.add(match[1] as string);
      }
    }
    expect(thrown.size).toBeGreaterThan(10);
    for (const code of thrown) expect(isKnownErrorCode(code), code).toBe(true);
  });
});

describe('each wire its codes', () => {
  it('the 2026-07-28 wire uses no code its allocation reserves or retires; the 2025 wire keeps the table', () => {
    for (const spec of ERROR_CODES) {
      const modern = toJsonRpcError(spec.code, undefined, undefined, '2026-07-28');
      expect(modern.code === -32002 || (modern.code <= -32020 && modern.code >= -32099), spec.code).toBe(
        false,
      );
      expect(modern.data.canonical_code).toBe(spec.code);
      expect(toJsonRpcError(spec.code, undefined, undefined, '2025-11-25').code).toBe(spec.jsonRpcCode);
      expect(toJsonRpcError(spec.code).code).toBe(spec.jsonRpcCode);
    }
    expect(toJsonRpcError('RATE_LIMITED', undefined, undefined, '2026-07-28').code).toBe(-32009);
    expect(toJsonRpcError('INVALID_OUTPUT', undefined, undefined, '2026-07-28').code).toBe(-32008);
    expect(toJsonRpcError('RATE_LIMITED', undefined, undefined, '2025-11-25').code).toBe(-32029);
  });

  it('the moved codes are free on the 2026-07-28 wire: no other code of the table has them', () => {
    const taken = new Set(ERROR_CODES.map((spec) => spec.jsonRpcCode));
    expect(taken.has(-32008)).toBe(false);
    expect(taken.has(-32009)).toBe(false);
  });
});

describe('EnvelopeError and JSON-RPC mapping', () => {
  it('carries code, details, status and retriable', () => {
    const error = new EnvelopeError('RATE_LIMITED', undefined, { retry_after: 3 });
    expect(isEnvelopeError(error)).toBe(true);
    expect(error.message).toBe('Rate limit exceeded');
    expect(error.httpStatus).toBe(429);
    expect(error.retriable).toBe(true);
    expect(error.toJSON()).toEqual({
      code: 'RATE_LIMITED',
      message: 'Rate limit exceeded',
      details: { retry_after: 3 },
    });
    expect(new EnvelopeError('NOT_FOUND').toJSON()).toEqual({
      code: 'NOT_FOUND',
      message: 'Resource not found',
    });
  });

  it('toJsonRpcError carries data.canonical_code for every code', () => {
    for (const spec of ERROR_CODES) {
      const rpc = toJsonRpcError(spec.code, undefined, { pointer: '/a' });
      expect(rpc).toEqual({
        code: spec.jsonRpcCode,
        message: spec.message,
        data: { pointer: '/a', canonical_code: spec.code },
      });
    }
  });

  it('details cannot override canonical_code', () => {
    expect(toJsonRpcError('INVALID_INPUT', 'bad', { canonical_code: 'SPOOF' }).data.canonical_code).toBe(
      'INVALID_INPUT',
    );
  });
});
