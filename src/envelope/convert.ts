import { EnvelopeError } from '../errors/index.ts';
import { detectDialect, requireDialect } from './detect.ts';
import type { DialectId, EncodeContext, Loss } from './dialect.ts';
import { codecFor } from './dialects/index.ts';
import type { NormalizedResult } from './model.ts';

/** Decode → normalized model → encode, with every field the target cannot carry reported. */

export interface ConvertOptions extends EncodeContext {
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

/** The normalized model of any dialect's value (JSON text included). */
export function normalize(value: unknown): Normalized {
  const report = detectDialect(value);
  const from = requireDialect(report);
  refuseRequest(from, 'input');
  return { from, model: codecFor(from).decode(report.value) };
}

/**
 * Converts a value to the `to` dialect. A value already in that dialect is
 * returned unchanged (text stays text): no double wrap, no re-encoding.
 */
export function convert(value: unknown, to: DialectId, options: ConvertOptions = {}): Conversion {
  const target = codecFor(to);
  refuseRequest(to, 'target');
  const report = detectDialect(value);
  const from = requireDialect(report);
  refuseRequest(from, 'input');
  if (from === to) return { from, value, losses: [] };
  const model = codecFor(from).decode(report.value);
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
