import { EnvelopeError } from '../../errors/index.ts';
import {
  attachRecord,
  buildCallRecord,
  type CallControls,
  METHODS,
  type ProvRecord,
} from '../../provenance/index.ts';
import { attachRecordDigest, signRecord } from '../../provenance/integrity.ts';
import { PROVENANCE_META_KEY } from '../tool-result.ts';
import { type CallContext, recordsDigests } from './context.ts';
import { type Decision, recordPlacement, sentInV01 } from './decision.ts';
import { entry } from './entries.ts';
import type { CallSummary } from './report.ts';
import { withOutputArtifacts } from './return-mode.ts';
import type { ToolCall } from './types.ts';

/** Methods whose contracts are defined on an mcp.envelope.v0.1 around the record. */
const V01_ENVELOPE_METHODS = new Set<string>([
  METHODS.wrap,
  METHODS.passThrough,
  METHODS.attachRecord,
  METHODS.errorsCapture,
  METHODS.warningsCapture,
]);

/** A decision with its record in place: in the envelope, or as `_meta` entries for the result. */
export interface Placed {
  decision: Decision;
  provenance: CallSummary['provenance'];
  /** Entries for the result's `_meta`. */
  meta: Record<string, unknown>;
}

/**
 * Stage 5: when the caller opted in, the call's prov.record.v0.1 (signed when
 * the pipeline has a `signingKey`), put where it can travel (see
 * `recordPlacement`); the one place a record enters an answer.
 */
export function attachProvenance(ctx: CallContext, decision: Decision): Placed {
  if (!ctx.controls.captureProvenance) return { decision, provenance: null, meta: {} };
  const built = recordOrUndigested(ctx, decision);
  // Signed before it is placed: the answer's copy and the report's (the ledger's) are one record.
  const signing = ctx.settings.signing;
  const record = signing
    ? signRecord(built.record, signing.key, { keyId: signing.keyId })
    : digested(built.record);
  const placement = recordPlacement(built.decision, ctx.settings.dialect);
  const provenance = { record, placement };
  if (placement === 'meta') {
    return { decision: built.decision, provenance, meta: { [PROVENANCE_META_KEY]: record } };
  }
  const envelope = built.decision.envelope;
  const placed = envelope ? { ...built.decision, envelope: attachRecord(envelope, record) } : built.decision;
  return { decision: placed, provenance, meta: {} };
}

/** The `arguments` input's labels: the definition it was read against, and the caller's own (trace ids). */
function argumentLabels(call: ToolCall): { labels?: Record<string, string> } {
  const digest = call.tool.definitionDigest;
  if (!digest && !call.labels) return {};
  return { labels: { ...call.labels, ...(digest ? { tool_definition: digest } : {}) } };
}

function record(ctx: CallContext, decision: Decision, controls: CallControls): ProvRecord {
  const { call, settings } = ctx;
  const canonical = recordsDigests(controls) ? ctx.canonicalArguments() : undefined;
  if (canonical && 'error' in canonical) throw canonical.error;
  const plain = buildCallRecord({
    runId: ctx.runId,
    tool: {
      name: call.tool.name,
      version: call.tool.version ?? settings.options.server?.version ?? '0.0.0',
      adapter: settings.adapter,
    },
    action: decision.action === 'passed-through' ? 'passed-through' : 'wrapped',
    inputs: [
      {
        id: 'arguments',
        mediaType: 'application/json',
        // The canonical text digests as the value does: the arguments are canonicalized once per call.
        content: canonical ? { text: canonical.text } : { json: call.arguments ?? {} },
        // The arguments were read against this definition, asked by this caller under this rule, in this
        // trace: a label is where an artifact says such things.
        ...argumentLabels(call),
      },
    ],
    result: decision.result,
    capturedErrors: (decision.envelope?.errors?.length ?? 0) > 0,
    capturedWarnings: (decision.envelope?.warnings?.length ?? 0) > 0,
    attached: recordPlacement(decision, settings.dialect) === 'envelope',
    controls,
    // A signed record binds the result in every provenance mode.
    bindResult: settings.signing !== undefined,
    // Digested (or signed) once it is complete: attachProvenance.
    deferRecordDigest: true,
  });
  // Files the return mode stored are outputs too: a download can be verified against the record.
  const built = withOutputArtifacts(plain, ctx.outputArtifacts);
  if (sentInV01(decision, settings.dialect)) return built;
  // No mcp.envelope.v0.1 surrounds this record, so the adapter methods defined on one are not claimed.
  const methods = built.methods.filter((method) => !V01_ENVELOPE_METHODS.has(method));
  return { ...built, methods };
}

/** A record claiming integrity.record_digest.compute (full mode) with its digest, which no change follows. */
function digested(record: ProvRecord): ProvRecord {
  return record.methods.includes(METHODS.recordDigest) ? attachRecordDigest(record) : record;
}

/**
 * The call's record. When an artifact has no canonical form (a lone surrogate, nesting
 * beyond the limit) its digest cannot be taken: the record is built without digests,
 * and an envelope built here says why in a warning with the canonical code.
 */
function recordOrUndigested(
  ctx: CallContext,
  decision: Decision,
): { decision: Decision; record: ProvRecord } {
  try {
    return { decision, record: record(ctx, decision, ctx.controls) };
  } catch (error) {
    if (!(error instanceof EnvelopeError) || !ctx.recordsDigests) throw error;
    const artifact = 'error' in ctx.canonicalArguments() ? 'arguments' : 'result';
    const pointer = error.details?.pointer;
    const warning = entry(
      error.code,
      `The provenance record carries no digests: ${artifact}: ${error.message}`,
      {
        artifact,
        ...(typeof pointer === 'string' ? { pointer } : {}),
      },
    );
    const { envelope } = decision;
    const noted: Decision =
      decision.origin === 'built' && envelope
        ? { ...decision, envelope: { ...envelope, warnings: [...(envelope.warnings ?? []), warning] } }
        : decision;
    const undigested = { ...ctx.controls, provenanceMode: 'minimal' as const, captureArtifacts: false };
    return { decision: noted, record: record(ctx, noted, undigested) };
  }
}
