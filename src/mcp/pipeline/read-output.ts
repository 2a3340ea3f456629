import { envelopesIn } from '../../envelope/detect.ts';
import { detectEnvelope, type EnvelopeDetection } from '../dialects.ts';
import {
  contentReference,
  type ToolResultLike,
  type ToolResultPayload,
  toolResultPayload,
} from '../tool-result.ts';

/** What the tool returned, read once: every later decision works from this. */
export interface ToolOutput {
  raw: ToolResultLike;
  payload: ToolResultPayload;
  /** The payload is JSON: structuredContent, or a single text block holding JSON. */
  structured: boolean;
  isError: boolean;
  /** Detected once: an envelope, a value that claims a dialect without being one, or neither. */
  detection: EnvelopeDetection | undefined;
  /**
   * A claim that is no envelope but holds one, or claims mcp.envelope.v0.1, cannot be
   * wrapped: that would nest envelopes. Any other claim is a near miss, the tool's own data.
   */
  nests: boolean;
  /** The dialect and version of what the tool returned (`legacy` and null for a bare payload). */
  source: { dialect: string; version: string | null };
  /** What is sent on: the payload's numbers as the tool wrote them. Decisions read `payload.value`. */
  exact: unknown;
}

/** Stage 3: the tool's result, its payload found and its dialect detected, once. */
export function readOutput(raw: ToolResultLike): ToolOutput {
  let payload = toolResultPayload(raw);
  // Blocks travel as themselves after the envelope: its payload refers to them, bytes left out.
  let referenced: unknown[] | undefined;
  if (payload.source === 'content') {
    const reference = contentReference(payload.value);
    payload = { source: 'content', value: reference.value };
    referenced = reference.exact;
  }
  const structured = payload.source === 'structured' || payload.source === 'json-text';
  const exact =
    payload.source === 'structured' || payload.source === 'json-text'
      ? (payload.lossless ?? payload.value)
      : (referenced ?? payload.value);
  const detection = structured ? detectEnvelope(payload.value) : undefined;
  return {
    raw,
    payload,
    structured,
    isError: raw.isError === true,
    detection,
    nests: detection !== undefined && (detection.match || envelopesIn(payload.value).length > 0),
    source: {
      dialect: detection?.match ? detection.dialect : 'legacy',
      version: detection?.match ? (detection.model.version ?? null) : null,
    },
    exact,
  };
}

/** What a tool returned, as content blocks that can travel beside an envelope. */
export function originalBlocks(raw: ToolResultLike): unknown[] {
  const content = Array.isArray(raw.content) ? raw.content : [];
  if (content.length > 0) return content;
  return raw.structuredContent === undefined
    ? []
    : [{ type: 'text', text: JSON.stringify(raw.structuredContent) }];
}
