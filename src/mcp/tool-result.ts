import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { parseJsonLossless } from '../canonical/json-text.ts';
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

/** `_meta` key of a tools/list entry holding the tool's own outputSchema (the shape of the payload). */
export const RESULT_SCHEMA_META_KEY = 'mcp-envelope/result-schema';

/** `_meta` key of a CallToolResult listing what the chosen dialect could not carry ({path, reason}[]). */
export const LOSSES_META_KEY = 'mcp-envelope/losses';

/** The subset of a CallToolResult this module reads; SDK client and server results both fit. */
export interface ToolResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** The `_meta` keys the gateway and the pipeline own; a tool's members go beside them. */
export const OWN_META_PREFIX = 'mcp-envelope/';

/** The parts of an answer: what the pipeline adds, and what the tool returned. */
export interface AnswerParts {
  /** The envelope (`structuredContent`, and its JSON as the first text block); absent in `legacy`. */
  envelope?: Record<string, unknown>;
  /** The envelope's exact text, when it arrived as text (kept byte for byte). */
  envelopeText?: string;
  /** Without an envelope: a text that leads the answer (the `legacy` dialect's error message). */
  lead?: string;
  /** Without an envelope: `structuredContent` to add when the tool sent none. */
  structured?: Record<string, unknown>;
  isError: boolean;
  /** What the tool returned (after the caller's return mode); absent when it never ran. */
  tool?: ToolResultLike;
  /** Blocks that carry what the envelope could not, sent unless the tool's own blocks already do. */
  fallback?: readonly unknown[];
  /** The pipeline's `_meta` entries (keys under OWN_META_PREFIX). */
  meta: Record<string, unknown>;
}

/**
 * The one shape of an answer, in every dialect: an envelope adds, it never
 * takes away. The envelope leads (`content[0]` holds its JSON, and it is the
 * `structuredContent`), then every content block the tool returned follows
 * unchanged, in order (an image stays an image block, a text its exact text,
 * annotations and `_meta` included); the tool's result `_meta` members are kept
 * beside the pipeline's own. A tool block that already is the envelope's text
 * (the tool's own envelope, passed through) leads in the envelope's place.
 */
export function composeToolResult(parts: AnswerParts): CallToolResult {
  const own = parts.tool && Array.isArray(parts.tool.content) ? (parts.tool.content as unknown[]) : [];
  const content: unknown[] = [];
  let structuredContent: Record<string, unknown> | undefined;
  let rest = own;
  if (parts.envelope) {
    structuredContent = parts.envelope;
    const text = parts.envelopeText ?? JSON.stringify(parts.envelope);
    const [first] = own;
    if (isJsonObject(first) && first.type === 'text' && first.text === text) {
      content.push(first);
      rest = own.slice(1);
    } else content.push({ type: 'text', text });
  } else {
    const toolStructured = parts.tool?.structuredContent;
    structuredContent = isJsonObject(toolStructured) ? toolStructured : parts.structured;
    if (parts.lead !== undefined) {
      const [first] = own;
      if (isJsonObject(first) && first.type === 'text' && first.text === parts.lead) {
        content.push(first);
        rest = own.slice(1);
      } else content.push({ type: 'text', text: parts.lead });
    }
  }
  content.push(...rest);
  for (const block of parts.fallback ?? []) {
    if (!content.some((sent) => isDeepStrictEqual(sent, block))) content.push(block);
  }
  if (content.length === 0 && structuredContent !== undefined)
    content.push({ type: 'text', text: JSON.stringify(structuredContent) });
  const result: CallToolResult = { content: content as CallToolResult['content'] };
  if (structuredContent !== undefined) result.structuredContent = structuredContent;
  if (parts.isError) result.isError = true;
  const toolMeta = isJsonObject(parts.tool?._meta) ? parts.tool._meta : {};
  const meta = { ...toolMeta, ...parts.meta };
  if (Object.keys(meta).length > 0) result._meta = meta;
  return result;
}

/**
 * Where a tool result's payload came from:
 * - `structured`: `structuredContent`;
 * - `json-text`: a single text block holding a JSON object or array (parsed strictly; the
 *   text is kept too, so nothing the parse normalises, such as number spelling, is lost);
 *
 * `lossless`, when present, is `value` with its numbers as the text wrote them
 * (parseJsonLossless): for `json-text` the text's own, for `structured` those of a
 * single text block that renders the same JSON (servers send both). Decisions are
 * made on `value`; what is sent on carries `lossless`.
 * - `text`: a single text block that is not a JSON object or array (a JSON scalar stays text);
 * - `content`: anything else (several blocks, images, resources), as the content array itself;
 * - `empty`: no structured content and an empty content array.
 */
export type ToolResultPayload =
  | { source: 'structured'; value: unknown; lossless?: unknown; text?: string }
  | { source: 'json-text'; value: unknown; text: string; lossless?: unknown }
  | { source: 'text'; value: string; text: string }
  | { source: 'content'; value: unknown[] }
  | { source: 'empty'; value: null };

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
  // A text that is a JSON scalar stays the text: `18446744073709551616` read as a number
  // would reach a client as 18446744073709552000, and `"x"` would lose its quotes.
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return undefined;
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

/** Size and SHA-256 of the bytes base64 text stands for: a reference that binds them. */
function bytesOf(base64: string): { size_bytes: number; sha256: string } {
  const bytes = Buffer.from(base64, 'base64');
  return { size_bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** A block without its bytes: its other members, the size and digest of what was left out, where it is. */
function blockReference(block: Record<string, unknown>, index: number): Record<string, unknown> {
  const { data, resource, ...members } = block;
  const reference: Record<string, unknown> = { ...members };
  if (typeof data === 'string') Object.assign(reference, bytesOf(data));
  if (isJsonObject(resource)) {
    const { blob, text, ...about } = resource;
    reference.resource = {
      ...about,
      ...(typeof blob === 'string' ? bytesOf(blob) : {}),
      ...(typeof text === 'string'
        ? { text_sha256: createHash('sha256').update(text, 'utf8').digest('hex') }
        : {}),
    };
  } else if (resource !== undefined) reference.resource = resource;
  reference.content_index = index;
  return reference;
}

/**
 * A tool's content blocks (several, or one that is no text) as an envelope's
 * payload refers to them, one entry per block: a text as its text (an object
 * or array as its JSON value, numbers as written in `exact`), any other block
 * as its members without its bytes (`size_bytes` and `sha256` of the decoded
 * `data` or `blob`, `text_sha256` of an embedded text resource, so the
 * reference binds them), with `content_index`, the index of the block itself
 * in the answer's `content` (the tool's blocks follow the
 * envelope's own text block, so `offset` is 1).
 */
export function contentReference(
  content: readonly unknown[],
  offset = 1,
): { value: unknown[]; exact: unknown[] } {
  const value: unknown[] = [];
  const exact: unknown[] = [];
  content.forEach((block, index) => {
    if (isJsonObject(block) && block.type === 'text' && typeof block.text === 'string') {
      const parsed = parseTextLossless(block.text);
      value.push(parsed ? parsed.value : block.text);
      exact.push(parsed ? (parsed.lossless ?? parsed.value) : block.text);
      return;
    }
    const reference = isJsonObject(block) ? blockReference(block, index + offset) : block;
    value.push(reference);
    exact.push(reference);
  });
  return { value, exact };
}

/** The text of every text block, joined by newlines (for an error result's message). */
export function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .filter((block): block is { type: 'text'; text: string } => isJsonObject(block) && block.type === 'text')
    .map((block) => String(block.text))
    .join('\n');
}
