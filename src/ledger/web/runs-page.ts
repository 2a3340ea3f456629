/**
 * The runs page: the filter form, the table of calls (newest first) with each
 * row's cheap checks, and the links to older and newer pages. Reads its
 * filters from the query string and refuses values it cannot use with a
 * clear error rather than ignoring them.
 */
import type { KeyObject } from 'node:crypto';
import { EnvelopeError } from '../../errors/index.ts';
import type { Ledger, LedgerEntry } from '../store.ts';
import { type LatestCheckpoint, latestCheckpoint, rowChecks, STATE_LABEL } from './checks.ts';
import { escapeHtml as e, hrefPart } from './html.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, queryRuns, type RunRow, type RunsQuery } from './runs.ts';

const TEXT_FILTERS = ['tool', 'upstream', 'principal', 'code'] as const;

function positiveInteger(name: string, value: string): number {
  const number = Number(value);
  if (!/^[0-9]{1,15}$/.test(value) || !Number.isSafeInteger(number) || number < 1) {
    throw new EnvelopeError(
      'INVALID_INPUT',
      `${name} must be a positive integer, got ${JSON.stringify(value)}`,
      {
        parameter: name,
      },
    );
  }
  return number;
}

/** A time as the form's datetime-local control sends it (read as UTC), or any ISO 8601 time. */
function utcTime(name: string, value: string): string {
  const local = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.test(value);
  const time = new Date(local ? `${value}Z` : value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time.getTime())) {
    throw new EnvelopeError(
      'INVALID_INPUT',
      `${name} must be a time (YYYY-MM-DDTHH:MM, UTC), got ${JSON.stringify(value)}`,
      {
        parameter: name,
      },
    );
  }
  return time.toISOString();
}

/** The query string's filters and page position; an empty field is no filter. */
export function parseRunsQuery(search: URLSearchParams): RunsQuery {
  const get = (name: string) => {
    const value = search.get(name);
    return value === null || value === '' ? undefined : value;
  };
  const query: RunsQuery = {};
  for (const name of TEXT_FILTERS) {
    const value = get(name);
    if (value !== undefined) query[name] = value;
  }
  const outcome = get('outcome');
  if (outcome !== undefined) {
    if (outcome !== 'ok' && outcome !== 'error') {
      throw new EnvelopeError('INVALID_INPUT', `outcome is ok or error, got ${JSON.stringify(outcome)}`, {
        parameter: 'outcome',
      });
    }
    query.outcome = outcome;
  }
  const from = get('from');
  if (from !== undefined) query.from = utcTime('from', from);
  const to = get('to');
  if (to !== undefined) query.to = utcTime('to', to);
  const before = get('before');
  if (before !== undefined) query.before = positiveInteger('before', before);
  const after = get('after');
  if (after !== undefined) query.after = positiveInteger('after', after);
  const limit = get('limit');
  if (limit !== undefined) {
    query.limit = positiveInteger('limit', limit);
    if (query.limit > MAX_PAGE_SIZE) {
      throw new EnvelopeError('INVALID_INPUT', `limit is at most ${MAX_PAGE_SIZE}, got ${limit}`, {
        parameter: 'limit',
      });
    }
  }
  return query;
}

/** The query string of a page: the filters as given, plus its position. */
function pageHref(search: URLSearchParams, position: { before?: number; after?: number }): string {
  const next = new URLSearchParams();
  for (const [name, value] of search) {
    if (name !== 'before' && name !== 'after' && value !== '') next.append(name, value);
  }
  if (position.before !== undefined) next.set('before', String(position.before));
  if (position.after !== undefined) next.set('after', String(position.after));
  const text = next.toString();
  return `/ledger${text === '' ? '' : `?${text}`}`;
}

/** The stored entry behind a row (found through its run id, the indexed way in). */
export function entryOf(ledger: Ledger, row: RunRow): LedgerEntry | undefined {
  return ledger.find(row.run_id).find((entry) => entry.seq === row.seq);
}

export function recordHref(runId: string): string {
  return `/ledger/runs/${hrefPart(runId)}`;
}

function stateCell(state: string): string {
  return `<td class="state state-${e(state.replace(/\s+/g, '-').toLowerCase())}">${e(state)}</td>`;
}

export function runsRows(
  ledger: Ledger,
  rows: readonly RunRow[],
  publicKey: KeyObject | undefined,
  latest: LatestCheckpoint | undefined,
): string {
  return rows
    .map((row) => {
      const entry = entryOf(ledger, row);
      const checks = entry ? rowChecks(ledger, entry, publicKey, latest) : undefined;
      const cells = checks
        ? [checks.digest, checks.signature, checks.inclusion].map((state) => stateCell(STATE_LABEL[state]))
        : [stateCell('FAIL'), stateCell('FAIL'), stateCell('FAIL')];
      return `<tr>
<td><time datetime="${e(row.created_at)}">${e(row.created_at)}</time></td>
<th scope="row"><a href="${e(recordHref(row.run_id))}">${e(row.run_id)}</a></th>
<td>${e(row.upstream ?? '—')}</td>
<td><code>${e(row.tool)}</code></td>
<td>${e(row.principal ?? '—')}</td>
<td class="outcome-${row.outcome === 'error' ? 'error' : 'ok'}">${e(row.outcome ?? '—')}</td>
<td>${row.error_code ? `<code>${e(row.error_code)}</code>` : '—'}</td>
${cells.join('\n')}
</tr>`;
    })
    .join('\n');
}

function field(name: string, label: string, value: string | null, type = 'text'): string {
  return `<div class="field"><label for="f-${name}">${e(label)}</label><input id="f-${name}" name="${name}" type="${type}" value="${e(value ?? '')}"></div>`;
}

function filterForm(search: URLSearchParams): string {
  const outcome = search.get('outcome') ?? '';
  const option = (value: string, label: string) =>
    `<option value="${value}"${outcome === value ? ' selected' : ''}>${label}</option>`;
  return `<form method="get" action="/ledger" class="filters" aria-labelledby="filters-title">
<h2 id="filters-title">Filter</h2>
<div class="fields">
${field('tool', 'Tool', search.get('tool'))}
${field('upstream', 'Upstream', search.get('upstream'))}
${field('principal', 'Principal', search.get('principal'))}
<div class="field"><label for="f-outcome">Outcome</label><select id="f-outcome" name="outcome">${option('', 'any')}${option('ok', 'ok')}${option('error', 'error')}</select></div>
${field('code', 'Error code', search.get('code'))}
${field('from', 'From (UTC)', search.get('from'), 'datetime-local')}
${field('to', 'To (UTC)', search.get('to'), 'datetime-local')}
${field('limit', `Rows per page (at most ${MAX_PAGE_SIZE})`, search.get('limit') ?? String(DEFAULT_PAGE_SIZE), 'number')}
</div>
<button type="submit">Apply</button> <a href="/ledger">Clear</a>
</form>`;
}

function checkpointLine(latest: LatestCheckpoint | undefined, size: number): string {
  if (latest === undefined)
    return `<p>The log holds ${size} entries; no checkpoint has been written, so inclusion is not checked.</p>`;
  const { checkpoint, signed, consistent } = latest;
  const signedText =
    signed === null
      ? 'its signature is not checked here (no public key given)'
      : signed
        ? 'signed by the configured key'
        : 'NOT signed by the configured key';
  return `<p>The log holds ${size} entries. Latest checkpoint: <code>${e(checkpoint.origin)}</code> at size ${checkpoint.size}, ${e(signedText)}${
    consistent ? '' : '; <strong>the log no longer has its root hash</strong>'
  }.</p>`;
}

export function renderRunsPage(
  ledger: Ledger,
  search: URLSearchParams,
  publicKey: KeyObject | undefined,
): { title: string; main: string } {
  const query = parseRunsQuery(search);
  const page = queryRuns(ledger, query);
  const latest = latestCheckpoint(ledger, publicKey);
  const nav: string[] = [];
  if (page.newer !== undefined)
    nav.push(`<a href="${e(pageHref(search, { after: page.newer }))}" rel="prev">Newer</a>`);
  if (page.older !== undefined)
    nav.push(`<a href="${e(pageHref(search, { before: page.older }))}" rel="next">Older</a>`);
  const table =
    page.rows.length === 0
      ? '<p>No calls match.</p>'
      : `<div class="table-wrap"><table>
<caption>Calls, newest first</caption>
<thead><tr><th scope="col">Time (UTC)</th><th scope="col">Run</th><th scope="col">Upstream</th><th scope="col">Tool</th><th scope="col">Principal</th><th scope="col">Outcome</th><th scope="col">Error code</th><th scope="col">Record digest</th><th scope="col">Signature</th><th scope="col">In checkpoint</th></tr></thead>
<tbody>
${runsRows(ledger, page.rows, publicKey, latest)}
</tbody>
</table></div>`;
  return {
    title: 'Runs — mcp-envelope ledger',
    main: `<h1>Runs</h1>
${checkpointLine(latest, ledger.log().size())}
${filterForm(search)}
<section aria-labelledby="runs-title"><h2 id="runs-title">Calls</h2>
${table}
${nav.length ? `<nav aria-label="Pages" class="pages">${nav.join(' ')}</nav>` : ''}
</section>`,
  };
}
