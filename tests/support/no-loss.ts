import { isDeepStrictEqual } from 'node:util';
import { detectEnvelope } from '../../src/mcp/dialects.ts';
import { type ToolResultLike, toolResultPayload } from '../../src/mcp/tool-result.ts';

/**
 * The no-loss property: whatever an upstream answered, the client's answer
 * contains the payload the tool produced (an envelope's payload member, or the
 * whole payload of a legacy answer), in the envelope or beside it.
 */

/** Whether the upstream answered with a valid envelope of some dialect. */
export function isEnvelopeAnswer(upstream: ToolResultLike): boolean {
  const payload = toolResultPayload(upstream);
  const structured = payload.source === 'structured' || payload.source === 'json-text';
  return structured && detectEnvelope(payload.value)?.match === true;
}

/** What the tool produced: an envelope's payload, else the whole payload (content blocks as they came). */
export function producedPayload(upstream: ToolResultLike): unknown {
  const payload = toolResultPayload(upstream);
  const structured = payload.source === 'structured' || payload.source === 'json-text';
  const detection = structured ? detectEnvelope(payload.value) : undefined;
  return detection?.match ? detection.model.data : payload.value;
}

function texts(answer: ToolResultLike): string[] {
  const content = Array.isArray(answer.content) ? answer.content : [];
  return content
    .map((block) => (block as { text?: unknown }).text)
    .filter((text): text is string => typeof text === 'string');
}

/** Whether some subtree of `tree` equals `target`. */
function holds(tree: unknown, target: unknown): boolean {
  const stack = [tree];
  while (stack.length > 0) {
    const node = stack.pop();
    if (isDeepStrictEqual(node, target)) return true;
    if (node !== null && typeof node === 'object') stack.push(...Object.values(node));
  }
  return false;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether `answer` holds `produced` somewhere a client can read it, unchanged. */
export function answerContains(answer: ToolResultLike, produced: unknown): boolean {
  if (produced === null || produced === undefined) return true;
  const serialized = JSON.stringify(produced);
  if (holds(answer.structuredContent, produced)) return true;
  if (texts(answer).some((text) => text.includes(serialized) || holds(parsed(text), produced))) return true;
  if (typeof produced === 'string' && texts(answer).some((text) => text.includes(produced))) return true;
  // Content blocks the tool returned (images, several blocks) travel as they came.
  if (Array.isArray(produced) && Array.isArray(answer.content)) {
    const content = answer.content;
    return produced.every((block) => content.some((sent) => isDeepStrictEqual(sent, block)));
  }
  return false;
}

/**
 * What of the upstream's whole CallToolResult is missing from the client's
 * answer (empty when nothing is): every content block, as a block of the same
 * type, deep-equal (texts exact, annotations and bytes included) and in the
 * same order; `structuredContent` deep-equal somewhere in the answer's; every
 * result `_meta` member with its value; the `isError` sense.
 */
export function missingFromAnswer(upstream: ToolResultLike, answer: ToolResultLike): string[] {
  const missing: string[] = [];
  const sent = Array.isArray(answer.content) ? answer.content : [];
  let from = 0;
  for (const [index, block] of (Array.isArray(upstream.content) ? upstream.content : []).entries()) {
    const at = sent.findIndex(
      (candidate, position) => position >= from && isDeepStrictEqual(candidate, block),
    );
    if (at < 0) missing.push(`/content/${index}`);
    else from = at + 1;
  }
  // Where the dialect has no room for it (an error envelope without data), a text block carries it.
  const structured = upstream.structuredContent;
  if (
    structured !== undefined &&
    !holds(answer.structuredContent, structured) &&
    !texts(answer).some((text) => isDeepStrictEqual(parsed(text), structured))
  )
    missing.push('/structuredContent');
  const meta = answer._meta ?? {};
  for (const [key, value] of Object.entries(upstream._meta ?? {})) {
    if (key.startsWith('mcp-envelope/')) continue;
    if (!isDeepStrictEqual(meta[key], value)) missing.push(`/_meta/${key}`);
  }
  if ((upstream.isError === true) !== (answer.isError === true) && upstream.isError === true)
    missing.push('/isError');
  return missing;
}
