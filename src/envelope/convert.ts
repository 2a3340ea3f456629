import { mayHaveInexactNumbers, parseJsonLossless } from '../canonical/json-text.ts';
import { EnvelopeError } from '../errors/index.ts';
import { type DetectionReport, detectDialect, requireDialect } from './detect.ts';
import type { DialectId, EncodeContext, Loss } from './dialect.ts';
import { codecFor } from './dialects/index.ts';
import type { NormalizedResult } from './model.ts';

/**
 * Decode → normalized model → encode, with every field the target cannot carry
 * reported. The payload's numbers are passed on as written: JSON text is parsed
 * losslessly (parseJsonLossless), and a caller that parsed it already gives the
 * lossless twin as `lossless`. Detection and decoding read plain numbers; the
 * decoded payload is then swapped for its twin, which JSON.stringify writes
 * digit for digit (`12345678901234567890`, `1.0`).
 */

export interface LosslessInput {
  /**
   * `value` with its numbers as written (parseJsonLossless's `lossless` for the
   * text `value` was parsed from). Ignored when `value` is itself JSON text.
   */
  lossless?: unknown;
}

export interface ConvertOptions extends EncodeContext, LosslessInput {
  /** Any loss is an error (CONVERSION_LOSSY) instead of a report. */
  strict?: boolean;
}

export interface Conversion {
  from: DialectId;
  value: unknown;
  losses: Loss[];
}

export interface Normalized {
  from: DialectId;
  model: NormalizedResult;
}

function refuseRequest(dialect: DialectId, role: string): void {
  if (dialect === 'jsonrpc-request') {
    throw new EnvelopeError(
      'NOT_A_RESULT',
      `The ${role} is a jsonrpc-request envelope: a request cannot be converted to or from a tool result`,
    );
  }
}

/** The lossless twin of what the dialect describes: parsed from the text, or the caller's. */
function losslessTwin(input: unknown, report: DetectionReport, options: LosslessInput): unknown {
  if (report.text) {
    const text = input as string;
    return mayHaveInexactNumbers(text) ? parseJsonLossless(text).lossless : undefined;
  }
  return typeof input === 'string' ? undefined : options.lossless;
}

/** Decodes the detected value; the model's payload is the lossless twin's when there is one. */
function decodeLossless(from: DialectId, report: DetectionReport, lossless: unknown): NormalizedResult {
  const codec = codecFor(from);
  const model = codec.decode(report.value);
  if (lossless === undefined || lossless === report.value) return model;
  const payload = codec.payloadOf(report.value);
  if (payload !== undefined && model.data === payload) model.data = codec.payloadOf(lossless);
  return model;
}

/** The normalized model of any dialect's value (JSON text included). */
export function normalize(value: unknown, options: LosslessInput = {}): Normalized {
  const report = detectDialect(value);
  const from = requireDialect(report);
  refuseRequest(from, 'input');
  return { from, model: decodeLossless(from, report, losslessTwin(value, report, options)) };
}

/**
 * Converts a value to the `to` dialect. A value already in that dialect is
 * returned unchanged (text stays text, and given `lossless`, that is returned):
 * no double wrap, no re-encoding.
 */
export function convert(value: unknown, to: DialectId, options: ConvertOptions = {}): Conversion {
  const target = codecFor(to);
  refuseRequest(to, 'target');
  const report = detectDialect(value);
  const from = requireDialect(report);
  refuseRequest(from, 'input');
  if (from === to) {
    const unchanged = typeof value === 'string' ? value : (options.lossless ?? value);
    return { from, value: unchanged, losses: [] };
  }
  const model = decodeLossless(from, report, losslessTwin(value, report, options));
  const context: EncodeContext = {};
  if (options.tool !== undefined) context.tool = options.tool;
  if (options.requestId !== undefined) context.requestId = options.requestId;
  const encoded = target.encode(model, context);
  if (options.strict && encoded.losses.length > 0) {
    throw new EnvelopeError(
      'CONVERSION_LOSSY',
      `Converting ${from} to ${to} would lose ${encoded.losses.map((loss) => loss.path).join(', ')}`,
      { from, to, losses: encoded.losses },
    );
  }
  return { from, value: encoded.value, losses: encoded.losses };
}
