import { describe, expect, it } from 'vitest';
import {
  canonicalCode,
  DIALECT_SPELLINGS,
  describeErrorCode,
  dialectSpelling,
  ERROR_CODES,
  lookupErrorCode,
} from '../../../src/errors/index.ts';

/** Every error code the seed documents name, in their own spellings. */
const SEED_CODES = [
  'INVALID_INPUT',
  'INVALID_OUTPUT',
  'NOT_FOUND',
  'UNAUTHORIZED',
  'INTERNAL_ERROR',
  'MISSING_REQUIRED_FIELDS',
  'INVALID_ARGUMENT',
  'AUTH_REQUIRED',
  'RATE_LIMITED',
  'TEMPLATE_NOT_FOUND',
  'DOWNLOAD_LINK_INVALID',
  'DOWNLOAD_LINK_EXPIRED',
  'DOWNLOAD_LINK_NOT_FOUND',
  'DOWNLOAD_ID_MISSING',
  'DOWNLOAD_ID_MALFORMED',
  'DOWNLOAD_SIGNATURE_INVALID',
  'DOWNLOAD_EXPIRED',
  'DOWNLOAD_NOT_FOUND',
  'DOWNLOAD_RENDER_FAILED',
  'ADAPTER.EXECUTION.FAILED',
  'FILE_NOT_FOUND',
  'CAPTURE_FAILED',
  'BUNDLE_NOT_FOUND',
  'ARTIFACT_NOT_FOUND',
  'INVALID_BUNDLE',
  'PROVENANCE_VERIFICATION_FAILED',
  'DIGEST_MISMATCH',
  'SCHEMA_VALIDATION_FAILED',
  'not_found',
];

describe('error code spellings per dialect', () => {
  it('has every code the seeds name, with HTTP status, JSON-RPC code and retriable', () => {
    for (const code of SEED_CODES) {
      const spec = lookupErrorCode(code);
      expect(spec, code).toBeDefined();
      expect(spec?.httpStatus).toBeGreaterThanOrEqual(400);
      expect(spec?.jsonRpcCode).toBeLessThan(0);
    }
    expect(describeErrorCode('RATE_LIMITED').retriable).toBe(true);
  });

  it('maps Code Scalpel spellings to canonical codes and back', () => {
    expect(canonicalCode('not_found', 'scalpel-v1')).toBe('NOT_FOUND');
    expect(dialectSpelling('NOT_FOUND', 'scalpel-v1')).toBe('not_found');
    expect(dialectSpelling('NOT_FOUND', 'hosted-v2')).toBe('NOT_FOUND');
    expect(canonicalCode('upgrade_required')).toBe('UPGRADE_REQUIRED');
    expect(describeErrorCode('timeout')).toMatchObject({ code: 'TIMEOUT', httpStatus: 504, retriable: true });
    for (const [canonical, spelling] of Object.entries(DIALECT_SPELLINGS['scalpel-v1'])) {
      expect(lookupErrorCode(canonical)?.code).toBe(canonical);
      expect(canonicalCode(spelling, 'scalpel-v1')).toBe(canonical);
    }
  });

  it('keeps a tool code that no table knows', () => {
    expect(canonicalCode('MY.TOOL.BROKE')).toBe('MY.TOOL.BROKE');
    expect(dialectSpelling('MY.TOOL.BROKE', 'scalpel-v1')).toBe('MY.TOOL.BROKE');
  });

  it('has one row per canonical code', () => {
    expect(new Set(ERROR_CODES.map((spec) => spec.code)).size).toBe(ERROR_CODES.length);
  });
});
