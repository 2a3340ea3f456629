import { isJsonObject } from '../canonical/json-value.ts';
import { BUNDLED_SCHEMAS } from '../schemas/index.ts';

/**
 * A schema clients can use as a tool's `outputSchema` must stand alone: a client
 * validator knows nothing of this package's schema registry. Bundled schemas
 * reference each other by `$id` (`"$ref": "prov.record.v0.1"`), so every
 * referenced schema is copied under the root's `$defs` and each reference is
 * rewritten to a local JSON Pointer (ids dropped: not every validator resolves
 * relative `$id`s in embedded resources).
 */

const BY_ID: ReadonlyMap<string, Record<string, unknown>> = new Map(
  BUNDLED_SCHEMAS.map(({ schema }) => [schema.$id, schema]),
);

/** `$defs` key of an inlined schema: its id with characters a pointer token would escape replaced. */
function defName(id: string): string {
  return `bundled_${id.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
}

/** Rewrites references inside a schema resource whose local pointers live under `base`. */
function rewrite(node: unknown, base: string, needed: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((item) => rewrite(item, base, needed));
  if (!isJsonObject(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$id' || key === '$schema') continue;
    if (key === '$ref' && typeof value === 'string') {
      if (value.startsWith('#')) out.$ref = `#${base}${value.slice(1)}`;
      else if (BY_ID.has(value)) {
        needed.add(value);
        out.$ref = `#/$defs/${defName(value)}`;
      } else out.$ref = value;
      continue;
    }
    out[key] = rewrite(value, base, needed);
  }
  return out;
}

/** A copy of `schema` with every reference to a bundled schema inlined. */
export function selfContainedSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const needed = new Set<string>();
  const root = rewrite(schema, '', needed) as Record<string, unknown>;
  if (typeof schema.$schema === 'string') root.$schema = schema.$schema;
  const inlined: Record<string, unknown> = {};
  const done = new Set<string>();
  // Inlined schemas may reference further bundled schemas; bounded by the bundle's size.
  while (needed.size > done.size) {
    for (const id of [...needed]) {
      if (done.has(id)) continue;
      done.add(id);
      const name = defName(id);
      inlined[name] = rewrite(BY_ID.get(id), `/$defs/${name}`, needed);
    }
  }
  if (done.size > 0) {
    const existing = isJsonObject(root.$defs) ? root.$defs : {};
    root.$defs = { ...existing, ...inlined };
  }
  return root;
}
