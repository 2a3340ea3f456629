/**
 * A record's lineage for the viewer: its ancestors (through each record's
 * `parents`) and descendants (records naming it as a parent), bounded in
 * depth and count, laid out by ELK's layered algorithm and drawn as an SVG on
 * the server, each node a link to its record page. No script runs in the
 * browser for it.
 */
import type { ELK as ElkLayout, ElkNode } from 'elkjs/lib/elk-api.js';
import type { Ledger } from '../store.ts';
import { escapeHtml as e, hrefPart } from './html.ts';

/** How far up and down the graph goes, and how many runs it shows at most. */
export const LINEAGE_DEPTH = 4;
export const LINEAGE_MAX_NODES = 60;

export interface LineageNode {
  runId: string;
  tool?: string;
  /** Named as a parent but not stored in this ledger. */
  missing: boolean;
  current: boolean;
}

export interface LineageView {
  nodes: LineageNode[];
  /** Parent → child. */
  edges: Array<{ parent: string; child: string }>;
  /** More runs were reachable than the bounds let in. */
  truncated: boolean;
}

/** The run ids of records that name `runId` among their parents, at most `limit` (record_parents, indexed). */
export function childrenOf(ledger: Ledger, runId: string, limit: number): string[] {
  const rows = ledger
    .database()
    .prepare(
      `SELECT DISTINCT records.run_id AS run_id FROM record_parents
       JOIN records ON records.seq = record_parents.seq
       WHERE record_parents.parent = ? ORDER BY record_parents.seq LIMIT ?`,
    )
    .all(runId, limit) as Array<{ run_id: string }>;
  return rows.map((row) => row.run_id);
}

/** The parents the newest record of `runId` names; undefined when no record has that run id. */
function parentsOf(ledger: Ledger, runId: string): { parents: string[]; tool: string } | undefined {
  const entry = ledger.find(runId).at(-1);
  return entry ? { parents: [...(entry.record.parents ?? [])], tool: entry.tool } : undefined;
}

export function lineageOf(ledger: Ledger, runId: string): LineageView {
  const nodes = new Map<string, LineageNode>();
  const edges = new Map<string, { parent: string; child: string }>();
  let truncated = false;
  const add = (id: string): LineageNode | undefined => {
    const known = nodes.get(id);
    if (known) return known;
    if (nodes.size >= LINEAGE_MAX_NODES) {
      truncated = true;
      return undefined;
    }
    const found = parentsOf(ledger, id);
    const node: LineageNode = {
      runId: id,
      ...(found ? { tool: found.tool } : {}),
      missing: found === undefined,
      current: id === runId,
    };
    nodes.set(id, node);
    return node;
  };
  const edge = (parent: string, child: string) => edges.set(`${parent}\n${child}`, { parent, child });
  add(runId);
  let up = [runId];
  for (let depth = 0; depth < LINEAGE_DEPTH && up.length > 0; depth++) {
    const next: string[] = [];
    for (const id of up) {
      for (const parent of parentsOf(ledger, id)?.parents ?? []) {
        const fresh = !nodes.has(parent);
        if (add(parent) === undefined) continue;
        edge(parent, id);
        if (fresh) next.push(parent);
      }
    }
    up = next;
  }
  if (up.length > 0) truncated = true;
  let down = [runId];
  for (let depth = 0; depth < LINEAGE_DEPTH && down.length > 0; depth++) {
    const next: string[] = [];
    for (const id of down) {
      if (nodes.size >= LINEAGE_MAX_NODES) {
        truncated = true;
        break;
      }
      for (const child of childrenOf(ledger, id, LINEAGE_MAX_NODES)) {
        const fresh = !nodes.has(child);
        if (add(child) === undefined) continue;
        edge(id, child);
        if (fresh) next.push(child);
      }
    }
    down = next;
  }
  if (down.length > 0) truncated = true;
  return { nodes: [...nodes.values()], edges: [...edges.values()], truncated };
}

const NODE_WIDTH = 300;
const NODE_HEIGHT = 48;
let elk: ElkLayout | undefined;

/** ELK, loaded when a graph is first drawn: its bundle is large, and most processes never draw one. */
async function layoutEngine(): Promise<ElkLayout> {
  if (elk === undefined) {
    const loaded = (await import('elkjs/lib/elk.bundled.js')).default as unknown;
    // The bundle is CommonJS: Node's default import is module.exports, whose `default` is the class again.
    const ElkClass = ((loaded as { default?: unknown }).default ?? loaded) as new () => ElkLayout;
    elk = new ElkClass();
  }
  return elk;
}

/** The two lines a node shows. */
function nodeLines(node: LineageNode): [string, string] {
  return [
    short(node.runId),
    short(
      node.current
        ? `this run · ${node.tool ?? ''}`
        : node.missing
          ? 'not in this ledger'
          : (node.tool ?? ''),
      40,
    ),
  ];
}

/** A node's accessible name: what it shows (so speech matches sight), and the whole run id when cut. */
function nodeName(node: LineageNode): string {
  const [id, second] = nodeLines(node);
  return `${id} ${second}${id === node.runId ? '' : ` (run ${node.runId})`}`;
}

/** Shortens a run id to fit a node; the full id is the link's accessible name. */
function short(text: string, max = 38): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The graph as an SVG element (laid out by ELK), each node a link to its record. */
export async function lineageSvg(view: LineageView): Promise<string> {
  const ids = new Map(view.nodes.map((node, index) => [node.runId, `n${index}`]));
  const laid: ElkNode = await (await layoutEngine()).layout({
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.spacing.nodeNode': '24',
      'elk.layered.spacing.nodeNodeBetweenLayers': '40',
    },
    children: view.nodes.map((node) => ({
      id: ids.get(node.runId) as string,
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
    })),
    edges: view.edges.map((edge, index) => ({
      id: `e${index}`,
      sources: [ids.get(edge.parent) as string],
      targets: [ids.get(edge.child) as string],
    })),
  });
  const width = Math.ceil(laid.width ?? NODE_WIDTH);
  const height = Math.ceil(laid.height ?? NODE_HEIGHT);
  const paths = (laid.edges ?? []).flatMap((edge) =>
    (edge.sections ?? []).map((section) => {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      return `<path class="edge" d="M${points.map((p) => `${p.x},${p.y}`).join(' L')}" marker-end="url(#arrow)"/>`;
    }),
  );
  const byId = new Map(view.nodes.map((node) => [ids.get(node.runId) as string, node]));
  const boxes = (laid.children ?? []).map((child) => {
    const node = byId.get(child.id) as LineageNode;
    const x = child.x ?? 0;
    const y = child.y ?? 0;
    const kind = node.current ? ' current' : node.missing ? ' missing' : '';
    const [first, second] = nodeLines(node);
    const label = `<rect class="node${kind}" x="${x}" y="${y}" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="6"/>
<text class="node-id" x="${x + 10}" y="${y + 20}">${e(first)}</text>
<text class="node-tool" x="${x + 10}" y="${y + 38}">${e(second)}</text>`;
    return node.missing
      ? `<g role="img" aria-label="${e(nodeName(node))}">${label}</g>`
      : `<a href="/ledger/runs/${e(hrefPart(node.runId))}" aria-label="${e(nodeName(node))}"${node.current ? ' aria-current="page"' : ''}>${label}</a>`;
  });
  return `<svg class="lineage" role="group" aria-labelledby="lineage-graph-title" viewBox="-2 -2 ${width + 4} ${height + 4}" width="${width + 4}" height="${height + 4}" xmlns="http://www.w3.org/2000/svg">
<title id="lineage-graph-title">Lineage graph: parents above, children below</title>
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path class="arrow" d="M0,0 L10,5 L0,10 z"/></marker></defs>
${paths.join('\n')}
${boxes.join('\n')}
</svg>`;
}

/** The same nodes as a list a screen reader can walk: each with its parents and children named. */
export function lineageList(view: LineageView): string {
  const items = view.nodes.map((node) => {
    const parents = view.edges.filter((edge) => edge.child === node.runId).map((edge) => edge.parent);
    const children = view.edges.filter((edge) => edge.parent === node.runId).map((edge) => edge.child);
    const name = node.missing
      ? `${e(node.runId)} (not in this ledger)`
      : `<a href="/ledger/runs/${e(hrefPart(node.runId))}"${node.current ? ' aria-current="page"' : ''}>${e(node.runId)}</a>${node.tool ? ` <code>${e(node.tool)}</code>` : ''}${node.current ? ' (this run)' : ''}`;
    const relations = [
      parents.length ? `parents: ${parents.map(e).join(', ')}` : '',
      children.length ? `children: ${children.map(e).join(', ')}` : '',
    ].filter((part) => part !== '');
    return `<li>${name}${relations.length ? `; ${relations.join('; ')}` : ''}</li>`;
  });
  return `<ul class="lineage-list">${items.join('\n')}</ul>`;
}
