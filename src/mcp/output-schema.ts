import { isJsonObject } from '../canonical/json-value.ts';

/** Keywords about a value itself (not its members) that an advertised schema keeps. */
const SHALLOW_KEYWORDS = ['type', 'const', 'enum'] as const;

function resolveLocal(root: Record<string, unknown>, node: unknown): unknown {
  if (!isJsonObject(node) || typeof node.$ref !== 'string' || !node.$ref.startsWith('#/')) return node;
  let target: unknown = root;
  for (const token of node.$ref.slice(2).split('/')) {
    target = isJsonObject(target) ? target[token.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  }
  return target ?? {};
}

function valueKeywords(node: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isJsonObject(node)) return out;
  for (const keyword of SHALLOW_KEYWORDS) if (node[keyword] !== undefined) out[keyword] = node[keyword];
  return out;
}

/** A member's schema as advertised: only the constant that marks the dialect (`schema_version`, `ok`). */
function markerOnly(node: unknown): Record<string, unknown> {
  return isJsonObject(node) && node.const !== undefined ? { const: node.const } : {};
}

function shallowObject(root: Record<string, unknown>, node: unknown): Record<string, unknown> {
  const resolved = resolveLocal(root, node);
  if (!isJsonObject(resolved)) return {};
  const out = valueKeywords(resolved);
  if (Array.isArray(resolved.required)) out.required = resolved.required;
  if (isJsonObject(resolved.properties)) {
    // Every member is named where no others may appear; elsewhere only the dialect's markers.
    const closed = resolved.additionalProperties === false;
    const properties: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(resolved.properties)) {
      const marker = markerOnly(resolveLocal(root, member));
      if (closed || Object.keys(marker).length > 0) properties[name] = marker;
    }
    if (Object.keys(properties).length > 0) out.properties = properties;
  }
  if (typeof resolved.additionalProperties === 'boolean')
    out.additionalProperties = resolved.additionalProperties;
  // Branches cut to their top level may overlap where the whole ones did not: any of them.
  const branches = [
    ...(Array.isArray(resolved.oneOf) ? resolved.oneOf : []),
    ...(Array.isArray(resolved.anyOf) ? resolved.anyOf : []),
  ];
  if (branches.length > 0) out.anyOf = branches.map((branch) => shallowObject(root, branch));
  return out;
}

/**
 * The schema a tool advertises as its `outputSchema` when its answers are
 * envelopes of a dialect: the envelope's top level only (which members are
 * required, the constants that mark the dialect, which members may appear
 * where no others may, its success and error branches), never the members'
 * inner shapes. It accepts every envelope of the dialect, so it is true of
 * everything sent, and it is a few hundred bytes at most: inlining the whole
 * envelope schema grew a server's tools/list thirteen-fold. The tool's own
 * outputSchema (the shape of the payload) travels beside it, under
 * `_meta["mcp-envelope/result-schema"]`.
 */
export function advertisedEnvelopeSchema(schema: Record<string, unknown>): Record<string, unknown> {
  // No $schema: 2020-12 is what MCP assumes, and each byte is paid once per tool in tools/list.
  return shallowObject(schema, schema);
}
