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
    if (member !== 'uri') return policy.visible(principal, upstream, name);
    return uriRuleNames(name).every((named) => policy.visible(principal, upstream, named));
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

/**
 * The names a URI asked for goes by, all of which the rules must allow: itself,
 * and where it lands once an upstream decodes its percent-encoding and resolves
 * its dot segments (`file:///public/../secret/k`, `file:///public/%2e%2e/secret/k`,
 * `file:///%73ecret/k`, backslashes as slashes). Rules are written against
 * plain URIs; judging only the text asked for would let a path climb out of an
 * allowed folder or spell a denied one differently.
 */
export function uriRuleNames(uri: string): string[] {
  const own = ruleNameOfUri(uri);
  const landed = ruleNameOfUri(resolvedUri(uri));
  return landed === own ? [own] : [own, landed];
}

/** Decodes percent-encoding (again, up to three times: double encoding) and resolves dot segments. */
function resolvedUri(uri: string): string {
  let text = uri;
  for (let round = 0; round < 3; round++) {
    const decoded = percentDecoded(text).replaceAll('\\', '/');
    if (decoded === text) break;
    text = decoded;
  }
  const parts = /^([A-Za-z][A-Za-z0-9+.-]*:)(\/\/[^/?#]*)?([^?#]*)(.*)$/s.exec(text);
  if (!parts) return text;
  const [, scheme = '', authority = '', path = '', rest = ''] = parts;
  // A skill's files may be read as paths under a skills folder, where `..` can leave the skill.
  if (scheme.toLowerCase() === 'skill:' && authority.length > 2)
    return `skill://${withoutDotSegments(authority.slice(2) + path)}${rest}`;
  return `${scheme}${authority}${withoutDotSegments(path)}${rest}`;
}

function percentDecoded(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    // Not UTF-8 throughout: the ASCII escapes alone (dots, slashes, letters) are what could mislead.
    return text.replace(/%([0-7][0-9A-Fa-f])/g, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }
}

/** RFC 3986 §5.2.4: `.` and `..` segments removed, never above the path's root. */
function withoutDotSegments(path: string): string {
  const segments = path.split('/');
  const floor = path.startsWith('/') ? 1 : 0;
  const kept: string[] = [];
  segments.forEach((segment, index) => {
    if (segment !== '.' && segment !== '..') {
      kept.push(segment);
      return;
    }
    if (segment === '..' && kept.length > floor) kept.pop();
    // A path ending in a dot segment names a folder: it keeps its trailing slash.
    if (index === segments.length - 1) kept.push('');
  });
  return kept.join('/');
}
