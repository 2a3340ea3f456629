import { isDeepStrictEqual } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { parseJson, parseJsonLossless } from '../canonical/json-text.ts';
import { isJsonObject } from '../canonical/json-value.ts';
import { EnvelopeError } from '../errors/index.ts';

/**
 * The MCP-native form of an envelope, and the way back.
 *
 * An envelope travels as `structuredContent` (for clients that read structured
 * output) and as the same JSON in `content[0].text` (for clients that only read
 * text, and for contracts such as Hosted MCP v2 that are defined on the text).
 */

/** `_meta` key of a CallToolResult that carries a prov.record.v0.1 the envelope itself cannot hold. */
export const PROVENANCE_META_KEY = 'mcp-envelope/provenance';

/** `_meta` key of a CallToolResult listing what the chosen dialect could not carry ({path, reason}[]). */
export const LOSSES_META_KEY = 'mcp-envelope/losses';

/** The subset of a CallToolResult this module reads; SDK client and server results both fit. */
export interface ToolResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

export interface EnvelopeToToolResultOptions {
  isError?: boolean;
  /** The exact JSON text to carry, when the envelope arrived as text (kept byte for byte). */
  text?: string;
  /** Entries for the result's `_meta`. */
  meta?: Record<string, unknown>;
}

export function envelopeToToolResult(
  envelope: Record<string, unknown>,
  options: EnvelopeToToolResultOptions = {},
): CallToolResult {
  const result: CallToolResult = {
    content: [{ type: 'text', text: options.text ?? JSON.stringify(envelope) }],
    structuredContent: envelope,
  };
  if (options.isError) result.isError = true;
  if (options.meta && Object.keys(options.meta).length > 0) result._meta = { ...options.meta };
  return result;
}

/**
 * Any value as a CallToolResult: an object as an envelope (structured and as
 * text); anything else (the `legacy` dialect's bare payloads) as text only,
 * since `structuredContent` must be an object.
 */
export function valueToToolResult(value: unknown, options: EnvelopeToToolResultOptions = {}): CallToolResult {
  if (isJsonObject(value)) return envelopeToToolResult(value, options);
  const text = options.text ?? (typeof value === 'string' ? value : JSON.stringify(value ?? null));
  const result: CallToolResult = { content: [{ type: 'text', text }] };
  if (options.isError) result.isError = true;
  if (options.meta && Object.keys(options.meta).length > 0) result._meta = { ...options.meta };
  return result;
}

/**
 * Where a tool result's payload came from:
 * - `structured`: `structuredContent`;
 * - `json-text`: a single text block holding JSON (parsed strictly; the text is kept too,
 *   so nothing the parse normalises, such as number spelling, is lost);
 *
 * `lossless`, when present, is `value` with its numbers as the text wrote them
 * (parseJsonLossless): for `json-text` the text's own, for `structured` those of a
 * single text block that renders the same JSON (servers send both). Decisions are
 * made on `value`; what is sent on carries `lossless`.
 * - `text`: a single text block that is not JSON (or not strict JSON);
 * - `content`: anything else (several blocks, images, resources), as the content array itself;
 * - `empty`: no structured content and an empty content array.
 */
export type ToolResultPayload =
  | { source: 'structured'; value: unknown; lossless?: unknown; text?: string }
  | { source: 'json-text'; value: unknown; text: string; lossless?: unknown }
  | { source: 'text'; value: string; text: string }
  | { source: 'content'; value: unknown[] }
  | { source: 'empty'; value: null };

function looksLikeJson(text: string): boolean {
  const first = text.trimStart()[0];
  return (
    first === '{' ||
    first === '[' ||
    first === '"' ||
    first === '-' ||
    (first !== undefined && first >= '0' && first <= '9') ||
    /^\s*(?:true|false|null)\s*$/.test(text)
  );
}

/** Parses text that is strict JSON; undefined for anything else (never throws on bad JSON). */
export function parseJsonText(text: string): { value: unknown } | undefined {
  if (!looksLikeJson(text)) return undefined;
  try {
    return { value: parseJson(text) };
  } catch (error) {
    if (error instanceof EnvelopeError) return undefined;
    throw error;
  }
}

function singleText(content: unknown): string | undefined {
  if (!Array.isArray(content) || content.length !== 1) return undefined;
  const [block] = content;
  return isJsonObject(block) && block.type === 'text' && typeof block.text === 'string'
    ? block.text
    : undefined;
}

/**
 * Text that is strict JSON, parsed once, with `lossless` (its numbers as written)
 * only when some number would not round-trip; undefined for anything else.
 */
function parseTextLossless(text: string): { value: unknown; lossless?: unknown } | undefined {
  if (!looksLikeJson(text)) return undefined;
  try {
    const parsed = parseJsonLossless(text);
    return parsed.lossless === parsed.value ? { value: parsed.value } : parsed;
  } catch (error) {
    if (error instanceof EnvelopeError) return undefined;
    throw error;
  }
}

/** The payload of a CallToolResult, without losing anything. */
export function toolResultPayload(result: ToolResultLike): ToolResultPayload {
  const text = singleText(result.content);
  if (result.structuredContent !== undefined) {
    // Servers send the same JSON as text too: that text (pretty-printed or not) is kept,
    // and its numbers are the ones the tool wrote.
    const twin = text === undefined ? undefined : parseTextLossless(text);
    if (text === undefined || !twin || !isDeepStrictEqual(twin.value, result.structuredContent))
      return { source: 'structured', value: result.structuredContent };
    return {
      source: 'structured',
      value: result.structuredContent,
      text,
      ...(twin.lossless === undefined ? {} : { lossless: twin.lossless }),
    };
  }
  if (text !== undefined) {
    const parsed = parseTextLossless(text);
    if (!parsed) return { source: 'text', value: text, text };
    return parsed.lossless === undefined
      ? { source: 'json-text', value: parsed.value, text }
      : { source: 'json-text', value: parsed.value, text, lossless: parsed.lossless };
  }
  const content = Array.isArray(result.content) ? result.content : [];
  return content.length === 0 ? { source: 'empty', value: null } : { source: 'content', value: content };
}

/** The text of every text block, joined by newlines (for an error result's message). */
export function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .filter((block): block is { type: 'text'; text: string } => isJsonObject(block) && block.type === 'text')
    .map((block) => String(block.text))
    .join('\n');
}
