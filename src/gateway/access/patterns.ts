/**
 * The `<upstream>/<name>` patterns of `access` rules: `*` matches any run of
 * characters (none included, `/` included), everything else itself. Each
 * pattern is compiled once and the matchers are cached by their text, so a
 * rule table holds plain strings and precompiled tests and a
 * check allocates nothing.
 */

/**
 * One side of a pattern: a literal compared as it is, or a glob's test (`*`
 * alone matches everything, `prefix*` and `*suffix` compare ends, any other
 * glob is an anchored expression).
 */
export type Glob = string | ((value: string) => boolean);

const ANYTHING = (): boolean => true;

/** A compiled `<upstream>/<name>` pattern. */
export interface AccessPattern {
  /** The pattern as configured. */
  readonly text: string;
  readonly upstream: Glob;
  readonly name: Glob;
}

const compiled = new Map<string, Glob>();

/** The matcher of one side of a pattern, compiled at most once per text. */
export function compileGlob(text: string): Glob {
  const known = compiled.get(text);
  if (known !== undefined) return known;
  const parts = text.split('*');
  const glob: Glob =
    parts.length === 1 ? text : parts.every((part) => part === '') ? ANYTHING : globTest(parts);
  compiled.set(text, glob);
  return glob;
}

function globTest(parts: readonly string[]): (value: string) => boolean {
  const [first = '', last = ''] = [parts[0], parts[parts.length - 1]];
  if (parts.length === 2 && last === '') return (value) => value.startsWith(first);
  if (parts.length === 2 && first === '') return (value) => value.endsWith(last);
  const expression = new RegExp(`^${parts.map(escapeLiteral).join('.*')}$`, 's');
  return (value) => expression.test(value);
}

function escapeLiteral(literal: string): string {
  return literal.replace(/[\\^$.|?+()[\]{}]/g, '\\$&');
}

export function globMatches(glob: Glob, value: string): boolean {
  return typeof glob === 'string' ? glob === value : glob(value);
}

/**
 * A pattern split at its first `/`: the upstream's name (no `/` in it, as
 * upstream names have none) and the item's name or URI. Undefined when either
 * side is empty.
 */
export function compilePattern(text: string): AccessPattern | undefined {
  const at = text.indexOf('/');
  if (at <= 0 || at === text.length - 1) return undefined;
  return { text, upstream: compileGlob(text.slice(0, at)), name: compileGlob(text.slice(at + 1)) };
}

export function patternMatches(pattern: AccessPattern, upstream: string, name: string): boolean {
  return globMatches(pattern.upstream, upstream) && globMatches(pattern.name, name);
}
