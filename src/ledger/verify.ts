/**
 * Ledger verification: for each stored record, recompute its record digest
 * (catching rows edited after they were stored) and run the provenance
 * verifier on it, with the envelope it arrived in when there was one.
 */
import { computeRecordDigest } from '../provenance/integrity.ts';
import { type VerifyCheck, type VerifyCoverage, type VerifyOptions, verify } from '../provenance/verify.ts';
import type { Ledger, LedgerEntry } from './store.ts';

export interface LedgerEntryReport {
  seq: number;
  run_id: string;
  tool: string;
  record_digest: string;
  ok: boolean;
  /** What the record carries and what of it was checked (the provenance verifier's coverage). */
  coverage: VerifyCoverage;
  checks: VerifyCheck[];
}

export interface LedgerVerifyReport {
  ok: boolean;
  total: number;
  failed: number;
  entries: LedgerEntryReport[];
}

export async function verifyEntry(
  entry: LedgerEntry,
  options: VerifyOptions = {},
): Promise<LedgerEntryReport> {
  const recomputed = computeRecordDigest(entry.record).value;
  const stored: VerifyCheck =
    recomputed === entry.record_digest
      ? { check: 'ledger:record_digest', status: 'pass', message: 'stored digest matches the stored record' }
      : {
          check: 'ledger:record_digest',
          status: 'fail',
          code: 'DIGEST_MISMATCH',
          message: `record changed after it was stored: recomputed sha256:${recomputed}`,
        };
  const report = await verify(entry.envelope ?? entry.record, options);
  const checks = [stored, ...report.checks];
  return {
    seq: entry.seq,
    run_id: entry.run_id,
    tool: entry.tool,
    record_digest: entry.record_digest,
    ok: checks.every((check) => check.status !== 'fail'),
    // A row edited after it was stored fails even when the record carries no digest of its own.
    coverage: stored.status === 'fail' ? { ...report.coverage, verdict: 'failed' } : report.coverage,
    checks,
  };
}

/** Verifies the entries matching `key` (run id or digest), or every entry. */
export async function verifyLedger(
  ledger: Ledger,
  key?: string,
  options: VerifyOptions = {},
): Promise<LedgerVerifyReport> {
  const entries = key === undefined ? ledger.all() : ledger.show(key);
  const reports: LedgerEntryReport[] = [];
  for (const entry of entries) reports.push(await verifyEntry(entry, options));
  const failed = reports.filter((report) => !report.ok).length;
  return { ok: failed === 0, total: reports.length, failed, entries: reports };
}
