import type { KeyObject } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ReturnMode } from '../../artifacts/service.ts';
import type { ResultDialectId } from '../../envelope/dialect.ts';
import type { IssueEntry, RateLimitInfo, UpgradeHint } from '../../envelope/model.ts';
import type { Profile, ProfileConfig } from '../../envelope/profiles.ts';
import type { FeatureGate, TierConfig } from '../../envelope/tiers.ts';
import type { IdSource } from '../../ids/index.ts';
import type { RateDecision } from '../../ratelimit/gcra.ts';
import type { RateCheck } from '../../ratelimit/limiter.ts';
import type { SchemaRegistry } from '../../schemas/index.ts';
import type { ToolResultLike } from '../tool-result.ts';
import type { CallSummary } from './report.ts';

/** The pipeline's public vocabulary: what a call gives it and how it is configured. */

export type ValidationMode = 'enforce' | 'warn' | 'off';

/** What the pipeline needs to know about a tool (a tools/list entry fits). */
export interface PipelineTool {
  name: string;
  title?: string;
  /** Version recorded in provenance; defaults to the server's. */
  version?: string;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  /**
   * `sha256:<hex>` (RFC 8785) of the definition the call ran under, when the
   * gateway pins its tools: the record's arguments carry it as the label
   * `tool_definition`.
   */
  definitionDigest?: string;
}

export type ToolArguments = Record<string, unknown> | undefined;

/**
 * A caller's access to a tool that its access rules refuse: `hidden`, the
 * error thrown as it is (the answer for a tool that does not exist); `upgrade`,
 * answered with UPGRADE_REQUIRED and this hint (a higher tier would allow it).
 */
export type CallAccess = { hidden: unknown } | { upgrade: UpgradeHint };

export interface ToolCall {
  tool: PipelineTool;
  arguments?: ToolArguments;
  /** The request's `params._meta` (provenance controls live here). */
  meta?: unknown;
  /** Runs the tool. A rejection is a failed execution (exception, crash, timeout). */
  invoke: (args: ToolArguments, signal?: AbortSignal) => Promise<ToolResultLike>;
  /** The caller's signal: aborted when the caller withdrew the call (reported as `cancelled`). */
  signal?: AbortSignal;
  /**
   * Results that are not the call's answer yet (an SDK input-required result,
   * say) and go back unchanged: no envelope, no validation, no record, no report.
   */
  isInterim?: (result: ToolResultLike) => boolean;
  /** Rejections that are protocol signals rather than failures (the SDK's URL elicitation), rethrown as they are. */
  isProtocolSignal?: (error: unknown) => boolean;
  /** This caller's tier (an authenticated gateway client), in place of the pipeline's `tier`. */
  tier?: string;
  /**
   * Set when the caller's access rules refuse the tool: checked first, before
   * the rate limit and anything else, in every mode, so a refused call never
   * reaches the tool. Absent: allowed.
   */
  access?: CallAccess;
  /** Who calls, for rate limits kept per caller (a bearer token's id, an address); default: one shared caller. */
  principal?: string;
  /** Told when the pipeline's rate limit denies this call (an HTTP server adds its Retry-After header). */
  onRateLimited?: (decision: RateDecision) => void;
  /**
   * Labels the record's `arguments` input carries besides `tool_definition`:
   * the gateway puts who asked and the access rule that allowed it here, and
   * the trace and span ids of the call's span (`trace_id`, `span_id`) when it
   * traces, so a record leads to its caller and its trace.
   */
  labels?: Readonly<Record<string, string>>;
  /** The caller's correlation id, sent as the answer's request id instead of one derived from the run id. */
  requestId?: string;
  /**
   * Warnings the invoke notes while the tool runs (a process that wrote to
   * stderr, say), read once it has answered, joining the envelope's warnings.
   */
  warnings?: IssueEntry[];
  /** The caller's `return_mode`, when `meta` no longer carries it (the gateway strips it before forwarding). */
  returnMode?: unknown;
  /**
   * Receives this call's summary, after the pipeline's `onCall` (the gateway's
   * log line and ledger entry), as a function that builds it once: a listener
   * may build it after the answer has gone (its digests cost), and it still
   * says what the call was when it was answered.
   */
  report?: (summary: () => CallSummary) => void;
}

/** A pipeline's mode: a result dialect, or `passthrough` (results relayed as they came). */
export type PipelineMode = ResultDialectId | 'passthrough';

export interface PipelineOptions {
  /**
   * Dialect of every result; default `prov-v0.1`. `passthrough` runs the same
   * gates (rate limit, tier gate, return mode) and report, and relays the tool's
   * result untouched: no input or output validation, no envelope, no record;
   * `_meta` is not read for controls; a rejected invoke is rethrown as it came
   * (an upstream's JSON-RPC error stays one); the pipeline's own answers (a
   * denial) are mcp.envelope.v0.1 errors; a return mode applies only when the
   * caller asked for one.
   */
  dialect?: PipelineMode;
  /** Arguments against the tool's inputSchema; default `enforce`. */
  inputValidation?: ValidationMode;
  /** Structured output against the tool's outputSchema; default `enforce`. */
  outputValidation?: ValidationMode;
  /**
   * How rejected arguments are answered: `result` (default) an error envelope with
   * INVALID_INPUT, like every other failure; `jsonrpc-error` a JSON-RPC error -32602
   * (thrown as a PipelineRpcError).
   */
  invalidInput?: 'result' | 'jsonrpc-error';
  /** Run and request ids; pass `createIdSource(seed)` for deterministic ids. Default random. */
  ids?: IdSource;
  /** Identity recorded in provenance; withEnvelope fills it from the wrapped server. */
  server?: { name: string; version: string };
  /** Adapter name in envelopes and records; default `mcp-envelope`. */
  adapter?: string;
  /** The caller's tier: checked by `gate`, and recorded by the dialects that carry one. */
  tier?: string;
  /**
   * Tier feature gate: a call whose features the tier lacks is answered with
   * UPGRADE_REQUIRED and upgrade hints, without running the tool.
   */
  gate?: FeatureGate | TierConfig;
  /** The features a call uses; default: the tool's name. */
  featuresOf?: (tool: PipelineTool, args: ToolArguments) => readonly string[];
  /** Response profile for wrapped payloads (tools' own envelopes are never trimmed); default `debug`. */
  profile?: Profile;
  profileConfig?: ProfileConfig;
  registry?: SchemaRegistry;
  /**
   * Most array elements and object members the arguments may hold in all; a
   * larger payload is INVALID_INPUT before any schema work. Default: no limit.
   */
  maxArgumentElements?: number;
  /**
   * Checked first on every call, before anything else runs: a denial is answered
   * with RATE_LIMITED (retriable, with `reset_at`) and the tool is not invoked.
   * Every answer then carries the binding decision's rate metadata where the
   * dialect has a place for it (hosted v2: also the null placeholder when no rule
   * applies), else, when a rule applies, in `_meta["mcp-envelope/rate_limit"]`.
   * A RateLimiter's `check` fits: `(call) => limiter.check({ principal: call.principal, tool: call.tool.name })`.
   */
  rateLimit?: (call: ToolCall) => RateCheck;
  /** Told when the artifact store fails to keep a relayed result's files (they stay inline); default none. */
  onStoreError?: (error: unknown) => void;
  /** A tool that has not answered after this long has failed (TIMEOUT, retriable); its signal is aborted. */
  timeoutMs?: number;
  /**
   * An Ed25519 private key (`loadPrivateKey`): every provenance record the
   * pipeline builds is then signed (record digest and signature, claiming both
   * methods) before it is placed in the answer and reported, so the caller's
   * copy and `onCall`'s are the same signed record. `withEnvelope` takes it
   * too, through these options; the gateway sets it from `signing`. Another
   * kind of key is KEY_INVALID when the pipeline is created. Default: unsigned.
   */
  signingKey?: KeyObject;
  /**
   * Where binaries and oversized texts of results are stored, as the caller's
   * `return_mode` asks (return-mode.ts): each stored file is replaced by its
   * download descriptor and registered as an output artifact of the record.
   * Default: none, results stay as the tool gave them.
   */
  artifacts?: ArtifactSink;
  /**
   * Receives one summary per answered call, with its provenance record when one was
   * built. Calls answered with a JSON-RPC error (`invalidInput: 'jsonrpc-error'`) are
   * reported too; interim results and protocol signals are not calls' answers.
   */
  onCall?: (summary: CallSummary) => void;
}

export interface Pipeline {
  readonly dialect: PipelineMode;
  /** The envelope schema to advertise as every tool's outputSchema (none for `legacy`). */
  readonly outputSchema: Record<string, unknown> | undefined;
  callTool(call: ToolCall): Promise<CallToolResult>;
}

/** The rate limit's word on one call. */
export interface CallRate {
  /** The binding decision's metadata; all null when no rule applies. */
  info: RateLimitInfo;
  /** Whether a rule applies (else `info` is the null placeholder). */
  applies: boolean;
  denied: boolean;
}

/** An artifact as the sink stored it, and how it is reached. */
export interface StoredArtifact {
  downloadId: string;
  /** SHA-256 of the bytes, lower-case hex. */
  digest: string;
  sizeBytes: number;
  mediaType: string;
  filename: string;
  /** ISO 8601. */
  expiresAt: string;
  /** Absent when there is no HTTP surface to download from. */
  downloadUrl: string | undefined;
  /** Readable through the serving side's resources/read. */
  resourceUri: string;
}

/** Where a pipeline stores what it takes out of results (the gateway's artifact service, say). */
export interface ArtifactSink {
  /** A result larger than this (its text and binary members, in bytes) has its largest texts stored too. */
  readonly inlineMaxBytes: number;
  /** The mode of callers that do not choose one. */
  readonly defaultReturnMode: ReturnMode;
  /** Largest artifact stored; a larger one answers the call with TOO_LARGE. */
  readonly maxBytes?: number;
  store(
    bytes: Uint8Array,
    what: { mediaType: string; filename: string; owner: string },
  ): Promise<StoredArtifact>;
  /** The artifact a download id grants, when the id verifies and its grant is in the store. */
  resolve(downloadId: string): Promise<StoredArtifact | undefined>;
}
