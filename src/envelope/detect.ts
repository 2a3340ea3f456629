import { EnvelopeError } from '../errors/index.ts';
import type { Detection, DialectId } from './dialect.ts';
import { CODECS, ENVELOPE_CODECS } from './dialects/index.ts';
import { fromText } from './dialects/shared.ts';

/**
 * Names a value's dialect without guessing: a dialect is named only when the
 * value validates against its schema. A value that claims a dialect (its marker
 * fields) and does not validate is a near miss, with reasons; it is never taken
 * for a legacy payload, since wrapping it would nest one envelope in another.
 */

export interface DetectionReport {
  /** The dialect, or null when the value is a near miss, ambiguous or double-wrapped. */
  dialect: DialectId | null;
  /** The dialect version the value carries (Hosted v2's date, the envelope name), or null. */
  version: string | null;
  /** True when the value was JSON text that holds an envelope. */
  text: boolean;
  /** The value the dialect describes: the parsed envelope for text, else the input. */
  value: unknown;
  /** Dialects whose markers the value carries without validating. */
  near: DialectId[];
  /** Why no dialect was named (empty when one was). */
  reasons: string[];
  /** The detection of every dialect the value claims. */
  detections: Detection[];
}

/** Dialects whose payload may not itself be an envelope (the request's input is not a result). */
const RESULT_DIALECTS = ENVELOPE_CODECS.filter((codec) => codec.id !== 'jsonrpc-request');

/** The result dialects a payload (a value, or JSON text) claims. */
export function claimedBy(payload: unknown): DialectId[] {
  if (payload === undefined || payload === null) return [];
  if (typeof payload !== 'object' && typeof payload !== 'string') return [];
  const candidate = fromText(payload);
  return RESULT_DIALECTS.filter((codec) => codec.claims(candidate)).map((codec) => codec.id);
}

/**
 * The envelopes a payload is (a value, or JSON text): every result dialect it
 * validates as, plus any claim of mcp.envelope.v0.1, whose spec forbids nesting
 * one in `result` valid or not (its `double_wrapped` vector). A near miss of
 * another dialect is no envelope: it is a tool's own payload, kept as it is.
 */
export function envelopesIn(payload: unknown): DialectId[] {
  if (payload === undefined || payload === null) return [];
  if (typeof payload !== 'object' && typeof payload !== 'string') return [];
  const candidate = fromText(payload);
  return RESULT_DIALECTS.filter(
    (codec) => codec.claims(candidate) && (codec.id === 'prov-v0.1' || codec.detect(candidate).match),
  ).map((codec) => codec.id);
}

export function detectDialect(input: unknown): DetectionReport {
  if (input === undefined) {
    throw new EnvelopeError(
      'JSON_UNSUPPORTED_VALUE',
      'Cannot detect the dialect of undefined: it is not JSON',
    );
  }
  const parsed = fromText(input);
  const text = typeof input === 'string' && parsed !== input;
  const claimed = ENVELOPE_CODECS.filter((codec) => codec.claims(parsed));
  if (claimed.length === 0) {
    // Text that holds JSON but no envelope stays text: the payload is never reformatted.
    return {
      dialect: 'legacy',
      version: null,
      text: false,
      value: input,
      near: [],
      reasons: [],
      detections: [],
    };
  }
  const detections = claimed.map((codec) => codec.detect(parsed));
  const matched = detections.filter((detection) => detection.match).map((detection) => detection.dialect);
  const base = { version: null, text, value: parsed, detections };
  if (matched.length > 1) {
    return {
      ...base,
      dialect: null,
      near: matched,
      reasons: [`/ validates as ${matched.join(' and ')}: ambiguous, so no dialect is named`],
    };
  }
  const [dialect] = matched;
  if (dialect !== undefined) {
    const nested = dialect === 'jsonrpc-request' ? [] : envelopesIn(CODECS[dialect].payloadOf(parsed));
    if (nested.length > 0) {
      return {
        ...base,
        dialect: null,
        near: [dialect],
        reasons: [
          `double-wrapped: the ${dialect} envelope's payload is itself a ${nested.join(' / ')} envelope${typeof CODECS[dialect].payloadOf(parsed) === 'string' ? ' (as JSON text)' : ''}`,
        ],
      };
    }
    return { ...base, dialect, version: CODECS[dialect].versionOf(parsed) ?? null, near: [], reasons: [] };
  }
  const near = claimed.map((codec) => codec.id);
  const reasons = detections.flatMap((detection) =>
    detection.match ? [] : detection.reasons.map((reason) => `${detection.dialect}: ${reason}`),
  );
  if (near.length > 1)
    reasons.unshift(`/ carries the markers of ${near.join(' and ')} but validates as neither`);
  return { ...base, dialect: null, near, reasons };
}

/** The detected dialect, or a clear error: DIALECT_AMBIGUOUS or ENVELOPE_INVALID with the reasons. */
export function requireDialect(report: DetectionReport): DialectId {
  if (report.dialect !== null) return report.dialect;
  const ambiguous = report.reasons[0]?.includes('ambiguous') === true;
  throw new EnvelopeError(
    ambiguous ? 'DIALECT_AMBIGUOUS' : 'ENVELOPE_INVALID',
    `Not a valid envelope of any dialect (${report.near.join(', ')}): ${report.reasons.slice(0, 4).join('; ')}`,
    { near: report.near, reasons: report.reasons },
  );
}
