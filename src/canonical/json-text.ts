import { EnvelopeError } from '../errors/index.ts';
import { encodePointer } from '../pointer/json-pointer.ts';
import { type JsonValue, MAX_NESTING_DEPTH } from './json-value.ts';

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
}

/**
 * Counts object members (one ':' outside strings each) and the deepest nesting.
 * Runs after JSON.parse accepted the text, so the text is well-formed.
 */
function scanShape(text: string, depthLimit: number): TextShape {
  let members = 0;
  let depth = 0;
  let maxDepth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let end = text.indexOf('"', i + 1);
      for (;;) {
        let backslashes = 0;
        for (let j = end - 1; text.charCodeAt(j) === 92; j--) backslashes++;
        if (backslashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      i = end;
    } else if (c === 58 /* : */) {
      members++;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      if (depth > maxDepth) {
        maxDepth = depth;
        if (maxDepth > depthLimit) return { members, maxDepth };
      }
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
    }
  }
  return { members, maxDepth };
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
 * Parses JSON text strictly. Errors: JSON_MALFORMED (with the parser's
 * position), JSON_TOO_DEEP, JSON_DUPLICATE_KEY, JSON_LONE_SURROGATE (each with a
 * JSON Pointer where one exists).
 */
export function parseJson(text: string, options: ParseJsonOptions = {}): JsonValue {
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
  const textShape = scanShape(body, maxDepth);
  if (textShape.maxDepth > maxDepth) {
    throw new EnvelopeError('JSON_TOO_DEEP', `JSON is nested deeper than ${maxDepth} levels`, {
      max_depth: maxDepth,
    });
  }
  const valueShape = inspectValue(value);
  if (valueShape.problem) throw valueShape.problem;
  if (valueShape.members !== textShape.members) throw locateDuplicate(body);
  return value;
}

/** Decodes and parses UTF-8 JSON bytes strictly. */
export function parseJsonBytes(bytes: Uint8Array, options?: ParseJsonOptions): JsonValue {
  return parseJson(decodeUtf8(bytes), options);
}
