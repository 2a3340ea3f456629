/**
 * The one stylesheet of the viewer and the gateway's page, served at
 * /ledger/assets/ledger.css (no inline styles: the pages' policy forbids
 * them). Colours keep at least 4.5:1 contrast on their backgrounds, and every
 * focusable thing shows a visible outline.
 */
import type { ServerResponse } from 'node:http';
import { SECURITY_HEADERS } from './html.ts';

export const LEDGER_CSS = `:root { color-scheme: light; --ink: #1b1f24; --muted: #4a5360; --line: #c9d1d9; --bg: #ffffff;
  --panel: #f3f5f7; --link: #0b57b3; --ok: #116329; --bad: #a40e26; --warn: #7a4a00; --focus: #b35900; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
main { padding: 1rem 1.5rem 3rem; max-width: 120rem; }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible,
[tabindex]:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip-link { position: absolute; left: 0.5rem; top: -3rem; background: var(--ink); color: #fff; padding: 0.5rem 1rem; z-index: 10; }
.skip-link:focus { top: 0.5rem; }
header.site { background: var(--panel); border-bottom: 1px solid var(--line); padding: 0.5rem 1.5rem; }
header.site nav { display: flex; gap: 1rem; align-items: center; }
header.site .logout { margin: 0 0 0 auto; }
h1 { font-size: 1.6rem; margin: 0.5rem 0 1rem; word-break: break-all; }
h2 { font-size: 1.25rem; margin-top: 2rem; }
h3 { font-size: 1.05rem; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; }
.digest { word-break: break-all; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
caption { text-align: left; font-weight: 600; padding: 0.25rem 0; }
th, td { border: 1px solid var(--line); padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
thead th { background: var(--panel); }
tbody th { font-weight: normal; }
.table-wrap, .scroll { overflow: auto; max-width: 100%; }
.table-wrap td:first-child, .table-wrap tbody th { white-space: nowrap; }
.scroll { max-height: 40rem; border: 1px solid var(--line); background: var(--panel); }
.scroll pre { margin: 0; padding: 0.5rem; }
.side-by-side { display: grid; grid-template-columns: repeat(auto-fit, minmax(28rem, 1fr)); gap: 1rem; }
.state-pass, .outcome-ok { color: var(--ok); }
.state-fail, .outcome-error { color: var(--bad); font-weight: 600; }
.state-warn, .state-after-checkpoint, .state-pending { color: var(--warn); }
.state-skip, .state-none, .state-not-checked, .state-unchecked, .state-absent { color: var(--muted); }
.filters { background: var(--panel); border: 1px solid var(--line); padding: 0.75rem 1rem; margin: 1rem 0; }
.filters h2 { margin-top: 0; }
.fields { display: flex; flex-wrap: wrap; gap: 0.75rem 1rem; margin-bottom: 0.75rem; }
.field { display: flex; flex-direction: column; }
label { font-weight: 600; font-size: 0.9rem; }
input, select, textarea, button { font: inherit; color: var(--ink); border: 1px solid #6b7480; border-radius: 4px; padding: 0.25rem 0.5rem; background: #fff; }
button { background: var(--link); color: #fff; border-color: var(--link); cursor: pointer; }
textarea { display: block; width: 100%; min-height: 4rem; margin: 0.25rem 0 0.5rem; }
.pages { display: flex; gap: 1.5rem; margin: 1rem 0; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; word-break: break-all; }
.checks { list-style: none; padding: 0; }
.error-box { border: 2px solid var(--bad); padding: 0.5rem 1rem; }
svg.lineage { max-width: 100%; height: auto; }
svg.lineage .node { fill: #ffffff; stroke: #4a5360; stroke-width: 1.5; }
svg.lineage .node.current { fill: #fff4d6; stroke: var(--focus); stroke-width: 3; }
svg.lineage .node.missing { fill: var(--panel); stroke-dasharray: 4 3; }
svg.lineage text { fill: var(--ink); font-size: 13px; font-family: ui-monospace, Menlo, Consolas, monospace; }
svg.lineage .node-tool { fill: var(--muted); }
svg.lineage .edge { fill: none; stroke: #4a5360; stroke-width: 1.5; }
svg.lineage .arrow { fill: #4a5360; }
svg.lineage a:focus-visible .node { stroke: var(--focus); stroke-width: 4; }
#verification { margin-top: 2rem; border-top: 2px solid var(--line); }
#verification-result li { margin: 0.25rem 0; }
`;

export function sendStylesheet(res: ServerResponse): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/css; charset=utf-8',
    'content-length': String(Buffer.byteLength(LEDGER_CSS)),
  });
  res.end(LEDGER_CSS);
}
