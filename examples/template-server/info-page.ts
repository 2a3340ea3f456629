/**
 * What a browser sees at GET /api/mcp: this is an MCP endpoint, its tools, and
 * how to connect. Everything interpolated is escaped.
 */
import type { Catalog } from './catalog.ts';

const TOOLS: [string, string][] = [
  ['list_templates', 'the templates, a page at a time (mode full or compact, cursor, limit)'],
  ['get_template', 'one template and its fields'],
  ['fill_template', 'fills a template; return_mode url, base64_docx or mcp_resource'],
  ['download_filled', 'the filled .docx again, by its download_id'],
];

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export function infoPage(endpoint: string, catalog: Catalog, tokenRequired: boolean): string {
  const tools = TOOLS.map(([name, what]) => `<li><code>${name}</code>: ${escapeHtml(what)}</li>`).join('\n');
  const templates = catalog.templates
    .map(
      (template) => `<li><code>${escapeHtml(template.template_id)}</code>: ${escapeHtml(template.name)}</li>`,
    )
    .join('\n');
  const auth = tokenRequired
    ? '<p>Calls need a bearer token: <code>Authorization: Bearer &lt;token&gt;</code>.</p>'
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Template server: MCP endpoint</title>
<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5}code{background:#f2f2f2;padding:0 .25rem}</style>
</head>
<body>
<main>
<h1>Template server</h1>
<p>This address is an MCP endpoint (Streamable HTTP) for MCP clients, not for browsers.
Connect a client to <code>${escapeHtml(endpoint)}</code>; it speaks JSON-RPC over POST
(<code>initialize</code>, <code>tools/list</code>, <code>tools/call</code>, <code>resources/read</code>).</p>
${auth}
<h2>Tools</h2>
<ul>
${tools}
</ul>
<p>Every answer is a Hosted MCP v2 envelope (<code>ok</code>, <code>tool</code>, <code>schema_version</code>,
<code>data</code> or <code>error</code>) in <code>content[0].text</code>.</p>
<h2>Templates</h2>
<ul>
${templates}
</ul>
</main>
</body>
</html>
`;
}
