/**
 * Ledger verification: for each stored record, recompute its record digest
 * (catching rows edited after they were stored) and run the provenance
 * verifier on it, with the envelope it arrived in when there was one.
 *
 * What this does not prove: the gateway's records are neither signed nor
 * chained, so a rewrite that keeps each row self-consistent, deleted rows,
 * and edits to the tool, upstream and created_at columns (which no digest
 * covers) all pass.
 */
import { EnvelopeError } from '../errors/index.ts';
import { computeRecordDigest } from '../provenance/integrity.ts';
import {
  unreadableCoverage,
  type VerifyCheck,
  type VerifyCoverage,
  type VerifyOptions,
  type VerifyVerdict,
  verify,
} from '../provenance/verify.ts';
import type { Ledger, LedgerEntry, UnreadableRow } from './store.ts';

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

/** Records by what their verification established (`coverage.verdict`). */
export type LedgerVerdictCounts = Record<VerifyVerdict, number>;

export interface LedgerVerifyReport {
  /** No record failed, and there was a record to verify: an empty ledger is not ok. */
  ok: boolean;
  total: number;
  failed: number;
  /** Records whose digests or signature were checked and held (wholly or partially). */
  verified: number;
  counts: LedgerVerdictCounts;
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

/** The report for a row that could not be verified at all: it fails, and names itself. */
function unreadableReport(row: UnreadableRow): LedgerEntryReport {
  const check: VerifyCheck = {
    check: 'ledger:row',
    status: 'fail',
    code: row.error.code,
    message: row.error.message,
  };
  return {
    seq: row.seq,
    run_id: row.run_id,
    tool: row.tool,
    record_digest: row.record_digest,
    ok: false,
    coverage: unreadableCoverage(`row ${row.seq} could not be read: ${row.error.message}`),
    checks: [check],
  };
}

/**
 * Verifies the entries matching `key` (run id or digest), or every entry. A
 * row that cannot be read or verified fails on its own, naming its seq, run
 * id and digest; the other rows are still verified.
 */
export async function verifyLedger(
  ledger: Ledger,
  key?: string,
  options: VerifyOptions = {},
): Promise<LedgerVerifyReport> {
  const reports: LedgerEntryReport[] = [];
  for (const row of ledger.rows(key)) {
    if ('unreadable' in row) {
      reports.push(unreadableReport(row.unreadable));
      continue;
    }
    const { entry } = row;
    try {
      reports.push(await verifyEntry(entry, options));
    } catch (error) {
      // JSON that is not a record (an array, a string) makes the verifier throw: that is this row's failure only.
      const reason = error instanceof Error ? error.message : String(error);
      reports.push(
        unreadableReport({
          seq: entry.seq,
          run_id: entry.run_id,
          tool: entry.tool,
          record_digest: entry.record_digest,
          error: new EnvelopeError(
            error instanceof EnvelopeError ? error.code : 'LEDGER_CORRUPT',
            `row ${entry.seq} (run ${entry.run_id}, sha256:${entry.record_digest}) could not be verified: ${reason}`,
            { seq: entry.seq, run_id: entry.run_id, record_digest: entry.record_digest },
            { cause: error },
          ),
        }),
      );
    }
  }
  if (key !== undefined && reports.length === 0) {
    throw new EnvelopeError('LEDGER_RECORD_NOT_FOUND', `No record with run id or digest ${key}`, { key });
  }
  const counts: LedgerVerdictCounts = {
    verified: 0,
    partially_verified: 0,
    nothing_verified: 0,
    nothing_to_verify: 0,
    failed: 0,
  };
  for (const report of reports) counts[report.ok ? report.coverage.verdict : 'failed']++;
  const failed = reports.filter((report) => !report.ok).length;
  return {
    ok: failed === 0 && reports.length > 0,
    total: reports.length,
    failed,
    verified: counts.verified + counts.partially_verified,
    counts,
    entries: reports,
  };
}

/**
 * The closing line for people: how many records were verified, and what the
 * others were, so a record with nothing to check is never counted as checked.
 */
export function ledgerVerdictLine(report: LedgerVerifyReport): string {
  if (report.total === 0) return 'NOTHING VERIFIED: the ledger holds no records';
  const { counts } = report;
  const partly = counts.partially_verified > 0 ? ` (${counts.partially_verified} partially)` : '';
  const rest = [
    counts.nothing_verified > 0 ? `${counts.nothing_verified} with nothing verified` : '',
    counts.nothing_to_verify > 0 ? `${counts.nothing_to_verify} with nothing to verify` : '',
    counts.failed > 0 ? `${counts.failed} failed` : '',
  ].filter((part) => part !== '');
  const line = [`${report.verified} of ${report.total} records verified${partly}`, ...rest].join(', ');
  return report.verified === 0 && report.failed === 0 ? `NOTHING VERIFIED: ${line}` : line;
}
