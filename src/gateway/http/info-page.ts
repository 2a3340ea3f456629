import type { Tool } from '@modelcontextprotocol/server';
import type { UpstreamFleet } from '../relay/upstream-fleet.ts';
import type { UpstreamPool } from '../relay/upstream-pool.ts';
import type { Upstream } from '../upstreams/upstream.ts';
import { accepts, poolKeyOf, type RequestScope } from './scope.ts';

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
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

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
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(info.title)}</title></head>
<body>
<h1>${e(info.title)}</h1>
<p>This is an MCP endpoint (Streamable HTTP) served by the mcp-envelope gateway in <strong>${e(info.mode)}</strong> mode.
It is meant for MCP clients, not browsers.</p>
<h2>Behind it</h2>
<ul>${upstreams}</ul>
<h2>Tools</h2>
<ul>${tools}</ul>
<h2>Connect</h2>
<p>Point an MCP client at <code>${e(info.endpoint)}</code>${info.authRequired ? ' with an <code>Authorization: Bearer</code> token' : ''}, for example:</p>
<pre>${e(config)}</pre>
</body>
</html>
`;
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
      const names = (listed.tools as Tool[] | undefined) ?? [];
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
  });
  scope.res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': "default-src 'none'",
    'x-content-type-options': 'nosniff',
  });
  scope.res.end(html);
}
