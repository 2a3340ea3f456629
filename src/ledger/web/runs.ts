/**
 * The runs table's query: filters on the indexed columns (tool, upstream,
 * principal, outcome, error code, a time range) and keyset paging by seq,
 * newest first, so a page costs one index range however deep it is.
 */
import { EnvelopeError } from '../../errors/index.ts';
import type { Ledger } from '../store.ts';

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 50;

export interface RunsFilter {
  tool?: string;
  upstream?: string;
  principal?: string;
  outcome?: 'ok' | 'error';
  code?: string;
  /** ISO 8601 UTC bounds on created_at, inclusive. */
  from?: string;
  to?: string;
}

export interface RunsQuery extends RunsFilter {
  /** Rows older than this seq (the "older" link); else the newest. */
  before?: number;
  /** Rows newer than this seq (the "newer" link). */
  after?: number;
  limit?: number;
}

/** One row of the table, as the columns hold it. */
export interface RunRow {
  seq: number;
  run_id: string;
  tool: string;
  upstream: string | null;
  principal: string | null;
  outcome: string | null;
  error_code: string | null;
  created_at: string;
  record_digest: string;
}

export interface RunsPage {
  rows: RunRow[];
  /** Continue with `before` this seq, when older rows match. */
  older?: number;
  /** Continue with `after` this seq, when newer rows match. */
  newer?: number;
}

const FILTER_COLUMNS = [
  ['tool', 'tool'],
  ['upstream', 'upstream'],
  ['principal', 'principal'],
  ['outcome', 'outcome'],
  ['code', 'error_code'],
] as const;

const ROW_COLUMNS = 'seq, run_id, tool, upstream, principal, outcome, error_code, created_at, record_digest';

/**
 * The first seq whose created_at is at least `time` (`last`: the last seq at most it), by binary
 * search over the primary key: rows are stored in time order, so a time range is a seq range,
 * found in O(log n) reads without an index on created_at (which every append would pay for).
 */
function seqAt(ledger: Ledger, time: string, last: boolean): number {
  const db = ledger.database();
  const max = ledger.log().size();
  const at = db.prepare('SELECT created_at FROM records WHERE seq >= ? ORDER BY seq LIMIT 1');
  // The smallest seq in [1, max + 1] whose created_at is >= time (or > time, for `last`).
  let low = 1;
  let high = max + 1;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const row = at.get(mid) as { created_at: string } | undefined;
    const after = row === undefined || (last ? row.created_at > time : row.created_at >= time);
    if (after) high = mid;
    else low = mid + 1;
  }
  return last ? low - 1 : low;
}

function where(ledger: Ledger, filter: RunsFilter): { sql: string[]; params: Record<string, string> } {
  const sql: string[] = [];
  const params: Record<string, string> = {};
  for (const [name, column] of FILTER_COLUMNS) {
    const value = filter[name];
    if (value === undefined) continue;
    // Written out, so the partial index of failed calls applies (it cannot for a bound parameter).
    if (name === 'outcome' && value === 'error') {
      sql.push("outcome = 'error'");
      continue;
    }
    sql.push(`${column} = :${name}`);
    params[name] = value;
  }
  // The seq range first (what narrows the scan), the times themselves still checked.
  if (filter.from !== undefined) {
    sql.push(`seq >= ${seqAt(ledger, filter.from, false)}`, 'created_at >= :from');
    params.from = filter.from;
  }
  if (filter.to !== undefined) {
    sql.push(`seq <= ${seqAt(ledger, filter.to, true)}`, 'created_at <= :to');
    params.to = filter.to;
  }
  return { sql, params };
}

export function queryRuns(ledger: Ledger, query: RunsQuery): RunsPage {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new EnvelopeError('INVALID_INPUT', `A page holds 1 to ${MAX_PAGE_SIZE} rows, not ${limit}`, {
      limit,
    });
  }
  const db = ledger.database();
  const { sql, params } = where(ledger, query);
  const newerFirst = query.after === undefined;
  const bound = newerFirst
    ? query.before === undefined
      ? []
      : [`seq < ${Math.trunc(query.before)}`]
    : [`seq > ${Math.trunc(query.after as number)}`];
  const clause = (extra: string[]) => {
    const all = [...sql, ...extra];
    return all.length === 0 ? '' : `WHERE ${all.join(' AND ')}`;
  };
  const fetched = db
    .prepare(
      `SELECT ${ROW_COLUMNS} FROM records ${clause(bound)} ORDER BY seq ${newerFirst ? 'DESC' : 'ASC'} LIMIT ${limit + 1}`,
    )
    .all(params) as unknown as RunRow[];
  const more = fetched.length > limit;
  const rows = fetched.slice(0, limit);
  if (!newerFirst) rows.reverse();
  const first = rows[0]?.seq;
  const last = rows.at(-1)?.seq;
  const exists = (extra: string) =>
    db.prepare(`SELECT 1 AS found FROM records ${clause([extra])} LIMIT 1`).get(params) !== undefined;
  const page: RunsPage = { rows: rows.map((row) => ({ ...row, seq: Number(row.seq) })) };
  if (first !== undefined && last !== undefined) {
    const olderExist = newerFirst ? more : exists(`seq < ${Number(last)}`);
    const newerExist = newerFirst ? exists(`seq > ${Number(first)}`) : more;
    if (olderExist) page.older = Number(last);
    if (newerExist) page.newer = Number(first);
  } else if (query.before !== undefined || query.after !== undefined) {
    // Paged past the end: offer the way back.
    if (query.before !== undefined && exists(`seq >= ${Math.trunc(query.before)}`))
      page.newer = Math.trunc(query.before) - 1;
    if (query.after !== undefined && exists(`seq <= ${Math.trunc(query.after)}`))
      page.older = Math.trunc(query.after) + 1;
  }
  return page;
}

/** The latest `count` rows, for a summary elsewhere (the gateway's page). */
export function recentRuns(ledger: Ledger, count: number): RunRow[] {
  return queryRuns(ledger, { limit: count }).rows;
}
