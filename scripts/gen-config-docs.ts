/**
 * The gateway configuration schema is the one table of settings: validation,
 * defaults (config.ts reads them from it), the reference tables of
 * docs/gateway-config.md (generated here) and the list of settings the
 * behaviour test requires a case for (settingsOf) all come from it.
 *
 * The document is its own template: its prose is written by hand, and each
 * table between a `<!-- settings table: … -->` line and `<!-- end of settings
 * table -->` is replaced by rows rendered from the schema.
 *
 * Usage: node scripts/gen-config-docs.ts           rewrite the tables
 *        node scripts/gen-config-docs.ts --check   exit 1 when they are stale
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import schema from '../src/schemas/data/gateway.config.schema.json' with { type: 'json' };

type SchemaNode = { [keyword: string]: unknown };

/** One member of the configuration, wherever it may appear. */
export interface ConfigMember {
  /** `upstreams[].restart.maxAttempts`: `[]` stands for any item of an array, `<tool>` for any key of a map. */
  path: string;
  /** Its schema, with `$ref`s resolved (the member's own keywords win over the definition's). */
  node: SchemaNode;
  /** Has members of its own, each listed separately (`listen.http`, `upstreams[].restart`). */
  section: boolean;
  /** Takes a value a configuration sets: everything but pure groups of members. */
  setting: boolean;
  required: boolean;
}

export const CONFIG_SCHEMA = schema as unknown as SchemaNode;
export const DOCS_FILE = fileURLToPath(new URL('../docs/gateway-config.md', import.meta.url));

function resolveRef(root: SchemaNode, node: SchemaNode): SchemaNode {
  let resolved = node;
  // Bounded: definitions refer to definitions only a level or two deep.
  for (let hops = 0; typeof resolved.$ref === 'string' && hops < 10; hops++) {
    const target = (resolved.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((at, key) => (at as SchemaNode)[key], root) as SchemaNode;
    const { $ref: _ref, ...own } = resolved;
    resolved = { ...target, ...own };
  }
  return resolved;
}

/** A oneOf branch that only says which members are required (stdio or url) is no shape of its own. */
function isConstraintOnly(choice: SchemaNode): boolean {
  return Object.keys(choice).every((keyword) => keyword === 'required');
}

/** The alternatives of a oneOf/anyOf that are shapes a value may take; empty without one. */
function choicesOf(root: SchemaNode, node: SchemaNode): SchemaNode[] {
  const choices = (node.oneOf ?? node.anyOf) as SchemaNode[] | undefined;
  return (choices ?? [])
    .map((choice) => resolveRef(root, choice))
    .filter((choice) => !isConstraintOnly(choice));
}

function isArrayOfObjects(root: SchemaNode, node: SchemaNode): boolean {
  return node.type === 'array' && Boolean(resolveRef(root, (node.items ?? {}) as SchemaNode).properties);
}

/** The object shapes a value may take (whose members are listed), and whether it may be something else too. */
function shapesOf(root: SchemaNode, node: SchemaNode): { objects: SchemaNode[]; other: boolean } {
  const choices = choicesOf(root, node);
  const objects = [...(node.properties ? [node] : []), ...choices.filter((choice) => choice.properties)];
  const other =
    choices.length > 0
      ? choices.some((choice) => !choice.properties)
      : !node.properties && !isArrayOfObjects(root, node);
  return { objects, other };
}

/** Every member of the configuration the schema admits, parents before their members. */
export function membersOf(root: SchemaNode = CONFIG_SCHEMA): ConfigMember[] {
  const found: ConfigMember[] = [];
  const visit = (path: string, raw: SchemaNode, required: boolean): void => {
    const node = resolveRef(root, raw);
    const { objects, other } = shapesOf(root, node);
    const items = isArrayOfObjects(root, node) ? resolveRef(root, node.items as SchemaNode) : undefined;
    const map =
      typeof node.additionalProperties === 'object'
        ? shapesOf(root, resolveRef(root, node.additionalProperties as SchemaNode))
        : undefined;
    const section = objects.length > 0 || items !== undefined || (map?.objects.length ?? 0) > 0;
    found.push({ path, node, section, setting: !section || other || map !== undefined, required });
    for (const shape of objects) visitMembers(path, shape);
    if (items) visitMembers(`${path}[]`, items);
    if (map) {
      const key = `<${((node.propertyNames as SchemaNode | undefined)?.title as string | undefined) ?? 'name'}>`;
      for (const shape of map.objects) visitMembers(`${path}.${key}`, shape);
    }
  };
  const visitMembers = (path: string, shape: SchemaNode): void => {
    const required = new Set((shape.required as string[] | undefined) ?? []);
    for (const [name, member] of Object.entries((shape.properties ?? {}) as Record<string, SchemaNode>)) {
      visit(path === '' ? name : `${path}.${name}`, member, required.has(name));
    }
  };
  visitMembers('', root);
  return found;
}

/** The members a configuration sets values of: what must each have a behaviour case. */
export function settingsOf(root: SchemaNode = CONFIG_SCHEMA): ConfigMember[] {
  return membersOf(root).filter((member) => member.setting);
}

function code(value: string): string {
  return `\`${value}\``;
}

function literal(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  return JSON.stringify(value);
}

function range(node: SchemaNode): string {
  const { minimum, maximum } = node as { minimum?: number; maximum?: number };
  if (minimum !== undefined && maximum !== undefined) return ` ${minimum}–${maximum}`;
  if (minimum !== undefined) return ` ≥ ${minimum}`;
  if (maximum !== undefined) return ` ≤ ${maximum}`;
  return '';
}

function typeOf(root: SchemaNode, raw: SchemaNode): string {
  const node = resolveRef(root, raw);
  const choices = choicesOf(root, node);
  if (choices.length > 0) return choices.map((choice) => typeOf(root, choice)).join(' or ');
  if ('const' in node) return code(literal(node.const));
  if (Array.isArray(node.enum)) return node.enum.map((value) => code(String(value))).join(', ');
  switch (node.type) {
    case 'boolean':
      return 'boolean';
    case 'integer':
    case 'number':
      return `${node.type}${range(node)}`;
    case 'string': {
      if (node.format === 'uri') return 'URL';
      const { minLength, pattern } = node as { minLength?: number; pattern?: string };
      if (pattern !== undefined) return `string ${code(pattern)}`;
      return minLength !== undefined && minLength > 1 ? `string, ≥ ${minLength} characters` : 'string';
    }
    case 'array':
      return `array of ${typeOf(root, (node.items ?? {}) as SchemaNode)}${node.minItems ? ` (at least ${node.minItems})` : ''}`;
    case 'object': {
      if (typeof node.additionalProperties === 'object') {
        const key = ((node.propertyNames as SchemaNode | undefined)?.title as string | undefined) ?? 'name';
        return `object: ${key} → ${typeOf(root, node.additionalProperties as SchemaNode)}`;
      }
      return 'object';
    }
    default:
      return 'any';
  }
}

function defaultOf(member: ConfigMember): string {
  const value = member.node.default;
  // A string default reads as the value itself, as the type column shows enum values.
  if (typeof value === 'string') return code(value);
  if ('default' in member.node) return code(literal(value));
  if (typeof member.node['x-default'] === 'string') return member.node['x-default'];
  return member.required ? 'required' : '–';
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/** The rows of one table: `top` (the root's own members), or members under each named prefix. */
function tableFor(spec: string, members: readonly ConfigMember[], root: SchemaNode): string {
  const prefixes = spec.split(/\s+/).filter(Boolean);
  const rows: string[] = [];
  for (const member of members) {
    let name: string | undefined;
    if (prefixes.includes('top')) name = member.path.includes('.') ? undefined : member.path;
    else if (prefixes.length === 1) {
      const prefix = prefixes[0] as string;
      if (member.path.startsWith(`${prefix}.`)) name = member.path.slice(prefix.length + 1);
    } else if (prefixes.some((prefix) => member.path.startsWith(`${prefix}.`))) name = member.path;
    if (name === undefined) continue;
    const meaning = typeof member.node.description === 'string' ? member.node.description : '';
    rows.push(
      `| ${code(name)} | ${cell(typeOf(root, member.node))} | ${cell(defaultOf(member))} | ${cell(meaning)} |`,
    );
  }
  if (rows.length === 0) throw new Error(`settings table "${spec}" matches no member of the schema`);
  return ['| member | type | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

const TABLE = /(<!-- settings table: ([^>]*?) -->\n)(?:[\s\S]*?\n)??(<!-- end of settings table -->)/g;

/** The document with every settings table rendered from the schema; throws when a setting is in none. */
export function renderConfigDocs(template: string, root: SchemaNode = CONFIG_SCHEMA): string {
  const members = membersOf(root);
  const rendered = template.replace(
    TABLE,
    (_all, open: string, spec: string, close: string) => `${open}${tableFor(spec, members, root)}\n${close}`,
  );
  const tables = [...template.matchAll(TABLE)].map((match) => match[2] as string);
  const missing = members.filter(
    (member) =>
      member.setting &&
      !tables.some((spec) => {
        const prefixes = spec.split(/\s+/);
        if (prefixes.includes('top')) return !member.path.includes('.');
        return prefixes.some((prefix) => member.path.startsWith(`${prefix}.`));
      }),
  );
  if (missing.length > 0) {
    throw new Error(
      `settings in no table of the documentation: ${missing.map((member) => member.path).join(', ')}`,
    );
  }
  return rendered;
}

if (import.meta.main) {
  const current = readFileSync(DOCS_FILE, 'utf8');
  const next = renderConfigDocs(current);
  if (process.argv.includes('--check')) {
    if (next !== current) {
      process.stderr.write('docs/gateway-config.md is stale: run npm run docs:config\n');
      process.exitCode = 1;
    }
  } else if (next !== current) {
    writeFileSync(DOCS_FILE, next);
    process.stderr.write('docs/gateway-config.md: settings tables regenerated\n');
  }
}
