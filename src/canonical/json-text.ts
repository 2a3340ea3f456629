import { EnvelopeError } from '../errors/index.ts';
import { encodePointer } from '../pointer/json-pointer.ts';
import { type JsonValue, MAX_NESTING_DEPTH, nativeJson, type RawNumber, setMember } from './json-value.ts';

/**
 * Strict JSON text input (RFC 8259 restricted to I-JSON, RFC 7493): UTF-8 only,
 * no duplicate member names, no lone surrogates, finite numbers, bounded depth.
 * JSON.parse does the parsing (it is iterative, so even absurd nesting cannot
 * overflow the stack); one linear scan adds what it does not check.
 */

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Decodes UTF-8, dropping a leading byte order mark; throws INPUT_INVALID_UTF8 on malformed bytes. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw new EnvelopeError('INPUT_INVALID_UTF8', 'Input is not valid UTF-8', undefined, { cause: error });
  }
}

interface TextShape {
  members: number;
  maxDepth: number;
  /** Whether a number token may not survive a double (asked for only with `numbers`). */
  inexact: boolean;
}

/**
 * Scans the number token starting at `start` (a '-' or digit outside strings)
 * and returns the index just past it, as `-(index + 1)` when JSON.stringify of
 * the double it reads as may not give its text back: `-0`; a fraction ending
 * in 0 (`1.0`, `0.10`); any exponent (`1e3`, `1E+3`); 16 or more digits
 * (`12345678901234567890`, `0.1000000000000001`: a double holds 15 for sure);
 * below 1e-6 (`0.0000001`), which ECMAScript writes with an exponent. Every
 * other token is a shortest round-trip spelling already: a decimal of at most
 * 15 significant digits is the only one of its length that reads as its
 * double (tests/unit/canonical/lossless.test.ts checks this on generated
 * numbers).
 */
function scanNumber(text: string, start: number): number {
  let i = start;
  if (text.charCodeAt(i) === 45 /* - */) i++;
  const first = i;
  let digits = 0;
  let inexact = false;
  let c = text.charCodeAt(i);
  while (c >= 48 && c <= 57) {
    digits++;
    c = text.charCodeAt(++i);
  }
  if (c === 46 /* . */) {
    const fraction = i + 1;
    c = text.charCodeAt(++i);
    while (c >= 48 && c <= 57) {
      digits++;
      c = text.charCodeAt(++i);
    }
    if (text.charCodeAt(i - 1) === 48 /* trailing 0 */) inexact = true;
    else if (text.charCodeAt(first) === 48 && text.startsWith('000000', fraction)) inexact = true;
  } else if (first > start && digits === 1 && text.charCodeAt(first) === 48) {
    inexact = true;
  }
  if (c === 101 || c === 69 /* e E */) {
    inexact = true;
    c = text.charCodeAt(++i);
    if (c === 43 || c === 45) c = text.charCodeAt(++i);
    while (c >= 48 && c <= 57) c = text.charCodeAt(++i);
  }
  if (digits >= 16) inexact = true;
  return inexact ? -(i + 1) : i;
}

/**
 * Counts object members (one ':' outside strings each) and the deepest nesting,
 * and with `numbers`, whether a number token may not survive a double. Stops
 * as soon as the depth or the member count passes its limit. On text JSON.parse
 * has not accepted yet the counts are an upper bound on what a parse would build.
 */
function scanShape(
  text: string,
  depthLimit: number,
  numbers = false,
  memberLimit = Number.POSITIVE_INFINITY,
): TextShape {
  let members = 0;
  let depth = 0;
  let maxDepth = 0;
  let inexact = false;
  let lookForNumbers = numbers;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let end = text.indexOf('"', i + 1);
      while (end >= 0) {
        let backslashes = 0;
        for (let j = end - 1; text.charCodeAt(j) === 92; j--) backslashes++;
        if (backslashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      // An unterminated string: the rest of the text is inside it (and is no JSON).
      if (end < 0) break;
      i = end;
    } else if (c === 58 /* : */) {
      members++;
      if (members > memberLimit) return { members, maxDepth, inexact };
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      if (depth > maxDepth) {
        maxDepth = depth;
        if (maxDepth > depthLimit) return { members, maxDepth, inexact };
      }
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
    } else if (lookForNumbers && (c === 45 || (c >= 48 && c <= 57))) {
      const end = scanNumber(text, i);
      if (end < 0) {
        inexact = true;
        lookForNumbers = false;
        i = -end - 2;
      } else {
        i = end - 1;
      }
    }
  }
  return { members, maxDepth, inexact };
}

interface ValueShape {
  members: number;
  problem?: EnvelopeError;
}

/**
 * Counts members in the parsed value and finds the first lone surrogate or
 * overflowing number (JSON.parse turns 1e400 into Infinity).
 */
function inspectValue(value: unknown): ValueShape {
  const shape: ValueShape = { members: 0 };
  const path: string[] = [];
  const visit = (current: unknown): void => {
    if (shape.problem) return;
    if (typeof current === 'string') {
      if (!current.isWellFormed()) {
        const pointer = encodePointer(path);
        shape.problem = new EnvelopeError(
          'JSON_LONE_SURROGATE',
          `String at ${pointer || '/'} has a lone surrogate`,
          {
            pointer,
          },
        );
      }
      return;
    }
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) {
        const pointer = encodePointer(path);
        shape.problem = new EnvelopeError(
          'JSON_NON_FINITE_NUMBER',
          `Number at ${pointer || '/'} is outside the range of an IEEE 754 double`,
          { pointer },
        );
      }
      return;
    }
    if (typeof current !== 'object' || current === null) return;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        path.push(String(i));
        visit(current[i]);
        path.pop();
      }
      return;
    }
    for (const key of Object.keys(current)) {
      shape.members++;
      path.push(key);
      if (!key.isWellFormed()) {
        const pointer = encodePointer(path);
        shape.problem = new EnvelopeError(
          'JSON_LONE_SURROGATE',
          `Member name at ${pointer} has a lone surrogate`,
          {
            pointer,
          },
        );
      } else {
        visit((current as Record<string, unknown>)[key]);
      }
      path.pop();
    }
  };
  visit(value);
  return shape;
}

/**
 * Finds the first duplicate member name with a small recursive-descent pass.
 * Only runs once the counts have shown a duplicate exists, on text that is
 * well-formed and within the depth limit.
 */
function locateDuplicate(text: string): EnvelopeError {
  let i = 0;
  const path: string[] = [];
  const skipWs = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const readString = (): string => {
    const start = i;
    i++;
    for (;;) {
      const c = text[i];
      if (c === '\\') i += 2;
      else if (c === '"') break;
      else i++;
    }
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (): EnvelopeError | undefined => {
    skipWs();
    const c = text[i];
    if (c === '{') {
      i++;
      const seen = new Set<string>();
      skipWs();
      if (text[i] === '}') {
        i++;
        return undefined;
      }
      for (;;) {
        skipWs();
        const key = readString();
        if (seen.has(key)) {
          const pointer = encodePointer([...path, key]);
          return new EnvelopeError('JSON_DUPLICATE_KEY', `Duplicate member name "${key}" at ${pointer}`, {
            pointer,
            key,
          });
        }
        seen.add(key);
        skipWs();
        i++; // ':'
        path.push(key);
        const found = value();
        path.pop();
        if (found) return found;
        skipWs();
        if (text[i++] === '}') return undefined;
      }
    }
    if (c === '[') {
      i++;
      skipWs();
      if (text[i] === ']') {
        i++;
        return undefined;
      }
      for (let index = 0; ; index++) {
        path.push(String(index));
        const found = value();
        path.pop();
        if (found) return found;
        skipWs();
        if (text[i++] === ']') return undefined;
      }
    }
    if (c === '"') {
      readString();
      return undefined;
    }
    while (i < text.length && !',]} \t\n\r'.includes(text[i] as string)) i++;
    return undefined;
  };
  return value() ?? new EnvelopeError('JSON_DUPLICATE_KEY', 'Object has a duplicate member name');
}

export interface ParseJsonOptions {
  /** Deepest nesting accepted; defaults to MAX_NESTING_DEPTH. */
  maxDepth?: number;
}

/**
 * Whether JSON text (well-formed or not) holds more than `limit` object
 * members, by one scan that builds nothing and stops past the limit: a bound
 * to check before a parse, whose cost grows with the members it builds.
 */
export function hasMoreMembersThan(text: string, limit: number): boolean {
  return scanShape(text, Number.POSITIVE_INFINITY, false, limit).members > limit;
}

/**
 * Parses JSON text strictly. Errors: JSON_MALFORMED (with the parser's
 * position), JSON_TOO_DEEP, JSON_DUPLICATE_KEY, JSON_LONE_SURROGATE (each with a
 * JSON Pointer where one exists).
 */
export function parseJson(text: string, options: ParseJsonOptions = {}): JsonValue {
  return parseStrict(text, options, false).value;
}

/** parseJson, telling with `numbers` whether a number's text may not survive a double. */
function parseStrict(
  text: string,
  options: ParseJsonOptions,
  numbers: boolean,
): { value: JsonValue; body: string; inexact: boolean } {
  const maxDepth = options.maxDepth ?? MAX_NESTING_DEPTH;
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let value: JsonValue;
  try {
    value = JSON.parse(body) as JsonValue;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new EnvelopeError('JSON_MALFORMED', `Input is not valid JSON: ${reason}`, undefined, {
      cause: error,
    });
  }
  const textShape = scanShape(body, maxDepth, numbers);
  if (textShape.maxDepth > maxDepth) {
    throw new EnvelopeError('JSON_TOO_DEEP', `JSON is nested deeper than ${maxDepth} levels`, {
      max_depth: maxDepth,
    });
  }
  const valueShape = inspectValue(value);
  if (valueShape.problem) throw valueShape.problem;
  if (valueShape.members !== textShape.members) throw locateDuplicate(body);
  return { value, body, inexact: textShape.inexact };
}

/** A JSON value whose numbers may be kept as written (RawNumber, from parseJsonLossless). */
export type LosslessJsonValue =
  | JsonValue
  | RawNumber
  | LosslessJsonValue[]
  | { [key: string]: LosslessJsonValue };

export interface LosslessJson {
  /** Exactly what parseJson returns: plain numbers, for schemas and logic. */
  value: JsonValue;
  /**
   * The same value with every number whose text a double would not give back
   * (`12345678901234567890`, `1.0`, `1e3`, `-0`) kept as a RawNumber, so that
   * JSON.stringify writes it as the source did. Subtrees without such a number
   * are `value`'s own; `value` itself when the text has none.
   */
  lossless: LosslessJsonValue;
}

/**
 * Whether JSON text (one JSON.parse accepts) holds a number whose text a
 * double may not give back (false: parseJsonLossless's `lossless` would be its
 * `value`). One pass that skips strings; see scanNumber.
 */
export function mayHaveInexactNumbers(text: string): boolean {
  return scanShape(text, Number.POSITIVE_INFINITY, true).inexact;
}

/** Whether a number's text is what ECMAScript writes for the double it reads as. */
function spelledExactly(value: number, source: string): boolean {
  return String(value) === source;
}

interface ReviverContext {
  source?: string;
}

function keepSpelling(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value === 'number' && context?.source !== undefined && !spelledExactly(value, context.source)) {
    return nativeJson.rawJSON(context.source);
  }
  return value;
}

/**
 * Makes `lossless` share `plain`'s subtrees wherever it holds no raw number;
 * returns what to use in place of `lossless` (`plain` when it holds none).
 */
function share(lossless: unknown, plain: unknown): unknown {
  if (typeof lossless !== 'object' || lossless === null) return plain;
  if (nativeJson.isRawJSON(lossless)) return lossless;
  let raw = false;
  if (Array.isArray(lossless)) {
    const plainArray = plain as unknown[];
    for (let i = 0; i < lossless.length; i++) {
      const kept = share(lossless[i], plainArray[i]);
      lossless[i] = kept;
      if (kept !== plainArray[i]) raw = true;
    }
  } else {
    const object = lossless as Record<string, unknown>;
    const plainObject = plain as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const kept = share(object[key], plainObject[key]);
      setMember(object, key, kept);
      if (kept !== plainObject[key]) raw = true;
    }
  }
  return raw ? lossless : plain;
}

/**
 * parseJson, plus the value with its numbers as written (see LosslessJson), so
 * that a payload can be passed on without a digit changed. The same strict
 * checks and errors as parseJson. Text without a number a double may alter
 * (most text; parseJson's own scan of the text tells, see scanNumber) costs
 * one parse, `lossless` being `value`; other text is parsed a second time with
 * a reviver that reads each number's source text (JSON.parse source text
 * access, ES2026; Node 21+).
 */
export function parseJsonLossless(text: string, options: ParseJsonOptions = {}): LosslessJson {
  const { value, body, inexact } = parseStrict(text, options, true);
  if (!inexact) return { value, lossless: value };
  // Depth is bounded by now: the reviver pass recurses, JSON.parse alone does not.
  const revived = (JSON.parse as (text: string, reviver: typeof keepSpelling) => unknown)(body, keepSpelling);
  return { value, lossless: share(revived, value) as LosslessJsonValue };
}

/** Decodes and parses UTF-8 JSON bytes strictly. */
export function parseJsonBytes(bytes: Uint8Array, options?: ParseJsonOptions): JsonValue {
  return parseJson(decodeUtf8(bytes), options);
}
