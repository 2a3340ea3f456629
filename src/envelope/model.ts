/**
 * The normalized model every dialect codec decodes to and encodes from.
 * Converting between dialects goes through it; a field a target dialect cannot
 * carry is reported, never silently dropped.
 */

export interface NormalizedError {
  code: string;
  message: string;
  retriable: boolean;
  details?: Record<string, unknown>;
  /**
   * The code exactly as a dialect spelled it, kept only when that dialect's
   * spelling of `code` would differ (so re-encoding in the same dialect gives
   * back the same bytes).
   */
  native?: { dialect: string; code: string };
}

/** One entry of prov-spec's `errors[]` / `warnings[]`. */
export interface IssueEntry {
  code: string;
  message: string;
  details?: Record<string, string | number | boolean | null>;
  retryable?: boolean;
  evidence?: unknown[];
}

export interface UpgradeHint {
  feature: string;
  tier: string;
  reason: string;
}

export interface RateLimitInfo {
  limit: number | null;
  remaining: number | null;
  reset_at: string | null;
  /** Which limit this is (per key, per tool, …), as real hosted servers name it. */
  bucket?: string | null;
  /** Members a server adds beyond these are kept as they came. */
  [member: string]: unknown;
}

export interface NormalizedMeta {
  request_id?: string;
  duration_ms?: number;
  adapter?: string;
  tier?: string;
  tool_version?: string;
  capabilities?: string[];
  upgrade_hints?: UpgradeHint[];
  rate_limit?: RateLimitInfo;
  schema_hints?: Record<string, string>;
  /** The calling client, as the accessibility suite's header names it. */
  client?: { name?: string; version?: string };
}

export interface NormalizedResult {
  ok: boolean;
  tool?: string;
  /** The tool's payload, unchanged. `null` when there is none. */
  data: unknown;
  /** The primary error when `ok` is false. */
  error?: NormalizedError;
  errors?: IssueEntry[];
  warnings?: IssueEntry[];
  /** A prov.record.v0.1, or null when the source said explicitly that there is none. */
  provenance?: unknown;
  meta?: NormalizedMeta;
  /**
   * The version of its dialect the source carried: Hosted v2's dated
   * `schema_version`, the accessibility suite's envelope name, Code Scalpel's
   * contract version. Encoding in the same dialect writes it back.
   */
  version?: string;
  /**
   * Top-level members the source carried beyond its dialect's own (servers add
   * them as their envelopes evolve). Kept, written back by dialects open at the
   * top level, reported as a loss by closed ones.
   */
  extensions?: Record<string, unknown>;
  /**
   * The dialect the model was decoded from. Wrapping a legacy payload follows the
   * compatibility policy (which adds a schema hint); converting an envelope keeps
   * its metadata exactly as it was.
   */
  decodedFrom?: string;
}
