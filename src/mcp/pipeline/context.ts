import type { KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ReturnMode } from '../../artifacts/service.ts';
import { canonicalize } from '../../canonical/canonicalize.ts';
import { digestBytes } from '../../canonical/digest.ts';
import type { WrapOptions } from '../../envelope/compat-policy.ts';
import type { ResultDialectId } from '../../envelope/dialect.ts';
import type { IssueEntry } from '../../envelope/model.ts';
import type { Profile, ProfileConfig } from '../../envelope/profiles.ts';
import { FeatureGate } from '../../envelope/tiers.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { createIdSource, type IdSource } from '../../ids/index.ts';
import { type CallControls, readCallControls } from '../../provenance/index.ts';
import { keyIdFor } from '../../provenance/integrity.ts';
import type { Artifact } from '../../provenance/record.ts';
import { defaultRegistry, type SchemaRegistry, type Validator } from '../../schemas/index.ts';
import { assertDialectAvailable, outputSchemaFor } from '../dialects.ts';
import { canonicalizeOffThread } from './off-thread.ts';
import type { CallRate, PipelineMode, PipelineOptions, ToolCall, ValidationMode } from './types.ts';

/** The pipeline's options with every default applied, resolved once per pipeline. */
export interface Settings {
  readonly options: PipelineOptions;
  /** `passthrough`, or the dialect of every answer. */
  readonly mode: PipelineMode;
  /** The dialect the pipeline answers in (its own answers, in passthrough). */
  readonly dialect: ResultDialectId;
  readonly outputSchema: Record<string, unknown> | undefined;
  readonly inputMode: ValidationMode;
  readonly outputMode: ValidationMode;
  readonly invalidInputAs: 'result' | 'jsonrpc-error';
  readonly ids: IdSource;
  readonly adapter: string;
  readonly registry: SchemaRegistry;
  readonly gate: FeatureGate | undefined;
  /** The tier of callers that bring none. */
  readonly tier: string;
  readonly profile: Profile;
  readonly profileConfig: ProfileConfig | undefined;
  /** The key records are signed with and its id (computed once, not per call); undefined: unsigned. */
  readonly signing: { key: KeyObject; keyId: string } | undefined;
}

const DEFAULT_ADAPTER = 'mcp-envelope';

export function resolveSettings(options: PipelineOptions): Settings {
  const passthrough = options.dialect === 'passthrough';
  // A passthrough pipeline's own answers (a denial) are mcp.envelope.v0.1.
  const dialect: ResultDialectId =
    options.dialect === undefined || options.dialect === 'passthrough' ? 'prov-v0.1' : options.dialect;
  assertDialectAvailable(dialect);
  const gate =
    options.gate === undefined || options.gate instanceof FeatureGate
      ? options.gate
      : new FeatureGate(options.gate);
  return {
    options,
    mode: passthrough ? 'passthrough' : dialect,
    dialect,
    outputSchema: passthrough ? undefined : outputSchemaFor(dialect),
    inputMode: passthrough ? 'off' : (options.inputValidation ?? 'enforce'),
    outputMode: passthrough ? 'off' : (options.outputValidation ?? 'enforce'),
    invalidInputAs: options.invalidInput ?? 'result',
    ids: options.ids ?? createIdSource(),
    adapter: options.adapter ?? DEFAULT_ADAPTER,
    registry: options.registry ?? defaultRegistry(),
    gate,
    tier: options.tier ?? gate?.tiers[0] ?? 'community',
    profile: options.profile ?? 'debug',
    profileConfig: options.profileConfig,
    signing: options.signingKey === undefined ? undefined : signingWith(options.signingKey),
  };
}

/**
 * Checked here rather than at the first call: a key of another kind would
 * otherwise sign records as "ed25519" with a signature no verifier accepts.
 */
function signingWith(key: KeyObject): { key: KeyObject; keyId: string } {
  if (key.type !== 'private' || key.asymmetricKeyType !== 'ed25519') {
    throw new EnvelopeError(
      'KEY_INVALID',
      `signingKey must be an Ed25519 private key, not a ${key.asymmetricKeyType ?? 'symmetric'} ${key.type} key`,
    );
  }
  return { key, keyId: keyIdFor(key) };
}

/**
 * The request id an envelope carries, derived from the run id so deterministic
 * runs stay byte-identical: Code Scalpel uses 32 hex digits, the accessibility
 * suite `req_` and letters and digits, the others the UUID itself.
 */
function requestIdFor(dialect: ResultDialectId, runId: string): string {
  const hex = runId.replaceAll('-', '');
  if (dialect === 'scalpel-v1') return hex;
  if (dialect === 'a11y-v0.1') return `req_${hex}`;
  return runId;
}

/** Whether a record built under these controls carries digests of its artifacts. */
export function recordsDigests(controls: CallControls): boolean {
  return controls.captureProvenance && (controls.provenanceMode === 'full' || controls.captureArtifacts);
}

/** The arguments' RFC 8785 text, or why they have none. */
export type CanonicalArguments = { text: string } | { error: EnvelopeError };

/**
 * One call's state, shared by every stage: its ids, controls, started time, the
 * warnings the stages collect, and what is derived from the arguments (computed
 * at most once, however many stages need it).
 */
export class CallContext {
  readonly settings: Settings;
  readonly call: ToolCall;
  readonly runId: string;
  readonly requestId: string;
  readonly started: number;
  /** The `_meta` controls; the defaults when they were malformed (see `controlsError`). */
  readonly controls: CallControls;
  /** Why the `_meta` controls could not be read: the call is answered as invalid input. */
  readonly controlsError: EnvelopeError | undefined;
  /** Warnings the stages add to an envelope the pipeline builds. */
  readonly warnings: IssueEntry[] = [];
  /** The arguments are large enough that work over them is done a step at a time (validate-input.ts). */
  largeArguments = false;
  /** The rate limit's word on this call, once checked; undefined when the pipeline has no rate limit. */
  rate: CallRate | undefined;
  /** The caller's return mode (return-mode.ts), read before the tool runs; undefined without an artifact sink. */
  returnMode: ReturnMode | undefined;
  /** Files stored out of the result (return modes): output artifacts of the call's record. */
  readonly outputArtifacts: Artifact[] = [];
  /** Blocks that follow the answer's own (the stored files' resource links). */
  readonly trailingBlocks: unknown[] = [];
  #canonical: CanonicalArguments | undefined;

  constructor(settings: Settings, call: ToolCall) {
    this.started = performance.now();
    this.settings = settings;
    this.call = call;
    this.runId = settings.ids.runId({ tool: call.tool.name, arguments: call.arguments ?? {} });
    this.requestId = call.requestId ?? requestIdFor(settings.dialect, this.runId);
    let controls: CallControls;
    try {
      controls = readCallControls(call.meta);
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error;
      this.controlsError = error;
      controls = readCallControls(undefined);
    }
    this.controls = controls;
  }

  /** The caller's tier, else the pipeline's. */
  get tier(): string | undefined {
    return this.call.tier ?? this.settings.options.tier;
  }

  /** Whether the call's provenance record carries digests of its artifacts. */
  get recordsDigests(): boolean {
    return recordsDigests(this.controls);
  }

  /** The canonical form of the arguments (`{}` when there are none), computed once per call. */
  canonicalArguments(): CanonicalArguments {
    if (this.#canonical === undefined) {
      try {
        this.#canonical = { text: canonicalize(this.call.arguments ?? {}) };
      } catch (error) {
        if (!(error instanceof EnvelopeError)) throw error;
        this.#canonical = { error };
      }
    }
    return this.#canonical;
  }

  /**
   * Computes the canonical form of large arguments on a worker thread
   * (off-thread.ts), so ordering tens of thousands of members
   * does not hold the event loop; `canonicalArguments` then reads it.
   */
  async prepareCanonicalArguments(): Promise<void> {
    if (this.#canonical !== undefined || !this.largeArguments) return;
    try {
      this.#canonical = { text: await canonicalizeOffThread(this.call.arguments ?? {}) };
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error;
      this.#canonical = { error };
    }
  }

  /** `sha256:<hex>` of the canonical arguments; null when the call had none or they have no canonical form. */
  argumentsDigest(): string | null {
    if (this.call.arguments === undefined) return null;
    const canonical = this.canonicalArguments();
    return 'text' in canonical ? `sha256:${digestBytes(canonical.text).value}` : null;
  }

  /** Envelope metadata and the collected warnings, for the compatibility policy's wrappers. */
  wrapOptions(): WrapOptions {
    return { meta: { adapter: this.settings.adapter, request_id: this.requestId }, warnings: this.warnings };
  }

  /**
   * The compiled validator of one of the tool's schemas, or why it does not
   * compile (SCHEMA_INVALID, the same every time for the same schema).
   */
  validatorFor(schema: Record<string, unknown>): Validator | EnvelopeError {
    try {
      return this.settings.registry.validatorForSchema(schema);
    } catch (error) {
      if (error instanceof EnvelopeError) return error;
      throw error;
    }
  }
}
