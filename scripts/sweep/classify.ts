/**
 * How a gateway's answer to a tools/call compares with the upstream's own
 * answer to the same call: the sweep's classification, pure and exported so a
 * test can use it on stored answers.
 *
 * Ground truth is several direct calls (the sweep makes three: two before
 * the gateway's passes, one after). What differs between them is volatile
 * (timestamps, ids, random values): `patternOfAll` turns the first answer into a
 * pattern where each such place is a wildcard, keeping what the two values
 * share (same JSON type, common prefix and suffix of strings, JSON structure
 * inside texts that hold JSON), and the gateway's answer is held against that
 * pattern. The gateway's own `_meta` members (keys starting `mcp-envelope/`)
 * are removed before any comparison.
 *
 * Classes, from best to worst:
 * - `identical`: the answer matches the pattern as a whole (`isError: false`
 *   counts as absent, and so do the 2026-07-28 wire's `resultType: "complete"`
 *   and `_meta["io.modelcontextprotocol/serverInfo"]`, on either side).
 * - `intact`: every upstream content block is in the answer's `content` as a
 *   block of its own type, deep-equal; upstream `structuredContent` is found
 *   deep-equal in the answer's `structuredContent` or as the JSON of a text;
 *   every upstream `_meta` member is in the answer's `_meta`; the error sense
 *   is the same. The envelope may add blocks and members around these.
 * - `demoted`: nothing the tool produced is missing, but something only
 *   survives out of its own place: a non-text block as JSON inside a text or
 *   inside `structuredContent` (the main case), a text only as a value of
 *   `structuredContent`, a `_meta` member elsewhere in the answer.
 * - `lost`: something the tool produced (a block, a text, a `_meta` member, a
 *   `structuredContent` member, the exact digits of a number, the error sense)
 *   is found nowhere in the answer.
 * - `introduced-error`: the direct call succeeded, the gateway's answer is an
 *   error (`isError: true` or a JSON-RPC error, a timeout included), or one
 *   the SDK client rejects (`rejected`: the gateway's listed outputSchema does
 *   not compile or its structuredContent does not match it) where the direct
 *   answer passed the same check.
 */

/** What a call gave: a CallToolResult, or an error (JSON-RPC, timeout, a client-side failure). */
export type Outcome =
  /** `rejected`: why the SDK's `Client.callTool` would throw on this result (its output-schema checks). */
  | { kind: 'result'; result: Record<string, unknown>; rejected?: string }
  | {
      kind: 'error';
      source: 'jsonrpc' | 'timeout' | 'client';
      code: number | null;
      message: string;
      data?: unknown;
    };

export type CallClass = 'identical' | 'intact' | 'demoted' | 'lost' | 'introduced-error';

export const CLASSES: readonly CallClass[] = ['identical', 'intact', 'demoted', 'lost', 'introduced-error'];

export interface Verdict {
  class: CallClass;
  /** Why the call is not identical (what was lost or demoted, or the error); notes for the others. */
  reasons: string[];
}

type JsonType = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object' | 'any';

/**
 * A volatile place: matches any value of its type. A string also has to fit
 * `template` (a regular expression built from both calls' texts: their words
 * holding digits or differing made `[A-Za-z0-9]+`, the rest fixed) or, when
 * the two texts split differently, the fixed prefix and suffix they share.
 */
export class Wild {
  readonly type: JsonType;
  readonly prefix: string;
  readonly suffix: string;
  /** The member was absent in one of the two calls. */
  readonly optional: boolean;
  readonly template: string | undefined;
  #compiled: RegExp | undefined;
  constructor(type: JsonType, prefix = '', suffix = '', optional = false, template?: string) {
    this.type = type;
    this.prefix = prefix;
    this.suffix = suffix;
    this.optional = optional;
    this.template = template;
  }
  fits(text: string): boolean {
    if (this.template !== undefined) {
      this.#compiled ??= new RegExp(`^${this.template}$`, 's');
      return this.#compiled.test(text);
    }
    return (
      text.length >= this.prefix.length + this.suffix.length &&
      text.startsWith(this.prefix) &&
      text.endsWith(this.suffix)
    );
  }
  toJSON(): unknown {
    return { volatile: this.type, ...(this.template ? { template: this.template } : {}) };
  }
}

/** A text holding JSON whose parsed value is itself a pattern with volatile places. */
export class JsonText {
  readonly inner: Pattern;
  constructor(inner: Pattern) {
    this.inner = inner;
  }
}

export type Pattern =
  | Wild
  | JsonText
  | null
  | boolean
  | number
  | string
  | Pattern[]
  | { [key: string]: Pattern };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Wild) &&
    !(value instanceof JsonText)
  );
}

function typeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const type = typeof value;
  if (type === 'string' || type === 'number' || type === 'boolean') return type;
  return 'object';
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, index) => deepEqual(item, b[index]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((key) => key in b && deepEqual(a[key], b[key]))
    );
  }
  return false;
}

function significantDigits(literal: string): string {
  return literal
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
}

/** The number literals of a JSON text (outside its strings). */
function numberLiterals(text: string): string[] {
  const found: string[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') {
      inString = true;
      continue;
    }
    if (char === '-' || (char >= '0' && char <= '9')) {
      const match = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
      if (match) {
        found.push(match[0]);
        i += match[0].length - 1;
      }
    }
  }
  return found;
}

/**
 * The value of a text that is a JSON object or array, when parsing loses
 * nothing (no number literal with more digits than a double holds); else
 * undefined. Scalars are not parsed: a text "18446744073709551616" stays text.
 */
export function parseJsonText(text: string): unknown {
  const trimmed = text.trim();
  if (!(trimmed.startsWith('{') || trimmed.startsWith('['))) return undefined;
  if (trimmed.length > 8 * 1024 * 1024) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  for (const literal of numberLiterals(trimmed)) {
    if (significantDigits(literal) !== significantDigits(String(Number(literal)))) return undefined;
  }
  return parsed;
}

/** The prefix all texts share, cut before its first digit (digits are what changes). */
function commonPrefix(texts: string[]): string {
  const first = texts[0] ?? '';
  let i = 0;
  while (i < first.length && texts.every((text) => text[i] === first[i])) i++;
  const shared = first.slice(0, i);
  const digit = shared.search(/\d/);
  return digit < 0 ? shared : shared.slice(0, digit);
}

/** The suffix all texts share (not overlapping the prefix), cut after its last digit. */
function commonSuffix(texts: string[], skip: number): string {
  const first = texts[0] ?? '';
  const shortest = Math.min(...texts.map((text) => text.length)) - skip;
  let i = 0;
  while (i < shortest && texts.every((text) => text[text.length - 1 - i] === first[first.length - 1 - i]))
    i++;
  const shared = i === 0 ? '' : first.slice(first.length - i);
  const digit = shared.search(/\d[^\d]*$/);
  return digit < 0 ? shared : shared.slice(digit + 1);
}

const WORDS = /[A-Za-z0-9]+|[^A-Za-z0-9]+/g;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A template for texts that all split into the same runs of letters/digits
 * and of other characters, with the same separators: words holding a digit,
 * or differing, match any word; the rest is fixed. Undefined when they split
 * otherwise.
 */
export function templateOf(...texts: string[]): string | undefined {
  if (texts.some((text) => text.length > 64 * 1024)) return undefined;
  const split = texts.map((text) => text.match(WORDS) ?? []);
  const first = split[0] ?? [];
  if (split.some((runs) => runs.length !== first.length)) return undefined;
  let source = '';
  for (let i = 0; i < first.length; i++) {
    const runs = split.map((each) => each[i] as string);
    const x = runs[0] as string;
    const word = /^[A-Za-z0-9]/.test(x);
    if (runs.some((run) => /^[A-Za-z0-9]/.test(run) !== word)) return undefined;
    const same = runs.every((run) => run === x);
    if (!word) {
      if (!same) return undefined;
      source += escapeRegExp(x);
    } else if (same && !/\d/.test(x)) source += escapeRegExp(x);
    else source += '[A-Za-z0-9]+';
  }
  return source;
}

/** `a` with every place where `b` differs made a wildcard. */
export function patternOf(a: unknown, b: unknown): Pattern {
  return patternOfAll([a, b]);
}

/**
 * The first sample with every place where another sample differs made a
 * wildcard: the ground truth of several direct answers to one call.
 */
export function patternOfAll(samples: unknown[]): Pattern {
  const first = samples[0];
  if (samples.every((sample) => deepEqual(first, sample))) return first as Pattern;
  const type = typeOf(first);
  if (samples.some((sample) => typeOf(sample) !== type)) return new Wild('any');
  if (type === 'string') {
    const texts = samples as string[];
    const parsed = texts.map(parseJsonText);
    const parsedType = typeOf(parsed[0]);
    if (parsed.every((value) => value !== undefined && typeOf(value) === parsedType)) {
      return new JsonText(patternOfAll(parsed));
    }
    const template = templateOf(...texts);
    if (template !== undefined) return new Wild('string', '', '', false, template);
    const prefix = commonPrefix(texts);
    return new Wild('string', prefix, commonSuffix(texts, prefix.length));
  }
  if (type === 'array') {
    const arrays = samples as unknown[][];
    const length = (first as unknown[]).length;
    if (arrays.some((array) => array.length !== length)) return new Wild('array');
    return (first as unknown[]).map((_, index) => patternOfAll(arrays.map((array) => array[index])));
  }
  if (type === 'object') {
    const objects = samples as Record<string, unknown>[];
    const out: { [key: string]: Pattern } = {};
    const keys = new Set(objects.flatMap((object) => Object.keys(object)));
    for (const key of keys) {
      out[key] = objects.every((object) => key in object)
        ? patternOfAll(objects.map((object) => object[key]))
        : new Wild('any', '', '', true);
    }
    // Numbers that change travel together (used and free memory, percentages):
    // one volatile number makes its sibling numbers volatile too.
    if (Object.values(out).some((value) => value instanceof Wild && value.type === 'number')) {
      for (const [key, value] of Object.entries(out)) {
        if (typeof value === 'number') out[key] = new Wild('number');
      }
    }
    return out;
  }
  return new Wild(type);
}

/** The JSON pointers of a pattern's volatile places (`#` marks a step into the JSON of a text). */
export function volatilePaths(pattern: Pattern, at = ''): string[] {
  if (pattern instanceof Wild) return [at || '/'];
  if (pattern instanceof JsonText) return volatilePaths(pattern.inner, `${at}#`);
  if (Array.isArray(pattern)) return pattern.flatMap((item, index) => volatilePaths(item, `${at}/${index}`));
  if (isPlainObject(pattern)) {
    return Object.entries(pattern).flatMap(([key, value]) =>
      volatilePaths(value as Pattern, `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`),
    );
  }
  return [];
}

/** Does `value` match `pattern` (deep-equal outside the wildcards)? */
export function matches(pattern: Pattern, value: unknown): boolean {
  if (pattern instanceof Wild) {
    if (pattern.type !== 'any' && typeOf(value) !== pattern.type) return false;
    if (pattern.type !== 'string') return true;
    return pattern.fits(value as string);
  }
  if (pattern instanceof JsonText) {
    if (typeof value !== 'string') return false;
    const parsed = parseJsonText(value);
    return parsed !== undefined && matches(pattern.inner, parsed);
  }
  if (Array.isArray(pattern)) {
    return (
      Array.isArray(value) &&
      value.length === pattern.length &&
      pattern.every((item, index) => matches(item, value[index]))
    );
  }
  if (isPlainObject(pattern)) {
    if (!isPlainObject(value)) return false;
    for (const [key, inner] of Object.entries(pattern)) {
      if (!(key in value)) {
        if (inner instanceof Wild && inner.optional) continue;
        return false;
      }
      if (!matches(inner as Pattern, value[key])) return false;
    }
    return Object.keys(value).every((key) => key in pattern);
  }
  return pattern === value;
}

/** The alternative forms a pattern may take elsewhere in an answer: a JSON text also as its value. */
function formsOf(pattern: Pattern): Pattern[] {
  if (pattern instanceof JsonText) return [pattern, pattern.inner];
  if (typeof pattern === 'string') {
    const parsed = parseJsonText(pattern);
    if (parsed !== undefined) return [pattern, parsed as Pattern];
  }
  return [pattern];
}

/**
 * Where in `tree` something matching `pattern` is (a path), descending into
 * texts that hold JSON; null when nowhere. Bounded by the answer's size.
 */
export function findAnywhere(pattern: Pattern, tree: unknown, at = ''): string | null {
  const forms = formsOf(pattern);
  const stack: { value: unknown; path: string }[] = [{ value: tree, path: at }];
  let visited = 0;
  while (stack.length > 0 && visited < 200_000) {
    visited++;
    const { value, path } = stack.pop() as { value: unknown; path: string };
    if (forms.some((form) => matches(form, value))) return path || '/';
    if (typeof value === 'string') {
      const parsed = parseJsonText(value);
      if (parsed !== undefined) stack.push({ value: parsed, path: `${path}#` });
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => {
        stack.push({ value: item, path: `${path}/${index}` });
      });
    } else if (isPlainObject(value)) {
      for (const [key, item] of Object.entries(value)) stack.push({ value: item, path: `${path}/${key}` });
    }
  }
  return null;
}

/** Every string in a tree (raw, not parsed), for the exact-digits check. */
function stringsOf(tree: unknown, into: string[] = [], depth = 0): string[] {
  if (depth > 64) return into;
  if (typeof tree === 'string') into.push(tree);
  else if (Array.isArray(tree)) for (const item of tree) stringsOf(item, into, depth + 1);
  else if (isPlainObject(tree)) for (const item of Object.values(tree)) stringsOf(item, into, depth + 1);
  return into;
}

/** Runs of 16 or more digits in a pattern's fixed strings: numbers a double cannot carry exactly. */
function longDigitRuns(pattern: Pattern, into: Set<string> = new Set(), depth = 0): Set<string> {
  if (depth > 64 || pattern instanceof Wild) return into;
  if (pattern instanceof JsonText) return longDigitRuns(pattern.inner, into, depth + 1);
  if (typeof pattern === 'string') {
    for (const run of pattern.match(/\d{16,}/g) ?? []) if (into.size < 50) into.add(run);
  } else if (Array.isArray(pattern)) {
    for (const item of pattern) longDigitRuns(item, into, depth + 1);
  } else if (isPlainObject(pattern)) {
    for (const item of Object.values(pattern)) longDigitRuns(item as Pattern, into, depth + 1);
  }
  return into;
}

/** The gateway's answer without its own `_meta` members (keys starting `mcp-envelope/`), anywhere. */
export function stripGatewayMeta(value: unknown, depth = 0): unknown {
  if (depth > 64) return value;
  if (Array.isArray(value)) return value.map((item) => stripGatewayMeta(item, depth + 1));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === '_meta' && isPlainObject(item)) {
      const kept = Object.fromEntries(
        Object.entries(item).filter(([name]) => !name.startsWith('mcp-envelope/')),
      );
      if (Object.keys(kept).length > 0) out[key] = stripGatewayMeta(kept, depth + 1);
      continue;
    }
    out[key] = stripGatewayMeta(item, depth + 1);
  }
  return out;
}

/** The member of a result's `_meta` the 2026-07-28 wire adds to every result: who answered. */
const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

/**
 * A result as compared: `isError: false` is the same as no isError, and what
 * the 2026-07-28 wire adds to every result (`resultType: "complete"`, the
 * answering server's identity in `_meta`) is left out on either side, so that
 * answers of the two eras compare by what the tool produced.
 */
function normalized(result: Record<string, unknown>): Record<string, unknown> {
  const { isError, resultType, _meta, ...rest } = result;
  const out: Record<string, unknown> = rest;
  if (isError !== undefined && isError !== false) out.isError = isError;
  if (resultType !== undefined && resultType !== 'complete') out.resultType = resultType;
  if (isPlainObject(_meta) && SERVER_INFO_META in _meta) {
    const { [SERVER_INFO_META]: _serverInfo, ...kept } = _meta;
    if (Object.keys(kept).length > 0) out._meta = kept;
  } else if (_meta !== undefined) out._meta = _meta;
  return out;
}

function excerpt(value: unknown, max = 160): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** What a client would call the error of an answer, for the report. */
export function errorSummary(outcome: Outcome): string {
  if (outcome.kind === 'error') {
    if (outcome.source === 'timeout') return `timeout: ${outcome.message}`;
    const data = outcome.data === undefined ? '' : ` data=${excerpt(outcome.data, 200)}`;
    return `${outcome.source === 'jsonrpc' ? 'JSON-RPC error' : 'client error'} ${outcome.code ?? ''}: ${excerpt(outcome.message, 300)}${data}`;
  }
  const result = outcome.result;
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  const errors = isPlainObject(structured) ? (structured.errors ?? structured.error) : undefined;
  if (errors !== undefined) return `isError: ${excerpt(errors, 400)}`;
  const texts = Array.isArray(result.content)
    ? (result.content as { type?: string; text?: string }[]).filter((block) => block.type === 'text')
    : [];
  return `isError: ${excerpt(texts[0]?.text ?? result, 400)}`;
}

export function isErrorOutcome(outcome: Outcome): boolean {
  return outcome.kind === 'error' || outcome.result.isError === true;
}

function describeBlock(block: Pattern, index: number): string {
  const type = isPlainObject(block) && typeof block.type === 'string' ? block.type : 'block';
  return `${type} content[${index}]`;
}

/** The member of a block that carries its substance. */
function payloadOf(block: Record<string, unknown>): Pattern | undefined {
  switch (block.type) {
    case 'text':
      return block.text as Pattern;
    case 'image':
    case 'audio':
      return block.data as Pattern;
    case 'resource': {
      const resource = block.resource as Record<string, unknown> | undefined;
      if (!isPlainObject(resource)) return undefined;
      return (resource.text ?? resource.blob ?? resource.uri) as Pattern;
    }
    case 'resource_link':
      return block.uri as Pattern;
    default:
      return undefined;
  }
}

/** The members of a pattern object that a value lacks or has otherwise. */
function differingMembers(pattern: Record<string, Pattern>, value: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [key, inner] of Object.entries(pattern)) {
    if (!(key in value)) {
      if (!(inner instanceof Wild && inner.optional)) out.push(`${key} missing`);
    } else if (!matches(inner, value[key])) out.push(`${key} differs`);
  }
  for (const key of Object.keys(value)) if (!(key in pattern)) out.push(`${key} added`);
  return out;
}

interface Findings {
  lost: string[];
  demoted: string[];
}

function compareContent(pattern: Record<string, Pattern>, answer: Record<string, unknown>, into: Findings) {
  const blocks = Array.isArray(pattern.content) ? (pattern.content as Pattern[]) : [];
  const theirs = Array.isArray(answer.content) ? (answer.content as unknown[]) : [];
  const used = new Set<number>();
  blocks.forEach((block, index) => {
    const at = theirs.findIndex((candidate, j) => !used.has(j) && matches(block, candidate));
    if (at >= 0) {
      used.add(at);
      return;
    }
    const name = describeBlock(block, index);
    const whole = findAnywhere(block, answer);
    if (whole !== null) {
      into.demoted.push(`${name} only survives inside ${whole}`);
      return;
    }
    if (!isPlainObject(block)) {
      into.lost.push(`${name} lost`);
      return;
    }
    const payload = payloadOf(block);
    const sameType = theirs.find(
      (candidate, j) =>
        !used.has(j) &&
        isPlainObject(candidate) &&
        candidate.type === block.type &&
        payload !== undefined &&
        matches(payload, payloadOf(candidate)),
    ) as Record<string, unknown> | undefined;
    if (sameType) {
      into.lost.push(`${name}: ${differingMembers(block, sameType).join(', ')}`);
      return;
    }
    const where = payload === undefined ? null : findAnywhere(payload, answer);
    if (where === null) {
      into.lost.push(`${name} lost${block.type === 'text' ? `: ${excerpt(block.text)}` : ''}`);
      return;
    }
    const extra = Object.keys(block).filter(
      (key) => !['type', 'text', 'data', 'uri', 'resource'].includes(key),
    );
    const mimeType = block.mimeType;
    if (extra.length > 0 && !(extra.length === 1 && mimeType !== undefined)) {
      into.lost.push(`${name}: only its payload survives (inside ${where}); ${extra.join(', ')} lost`);
    } else {
      into.demoted.push(`${name}: its payload only survives inside ${where}`);
    }
  });
}

function compareStructured(
  pattern: Record<string, Pattern>,
  answer: Record<string, unknown>,
  into: Findings,
) {
  if (!('structuredContent' in pattern)) return;
  const structured = pattern.structuredContent as Pattern;
  if ('structuredContent' in answer && findAnywhere(structured, answer.structuredContent) !== null) return;
  const inTexts = Array.isArray(answer.content)
    ? (answer.content as unknown[]).some(
        (block) =>
          isPlainObject(block) &&
          block.type === 'text' &&
          typeof block.text === 'string' &&
          matches(structured, parseJsonText(block.text)),
      )
    : false;
  if (inTexts) return;
  const elsewhere = findAnywhere(structured, answer);
  if (elsewhere !== null) {
    into.demoted.push(`structuredContent only survives inside ${elsewhere}`);
    return;
  }
  if (isPlainObject(structured)) {
    const missing = Object.entries(structured)
      .filter(([, value]) => findAnywhere(value as Pattern, answer) === null)
      .map(([key]) => key);
    if (missing.length === 0) into.demoted.push('structuredContent only survives in pieces');
    else into.lost.push(`structuredContent members lost: ${missing.slice(0, 10).join(', ')}`);
    return;
  }
  into.lost.push(`structuredContent lost: ${excerpt(structured)}`);
}

function compareMembers(pattern: Record<string, Pattern>, answer: Record<string, unknown>, into: Findings) {
  const meta = pattern._meta;
  if (isPlainObject(meta)) {
    const theirs = isPlainObject(answer._meta) ? answer._meta : {};
    for (const [key, value] of Object.entries(meta)) {
      if (key in theirs && matches(value as Pattern, theirs[key])) continue;
      if (value instanceof Wild && value.optional) continue;
      const where = findAnywhere(value as Pattern, answer);
      if (where !== null && !(key in theirs))
        into.demoted.push(`_meta["${key}"] only survives inside ${where}`);
      else into.lost.push(`_meta["${key}"] ${key in theirs ? 'changed' : 'lost'}`);
    }
  }
  for (const [key, value] of Object.entries(pattern)) {
    if (['content', 'structuredContent', '_meta', 'isError'].includes(key)) continue;
    if (key in answer && matches(value, answer[key])) continue;
    if (value instanceof Wild && value.optional) continue;
    const where = findAnywhere(value, answer);
    if (where !== null) into.demoted.push(`result member ${key} only survives inside ${where}`);
    else into.lost.push(`result member ${key} lost`);
  }
  if (pattern.isError === true && answer.isError !== true) into.lost.push('isError: true lost');
  for (const run of longDigitRuns(pattern)) {
    if (!stringsOf(answer).some((text) => text.includes(run))) into.lost.push(`digits ${run} lost`);
  }
}

/**
 * The pattern of the direct answers: the first, with what differs in the
 * others (of the same kind: results, or errors) made volatile.
 */
export function groundTruth(
  direct: Outcome,
  others: Outcome | readonly Outcome[] = [],
): { pattern: Pattern; notes: string[] } {
  const shape = (outcome: Outcome) =>
    outcome.kind === 'result' ? normalized(outcome.result) : errorShape(outcome);
  const rest = (Array.isArray(others) ? others : [others]) as Outcome[];
  const same = rest.filter((outcome) => outcome.kind === direct.kind);
  const notes =
    same.length < rest.length ? ['the direct calls disagreed (an error, then a result or the reverse)'] : [];
  return { pattern: patternOfAll([shape(direct), ...same.map(shape)]), notes };
}

function errorShape(outcome: Outcome & { kind: 'error' }): Record<string, unknown> {
  return {
    code: outcome.code,
    message: outcome.message,
    ...(outcome.data === undefined ? {} : { data: outcome.data }),
  };
}

/** Classifies the gateway's answer against the direct ones (`others`: the other direct calls, if any). */
export function classify(
  direct: Outcome,
  others: Outcome | readonly Outcome[] | undefined,
  gateway: Outcome,
): Verdict {
  const { pattern, notes } = groundTruth(direct, others ?? []);
  const directFailed = isErrorOutcome(direct);
  const answer: Outcome =
    gateway.kind === 'result'
      ? { kind: 'result', result: normalized(stripGatewayMeta(gateway.result) as Record<string, unknown>) }
      : gateway;

  if (!directFailed && isErrorOutcome(answer)) {
    return { class: 'introduced-error', reasons: [errorSummary(gateway), ...notes] };
  }
  if (gateway.kind === 'result' && gateway.rejected && !(direct.kind === 'result' && direct.rejected)) {
    return {
      class: 'introduced-error',
      reasons: [`the SDK client rejects it: ${gateway.rejected}`, ...notes],
    };
  }

  if (direct.kind === 'error') {
    if (answer.kind === 'error') {
      if (matches(pattern, errorShape(answer))) return { class: 'identical', reasons: notes };
      const message = (pattern as Record<string, Pattern>).message ?? '';
      const found = findAnywhere(message, errorShape(answer)) ?? findInStrings(message, errorShape(answer));
      return found !== null
        ? { class: 'intact', reasons: [`error changed: ${errorSummary(gateway)}`, ...notes] }
        : { class: 'lost', reasons: [`error message lost: ${errorSummary(gateway)}`, ...notes] };
    }
    if (answer.result.isError !== true) {
      return {
        class: 'lost',
        reasons: ['error sense lost: the direct call failed, the gateway answered a success'],
      };
    }
    const message = (pattern as Record<string, Pattern>).message ?? '';
    const found = findAnywhere(message, answer.result) ?? findInStrings(message, answer.result);
    return found !== null
      ? { class: 'intact', reasons: ['JSON-RPC error became an isError result', ...notes] }
      : { class: 'lost', reasons: [`error message lost: ${errorSummary(gateway)}`, ...notes] };
  }

  // The direct call gave a result (perhaps isError).
  if (answer.kind === 'error') {
    const texts = stringsOf((pattern as Record<string, Pattern>).content);
    const all = stringsOf(errorShape(answer)).join('\n');
    const missing = texts.filter((text) => !all.includes(text));
    return missing.length === 0
      ? { class: 'intact', reasons: ['isError result became a JSON-RPC error', ...notes] }
      : {
          class: 'lost',
          reasons: [
            `isError result became ${errorSummary(gateway)}; texts lost: ${excerpt(missing[0])}`,
            ...notes,
          ],
        };
  }
  if (matches(pattern, answer.result)) return { class: 'identical', reasons: notes };
  const findings: Findings = { lost: [], demoted: [] };
  const shape = pattern as Record<string, Pattern>;
  compareContent(shape, answer.result, findings);
  compareStructured(shape, answer.result, findings);
  compareMembers(shape, answer.result, findings);
  if (findings.lost.length > 0)
    return { class: 'lost', reasons: [...findings.lost, ...findings.demoted, ...notes] };
  if (findings.demoted.length > 0) return { class: 'demoted', reasons: [...findings.demoted, ...notes] };
  return { class: 'intact', reasons: notes };
}

/** A fixed string (or the fixed prefix of a volatile one) as a substring of some string in `tree`. */
function findInStrings(pattern: Pattern, tree: unknown): string | null {
  const needle = pattern instanceof Wild ? pattern.prefix : typeof pattern === 'string' ? pattern : null;
  if (needle === null || needle === '') return null;
  return stringsOf(tree).some((text) => text.includes(needle)) ? 'a string' : null;
}
