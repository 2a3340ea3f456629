import type { NormalizedResult } from './model.ts';

/**
 * The contract every dialect codec implements. A codec knows one response
 * contract of the seeds: how to recognise it (never by guessing: only when the
 * value validates against the dialect's schema), how to decode it into the
 * normalized model, and how to encode the model back, reporting every field the
 * dialect cannot carry.
 */

export const DIALECT_IDS = [
  'prov-v0.1',
  'scalpel-v1',
  'hosted-v2',
  'a11y-v0.1',
  'jsonrpc-request',
  'legacy',
] as const;
export type DialectId = (typeof DIALECT_IDS)[number];
/** Dialects a tool result can be encoded in (the request envelope is not a result). */
export type ResultDialectId = Exclude<DialectId, 'jsonrpc-request'>;

export type Detection =
  | { dialect: DialectId; match: true }
  | {
      dialect: DialectId;
      match: false;
      /** True when the value claims the dialect (its marker fields) but does not validate. */
      near: boolean;
      /** Why it is not this dialect, one line each, with JSON Pointers where they help. */
      reasons: string[];
    };

/** One field of the model that the target dialect could not carry. */
export interface Loss {
  /** JSON Pointer into the normalized model, e.g. `/meta/upgrade_hints`. */
  path: string;
  reason: string;
  /** The field still travels, in another form (the accessibility suite's `result.value`). */
  reshaped?: true;
}

export interface EncodeContext {
  /** Tool name, when the model has none. */
  tool?: string;
  /** Request id to use when the model has none (dialects that require one). */
  requestId?: string;
  /** The dialect version to write when the model carries none of this dialect's own. */
  version?: string;
}

export interface Encoded {
  value: unknown;
  losses: Loss[];
}

export interface DialectCodec {
  readonly id: DialectId;
  /** JSON Schema (draft 2020-12) of the dialect's envelope, usable as a tool's outputSchema. */
  readonly schema: Record<string, unknown>;
  /** The `$id` the schema is registered under in the SchemaRegistry. */
  readonly schemaId: string;
  /**
   * True when the value carries the dialect's marker fields, valid or not: a
   * value that claims a dialect and does not validate is a near miss, never legacy.
   */
  claims(value: unknown): boolean;
  /** The tool payload of a value this dialect claims (to find envelopes nested in envelopes). */
  payloadOf(value: unknown): unknown;
  /** The version of the dialect a value this dialect claims carries, if it names one. */
  versionOf(value: unknown): string | undefined;
  detect(value: unknown): Detection;
  /** Decodes a value that `detect` accepted; throws EnvelopeError otherwise. */
  decode(value: unknown): NormalizedResult;
  encode(model: NormalizedResult, context?: EncodeContext): Encoded;
}
