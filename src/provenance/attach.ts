import { isJsonObject } from '../canonical/json-value.ts';
import type { EnvelopeV01 } from '../envelope/prov-v01.ts';
import { EnvelopeError } from '../errors/index.ts';
import { attachRecordDigest, withMethods } from './integrity.ts';
import { type ArtifactContent, METHODS, type ProvRecord, RecordBuilder } from './record.ts';

/**
 * Provenance is opt-in through `params._meta` (seed 000 section 5):
 * `capture_provenance`, `capture_artifacts`, `provenance_mode` (minimal | full),
 * and the determinism preference (default true: no timestamps).
 */

export interface CallControls {
  captureProvenance: boolean;
  captureArtifacts: boolean;
  provenanceMode: 'minimal' | 'full';
  deterministic: boolean;
}

export const DEFAULT_CONTROLS: Readonly<CallControls> = Object.freeze({
  captureProvenance: false,
  captureArtifacts: false,
  provenanceMode: 'minimal',
  deterministic: true,
});

function badControl(pointer: string, expected: string, value: unknown): EnvelopeError {
  return new EnvelopeError(
    'INVALID_INPUT',
    `_meta${pointer} must be ${expected}, got ${JSON.stringify(value)}`,
    {
      pointer: `/_meta${pointer}`,
    },
  );
}

function readBoolean(
  meta: Record<string, unknown>,
  key: string,
  pointer: string,
  fallback: boolean,
): boolean {
  const value = meta[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw badControl(pointer, 'a boolean', value);
  return value;
}

/**
 * Reads the controls from a call's `_meta` (MCP `params._meta`). The determinism
 * preference is read from `_meta.deterministic` or `_meta.preferences.deterministic`
 * (the mcp.request.v0.1 spelling). A control of the wrong type is INVALID_INPUT:
 * a caller who asked for provenance must not silently get none.
 */
export function readCallControls(meta: unknown): CallControls {
  if (meta === undefined || meta === null) return { ...DEFAULT_CONTROLS };
  if (!isJsonObject(meta)) throw badControl('', 'an object', meta);
  const mode = meta.provenance_mode ?? 'minimal';
  if (mode !== 'minimal' && mode !== 'full')
    throw badControl('/provenance_mode', '"minimal" or "full"', mode);
  let deterministic = readBoolean(meta, 'deterministic', '/deterministic', true);
  if (meta.preferences !== undefined) {
    if (!isJsonObject(meta.preferences)) throw badControl('/preferences', 'an object', meta.preferences);
    deterministic = readBoolean(
      meta.preferences,
      'deterministic',
      '/preferences/deterministic',
      deterministic,
    );
  }
  return {
    captureProvenance: readBoolean(meta, 'capture_provenance', '/capture_provenance', false),
    captureArtifacts: readBoolean(meta, 'capture_artifacts', '/capture_artifacts', false),
    provenanceMode: mode,
    deterministic,
  };
}

export interface InputArtifact {
  id: string;
  mediaType: string;
  content: ArtifactContent;
  locator?: string;
  labels?: Record<string, string>;
}

export interface CallRecordSubject {
  runId: string;
  tool: { name: string; version: string; adapter?: string };
  /** What the adapter did with the tool's output. */
  action: 'wrapped' | 'passed-through';
  /** The tool's inputs (for a tools/call: its arguments). */
  inputs: readonly InputArtifact[];
  /** The result payload the envelope carries. */
  result: unknown;
  /** Whether the envelope around it carries errors[] / warnings[] the adapter captured. */
  capturedErrors?: boolean;
  capturedWarnings?: boolean;
  /** Whether the record will be attached to the envelope (claims attach_record). */
  attached: boolean;
  controls: CallControls;
  /** Digest the result even in minimal mode (the record is to be signed). */
  bindResult?: boolean;
  parents?: readonly string[];
  /**
   * Full mode: claim integrity.record_digest.compute but leave the digest to
   * the caller, who changes the record further or signs it (each digest
   * canonicalizes the whole record).
   */
  deferRecordDigest?: boolean;
  /** Clock for non-deterministic records. */
  now?: () => Date;
}

/**
 * The prov.record.v0.1 for one tool call. Minimal mode registers the artifacts
 * (with sha256 digests when `capture_artifacts` is set, and the result's always
 * when `bindResult` says the record will be signed); full mode always digests
 * them, records their sizes and adds the record digest. Time is recorded only
 * when the caller did not ask for determinism.
 */
export function buildCallRecord(subject: CallRecordSubject): ProvRecord {
  const { controls } = subject;
  const full = controls.provenanceMode === 'full';
  const digest = full || controls.captureArtifacts ? ('sha256' as const) : undefined;
  // A record that will be signed binds the result in every mode: a signature over a record
  // that names the output without its digest would vouch for any output.
  const resultDigest = digest ?? (subject.bindResult ? ('sha256' as const) : undefined);
  const builder = new RecordBuilder({
    runId: subject.runId,
    tool: subject.tool,
    ...(controls.deterministic ? {} : { time: (subject.now ?? (() => new Date()))().toISOString() }),
  });
  builder.claim(subject.action === 'wrapped' ? METHODS.wrap : METHODS.passThrough);
  if (subject.attached) builder.claim(METHODS.attachRecord);
  if (subject.capturedErrors) builder.claim(METHODS.errorsCapture);
  if (subject.capturedWarnings) builder.claim(METHODS.warningsCapture);
  for (const input of subject.inputs) {
    builder.input({
      id: input.id,
      mediaType: input.mediaType,
      content: input.content,
      ...(input.locator === undefined ? {} : { locator: input.locator }),
      labels: { role: 'arguments', ...input.labels },
      ...(digest ? { digest } : {}),
      size: full,
    });
  }
  builder.output({
    id: 'result',
    mediaType: 'application/json',
    content: { json: subject.result },
    labels: { role: 'result' },
    ...(resultDigest ? { digest: resultDigest } : {}),
    size: full,
  });
  for (const parent of subject.parents ?? []) builder.parent(parent);
  const record = builder.build();
  if (!full) return record;
  return subject.deferRecordDigest ? withMethods(record, [METHODS.recordDigest]) : attachRecordDigest(record);
}

/**
 * Attaches a call record to a freshly wrapped envelope. Pass-through envelopes
 * are never modified (the policy returns them unchanged); their records go to
 * the ledger instead.
 */
export function attachRecord(envelope: EnvelopeV01, record: ProvRecord): EnvelopeV01 {
  return { ...envelope, provenance: record };
}
