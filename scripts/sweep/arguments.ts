/**
 * Minimal valid values from a JSON Schema (draft-07 or 2020-12), for tools
 * without hand-written arguments and for elicitation answers: required
 * members only, string "x", number 1, boolean false, the first enum value,
 * the default where the schema gives one. Pure and bounded (depth 8).
 */

export type Schema = { [keyword: string]: unknown };

const MAX_DEPTH = 8;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resolve(root: Schema, node: Schema): Schema {
  let at = node;
  for (let hops = 0; typeof at.$ref === 'string' && hops < 10; hops++) {
    const ref = at.$ref as string;
    if (!ref.startsWith('#')) break;
    const target = ref
      .replace(/^#\/?/, '')
      .split('/')
      .filter(Boolean)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((into, key) => (isSchema(into) ? into[key] : undefined), root);
    if (!isSchema(target)) break;
    const { $ref: _ref, ...own } = at;
    at = { ...target, ...own };
  }
  return at;
}

function stringFor(node: Schema): string {
  const format = node.format;
  if (format === 'email') return 'sweep@example.invalid';
  if (format === 'uri' || format === 'url') return 'https://example.invalid/';
  if (format === 'date') return '2026-01-01';
  if (format === 'date-time') return '2026-01-01T00:00:00Z';
  if (format === 'uuid') return '00000000-0000-4000-8000-000000000000';
  const min = typeof node.minLength === 'number' ? node.minLength : 1;
  return 'x'.repeat(Math.max(1, Math.min(min, 64)));
}

function numberFor(node: Schema, integer: boolean): number {
  let value = 1;
  if (typeof node.minimum === 'number') value = Math.max(value, node.minimum);
  if (typeof node.exclusiveMinimum === 'number') value = Math.max(value, node.exclusiveMinimum + 1);
  if (typeof node.maximum === 'number') value = Math.min(value, node.maximum);
  return integer ? Math.ceil(value) : value;
}

/**
 * A minimal value valid against `node`; `all` fills every property of objects
 * (elicitation forms), not only the required ones.
 */
export function minimalValue(node: unknown, root?: Schema, all = false, depth = 0): unknown {
  if (!isSchema(node)) return {};
  const top = root ?? node;
  const at = resolve(top, node);
  if (depth > MAX_DEPTH) return null;
  if ('default' in at) return at.default;
  if ('const' in at) return at.const;
  if (Array.isArray(at.enum) && at.enum.length > 0) return at.enum[0];
  for (const key of ['oneOf', 'anyOf'] as const) {
    const choices = at[key];
    if (Array.isArray(choices) && choices.length > 0) {
      const usable = choices.find((choice) => isSchema(choice) && choice.type !== 'null') ?? choices[0];
      return minimalValue(usable, top, all, depth + 1);
    }
  }
  if (Array.isArray(at.allOf) && at.allOf.length > 0) {
    const merged = Object.assign({}, ...at.allOf.filter(isSchema).map((part) => resolve(top, part)));
    return minimalValue({ ...merged, ...at, allOf: undefined }, top, all, depth + 1);
  }
  const type = Array.isArray(at.type) ? (at.type.find((t) => t !== 'null') ?? at.type[0]) : at.type;
  switch (type) {
    case 'string':
      return stringFor(at);
    case 'number':
      return numberFor(at, false);
    case 'integer':
      return numberFor(at, true);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const min = typeof at.minItems === 'number' ? at.minItems : 0;
      return Array.from({ length: Math.min(min, 4) }, () => minimalValue(at.items, top, all, depth + 1));
    }
    default: {
      if (type !== 'object' && !isSchema(at.properties)) return 'x';
      const properties = isSchema(at.properties) ? at.properties : {};
      const required = Array.isArray(at.required) ? (at.required as string[]) : [];
      const value: Record<string, unknown> = {};
      for (const name of all ? Object.keys(properties) : required) {
        value[name] = minimalValue(properties[name] ?? {}, top, all, depth + 1);
      }
      return value;
    }
  }
}

/** Minimal arguments for a tool: required members of its input schema. */
export function minimalArguments(inputSchema: unknown): Record<string, unknown> {
  const value = minimalValue(inputSchema);
  return isSchema(value) ? value : {};
}
