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
