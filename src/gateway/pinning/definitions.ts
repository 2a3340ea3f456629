/**
 * What of an upstream's definitions is pinned, and the digests a pin keeps.
 *
 * A definition is reduced to the members that tell a model (or a client) what
 * it does and what it takes, then digested over its RFC 8785 bytes with
 * SHA-256. `_meta` is left out everywhere: it carries per-connection and
 * per-gateway data (progress hints, a gateway's own result-schema key, an MCP
 * App's namespaced `ui://` URI) that changes without the definition changing,
 * and it is not what a model reads to decide on a call.
 */

import { digestBytes } from '../../canonical/digest.ts';
import { canonicalize } from '../../canonical/index.ts';

export type DefinitionKind = 'tool' | 'prompt' | 'resource-template' | 'skill';

export const DEFINITION_KINDS: readonly DefinitionKind[] = ['tool', 'prompt', 'resource-template', 'skill'];

interface KindSpec {
  /** The list method and the member of its result that holds the items. */
  method: string;
  key: string;
  /** The member that names an item (its identity within the upstream). */
  nameMember: string;
  /** The members pinned; undefined: every member but `_meta`. */
  members?: readonly string[];
  /** The members of the item's shape: what it takes, whatever it is called or says of itself. */
  shape: readonly string[];
}

export const KINDS: Readonly<Record<DefinitionKind, KindSpec>> = {
  tool: {
    method: 'tools/list',
    key: 'tools',
    nameMember: 'name',
    members: ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'],
    shape: ['inputSchema', 'outputSchema'],
  },
  prompt: {
    method: 'prompts/list',
    key: 'prompts',
    nameMember: 'name',
    members: ['name', 'title', 'description', 'arguments'],
    shape: ['arguments'],
  },
  'resource-template': {
    method: 'resources/templates/list',
    key: 'resourceTemplates',
    nameMember: 'uriTemplate',
    members: ['uriTemplate', 'name', 'title', 'description', 'mimeType', 'annotations'],
    shape: ['uriTemplate', 'mimeType'],
  },
  // A skill entry (SEP-2640) as skills/list gives it: its SKILL.md URI, name, description and file list.
  skill: { method: 'skills/list', key: 'skills', nameMember: 'name', shape: ['uri', 'resources'] },
};

/** The kind a list method lists, if it is one whose items are pinned. */
export function kindOfList(method: string): DefinitionKind | undefined {
  return DEFINITION_KINDS.find((kind) => KINDS[kind].method === method);
}

export interface DefinitionDigests {
  /** The item's name (its `nameMember`). */
  name: string;
  /** `sha256:<hex>` of the pinned members. */
  digest: string;
  /** The same without the name: the same content under another name has the same one. */
  content: string;
  /** Of the shape members alone: another name and description over the same schemas has the same one. */
  shape: string;
  /** The pinned members, as pinned (what a diff shows). */
  definition: Record<string, unknown>;
}

function pick(
  item: Record<string, unknown>,
  members: readonly string[] | undefined,
): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const key of members ?? Object.keys(item)) {
    if (key === '_meta' || item[key] === undefined) continue;
    picked[key] = item[key];
  }
  return picked;
}

/** `sha256:<hex>` over RFC 8785 bytes; a value that cannot be canonicalized (a lone surrogate) digests its JSON text. */
export function definitionDigest(value: unknown): string {
  let text: string;
  try {
    text = canonicalize(value);
  } catch {
    text = JSON.stringify(value);
  }
  return `sha256:${digestBytes(text).value}`;
}

/** The digests of one listed item, or undefined when it has no name to pin it under. */
export function digestsOf(
  kind: DefinitionKind,
  item: Record<string, unknown>,
): DefinitionDigests | undefined {
  const spec = KINDS[kind];
  const name = item[spec.nameMember];
  if (typeof name !== 'string') return undefined;
  const definition = pick(item, spec.members);
  const { [spec.nameMember]: _name, ...content } = definition;
  return {
    name,
    digest: definitionDigest(definition),
    content: definitionDigest(content),
    shape: definitionDigest(pick(item, spec.shape)),
    definition,
  };
}
