/**
 * The columns of `records` that exist only so the viewer can filter and page
 * quickly (migration 4): who called, whether the call failed, and its error
 * code. Each is a function of what the log commits to (the leaf's principal;
 * the record, and the envelope whose digest the leaf holds), so the log's
 * audit can recompute them and name a column changed behind the log's back.
 */
import { METHODS, type ProvRecord } from '../provenance/record.ts';

export interface IndexColumns {
  principal: string | null;
  /** `error` when the envelope carries errors[] or the record claims it captured errors; else `ok`. */
  outcome: 'ok' | 'error';
  /** The code of the envelope's first error, when the envelope was kept and names one. */
  error_code: string | null;
}

/** The names, as the audit reports a differing one. */
export const INDEX_COLUMN_NAMES = ['principal', 'outcome', 'error_code'] as const;

function firstErrorCode(envelope: Record<string, unknown> | null): string | null | undefined {
  const errors = envelope?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return undefined;
  const first: unknown = errors[0];
  const code =
    typeof first === 'object' && first !== null ? (first as Record<string, unknown>).code : undefined;
  return typeof code === 'string' ? code : null;
}

export function indexColumns(
  record: ProvRecord,
  envelope: Record<string, unknown> | null,
  principal: string | null,
): IndexColumns {
  const code = firstErrorCode(envelope);
  const failed = code !== undefined || (record.methods ?? []).includes(METHODS.errorsCapture);
  return { principal, outcome: failed ? 'error' : 'ok', error_code: code ?? null };
}
