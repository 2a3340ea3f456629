/**
 * What each caller is shown: the lists the relay answers (tools, prompts,
 * resources, resource templates, skills) keep the items the policy lets the
 * caller see, each named as its upstream lists it (a tool's, prompt's or
 * skill's name, a resource's URI, a template's URI template; a skill's files,
 * `skill://<name>/…`, go by their skill's name). Filtering runs
 * on each upstream's items before names are namespaced and, with several
 * upstreams, after their pages are gathered, so cursors stay the upstreams'
 * own and no page is cut short by what it hid.
 */
import type { AccessPolicy, AccessPrincipal } from './policy.ts';

/** The member that names each item of a filtered list. */
export const FILTERED_LISTS: Readonly<Record<string, string>> = {
  'tools/list': 'name',
  'prompts/list': 'name',
  'resources/list': 'uri',
  'resources/templates/list': 'uriTemplate',
  // A skill entry (SEP-2640) names its skill in its URI, `skill://<name>/SKILL.md`.
  'skills/list': 'uri',
};

/** The items of one upstream's list the caller may see (all of them for a list that is not filtered). */
export function visibleItems<T extends Record<string, unknown>>(
  policy: AccessPolicy,
  principal: AccessPrincipal,
  method: string,
  upstream: string,
  items: readonly T[],
): T[] {
  const member = FILTERED_LISTS[method];
  if (member === undefined) return [...items];
  return items.filter((item) => {
    const name = item[member];
    // An item without a name cannot be named by a rule; it is what `default` says of nothing.
    if (typeof name !== 'string') return policy.visible(principal, upstream, '');
    return policy.visible(principal, upstream, member === 'uri' ? ruleNameOfUri(name) : name);
  });
}

/** The skill a `skill://<name>/…` URI (SEP-2640) belongs to; undefined for any other URI. */
export function skillOfUri(uri: string): string | undefined {
  if (!uri.startsWith('skill://')) return undefined;
  const end = uri.indexOf('/', 8);
  const name = uri.slice(8, end < 0 ? undefined : end);
  return name.length > 0 ? name : undefined;
}

/** The name rules know a URI by: a skill's file (`skill://<name>/…`) its skill's, any other URI itself. */
export function ruleNameOfUri(uri: string): string {
  return skillOfUri(uri) ?? uri;
}
