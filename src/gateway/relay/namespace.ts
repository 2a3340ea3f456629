/**
 * How the names of several upstreams are kept apart when one gateway fronts
 * them (a single upstream's pass through untouched). Its own module, free of
 * the MCP SDK, so that loading a configuration does not load the relay.
 *
 * - Names (tools, prompts) and task ids: `<upstream>__<name>`.
 * - URIs (resources, resource templates, skills and their files): the
 *   upstream's name is the first segment after the scheme's `//`, or after
 *   `scheme:` where there is none: `file:///a` of `docs` is `file://docs//a`,
 *   `note://x/y` is `note://docs/x/y`, `urn:isbn:1` is `urn:docs/isbn:1`. It
 *   stays a URI (upstream names are valid host names), relative references
 *   resolve within it, and a template expands to a URI of the same form.
 */
export const NAMESPACE_SEPARATOR = '__';

/** A name (tool, prompt, task id) as clients of a gateway with several upstreams see it. */
export function namespacedName(upstream: string, name: string): string {
  return `${upstream}${NAMESPACE_SEPARATOR}${name}`;
}

/** The upstream a namespaced name belongs to and the name it has there; undefined when it names none of them. */
export function splitName(
  name: string,
  upstreams: ReadonlySet<string>,
): { upstream: string; name: string } | undefined {
  const at = name.indexOf(NAMESPACE_SEPARATOR);
  if (at <= 0) return undefined;
  const upstream = name.slice(0, at);
  return upstreams.has(upstream)
    ? { upstream, name: name.slice(at + NAMESPACE_SEPARATOR.length) }
    : undefined;
}

/** `scheme:` and, when present, the `//` that opens an authority. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:(?:\/\/)?/;

/** A URI or URI template of an upstream as clients see it; one without a scheme is left as it is. */
export function namespacedUri(upstream: string, uri: string): string {
  const scheme = SCHEME.exec(uri)?.[0];
  return scheme === undefined ? uri : `${scheme}${upstream}/${uri.slice(scheme.length)}`;
}

/** The upstream a namespaced URI belongs to and the URI it has there; undefined when it names none of them. */
export function splitUri(
  uri: string,
  upstreams: ReadonlySet<string>,
): { upstream: string; uri: string } | undefined {
  const scheme = SCHEME.exec(uri)?.[0];
  if (scheme === undefined) return undefined;
  const rest = uri.slice(scheme.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return undefined;
  const upstream = rest.slice(0, slash);
  return upstreams.has(upstream) ? { upstream, uri: `${scheme}${rest.slice(slash + 1)}` } : undefined;
}
