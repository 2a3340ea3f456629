import type { Tool } from '@modelcontextprotocol/server';
import type { Ledger } from '../../ledger/index.ts';
import { renderPage } from '../../ledger/web/html.ts';
import { escapeHtml, type RunRow, recentRuns, SECURITY_HEADERS } from '../../ledger/web/index.ts';
import { accessPrincipalOf } from '../access/principal.ts';
import type { UpstreamFleet } from '../relay/upstream-fleet.ts';
import type { UpstreamPool } from '../relay/upstream-pool.ts';
import type { Upstream } from '../upstreams/upstream.ts';
import { accepts, authInfoOf, poolKeyOf, type RequestScope } from './scope.ts';

export interface PageTool {
  name: string;
  description?: string;
  /** What is wrong with it, when its schemas cannot be compiled. */
  defect?: string;
}

/**
 * An upstream as the page may know it. A stdio upstream's command line is
 * not even passed in: it names files and often carries secrets in arguments.
 */
export type PageUpstream = { name: string; state?: string } & (
  | { kind: 'stdio' }
  | { kind: 'http'; url: string }
);

export interface PageInfo {
  title: string;
  mode: string;
  endpoint: string;
  upstreams: readonly PageUpstream[];
  tools: readonly PageTool[];
  authRequired: boolean;
  /** The ledger's latest calls, when the gateway keeps a ledger (its pages are then at /ledger). */
  recent?: readonly RunRow[];
}

export { escapeHtml };

/** How many of the ledger's latest calls the page lists. */
export const RECENT_CALLS = 10;

/**
 * How the page names where an upstream is: a URL by its origin only, since
 * user info, path and query may hold credentials or name private routes.
 */
function describe(upstream: PageUpstream): string {
  if (upstream.kind === 'stdio') return 'a local process (stdio)';
  try {
    return `Streamable HTTP at ${new URL(upstream.url).origin}`;
  } catch {
    return 'Streamable HTTP';
  }
}

/** The page a browser gets at GET /mcp: what this endpoint is and how to connect. Every value is escaped. */
export function renderInfoPage(info: PageInfo): string {
  const e = escapeHtml;
  const tools = info.tools.length
    ? info.tools
        .map(
          (tool) =>
            `<li><code>${e(tool.name)}</code>${tool.description ? ` — ${e(tool.description)}` : ''}${
              tool.defect ? ` (<strong>${e(tool.defect)}</strong>)` : ''
            }</li>`,
        )
        .join('\n')
    : '<li>(no tools)</li>';
  const upstreams = info.upstreams
    .map(
      (u) =>
        `<li><code>${e(u.name)}</code>: ${e(describe(u))}${u.state ? ` (<strong>${e(u.state)}</strong>)` : ''}</li>`,
    )
    .join('\n');
  const config = JSON.stringify({ mcpServers: { gateway: { type: 'http', url: info.endpoint } } }, null, 2);
  const recent =
    info.recent === undefined
      ? '<p>This gateway keeps no ledger of its calls.</p>'
      : info.recent.length === 0
        ? '<p>No calls recorded yet. <a href="/ledger">Open the ledger</a>.</p>'
        : `<table><caption>The latest ${info.recent.length} calls in the ledger</caption>
<thead><tr><th scope="col">Time (UTC)</th><th scope="col">Run</th><th scope="col">Upstream</th><th scope="col">Tool</th><th scope="col">Outcome</th></tr></thead>
<tbody>${info.recent
            .map(
              (row) =>
                `<tr><td>${e(row.created_at)}</td><th scope="row"><a href="/ledger/runs/${e(encodeURIComponent(row.run_id))}">${e(row.run_id)}</a></th><td>${e(row.upstream ?? '—')}</td><td><code>${e(row.tool)}</code></td><td class="outcome-${row.outcome === 'error' ? 'error' : 'ok'}">${e(row.outcome ?? '—')}</td></tr>`,
            )
            .join('\n')}</tbody></table>
<p><a href="/ledger">All calls, with their checks</a></p>`;
  return renderPage({
    title: info.title,
    nav: false,
    main: `<h1>${e(info.title)}</h1>
<p>This is an MCP endpoint (Streamable HTTP) served by the mcp-envelope gateway in <strong>${e(info.mode)}</strong> mode.
It is meant for MCP clients, not browsers.</p>
<h2>Behind it</h2>
<ul>${upstreams}</ul>
<h2>Tools</h2>
<ul>${tools}</ul>
<h2>Recent calls</h2>
${recent}
<h2>Connect</h2>
<p>Point an MCP client at <code>${e(info.endpoint)}</code>${info.authRequired ? ' with an <code>Authorization: Bearer</code> token' : ''}, for example:</p>
<div class="scroll" tabindex="0" role="region" aria-label="Client configuration"><pre>${e(config)}</pre></div>`,
  });
}

/** What the page is made from: the gateway's upstreams and how it presents itself. */
export interface InfoPageSource {
  fleet: UpstreamFleet;
  /** The caller's shared upstreams answer tools/list, without starting processes just for a page. */
  pool: UpstreamPool;
  /** The per-session upstreams the page may ask (the spare's, sessions.ts). */
  ownForPage(): Promise<Upstream[]>;
  title: string;
  mode: string;
  /** The endpoint clients are told to connect to, once the server listens. */
  endpoint(): string;
  authRequired: boolean;
  /** The gateway's ledger, when it keeps one: the page lists its latest calls. */
  ledger?: Ledger;
}

/** Whether the request is a browser's asking for the page: a GET outside any session taking HTML, not SSE. */
export function wantsInfoPage(scope: RequestScope): boolean {
  return (
    scope.req.method === 'GET' &&
    !scope.req.headers['mcp-session-id'] &&
    accepts(scope, 'text/html') &&
    !accepts(scope, 'text/event-stream')
  );
}

/** What the page may say of each upstream (`renderInfoPage` decides how much of it shows). */
function pageUpstreams(fleet: UpstreamFleet): PageUpstream[] {
  const status = fleet.status;
  return fleet.configured.map((spec) => ({
    name: spec.name,
    ...(spec.kind === 'stdio' ? { kind: 'stdio' as const } : { kind: 'http' as const, url: spec.url }),
    ...(status ? { state: status.get(spec.name).state } : {}),
  }));
}

/** The tools the caller's upstreams list, as the page names them; none when they cannot say. */
async function pageTools(scope: RequestScope, source: InfoPageSource): Promise<PageTool[]> {
  const { fleet } = source;
  let tools: PageTool[] = [];
  const lease = await source.pool.acquire(poolKeyOf(scope)).catch(() => undefined);
  try {
    const own = await source.ownForPage();
    const upstreams = fleet.arrange(lease?.set.upstreams ?? [], own);
    for (const upstream of upstreams) {
      if (!upstream.available || !upstream.capabilities.tools) continue;
      const listed = await upstream.request('tools/list', undefined, { timeoutMs: 5000 });
      const access = fleet.options.access;
      const principal = access && accessPrincipalOf(authInfoOf(scope), access.anonymousTier);
      // The page lists what tools/list would show this caller: a hidden tool is not named here either.
      const names = ((listed.tools as Tool[] | undefined) ?? []).filter(
        (tool) => !access || !principal || access.visible(principal, upstream.name, tool.name),
      );
      const prefix = upstreams.length > 1 ? `${upstream.name}__` : '';
      // Listing a tool is when its schemas are checked; the page says which ones cannot be.
      for (const tool of names) fleet.options.outputSchemaFor?.(tool, upstream.name);
      const defects = fleet.status?.schemaDefects(upstream.name) ?? [];
      tools = tools.concat(
        names.map((tool) => {
          const broken = defects.filter((defect) => defect.tool === tool.name).map(({ schema }) => schema);
          return {
            name: prefix + tool.name,
            description: tool.description,
            ...(broken.length > 0 ? { defect: `its ${broken.join(' and ')} cannot be compiled` } : {}),
          };
        }),
      );
    }
  } catch {
    // The page still explains the endpoint when the upstream is down.
  } finally {
    lease?.release();
  }
  return tools;
}

/** Answers with the page, listing the tools through the caller's own upstreams. */
export async function sendInfoPage(scope: RequestScope, source: InfoPageSource): Promise<void> {
  const tools = await pageTools(scope, source);
  const html = renderInfoPage({
    title: source.title,
    mode: source.mode,
    endpoint: source.endpoint(),
    upstreams: pageUpstreams(source.fleet),
    tools,
    authRequired: source.authRequired,
    ...(source.ledger ? { recent: recentRuns(source.ledger, RECENT_CALLS) } : {}),
  });
  scope.res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8' });
  scope.res.end(html);
}
