import { performance } from 'node:perf_hooks';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { canonicalize } from '../canonical/canonicalize.ts';
import { digestValue } from '../canonical/digest.ts';
import { isJsonObject, MAX_NESTING_DEPTH, pathBeyondDepth } from '../canonical/json-value.ts';
import {
  ADAPTER_EXECUTION_FAILED,
  ENVELOPE_NEAR_MISS,
  MAX_MESSAGE_CHARS,
  type ObservedFailure,
  toolReportedErrors,
  type WrapOptions,
  wrapFailure,
  wrapLegacy,
} from '../envelope/compat-policy.ts';
import { envelopesIn } from '../envelope/detect.ts';
import type { Loss, ResultDialectId } from '../envelope/dialect.ts';
import { a11yRequestInput } from '../envelope/dialects/a11y-v01.ts';
import { codecFor } from '../envelope/dialects/index.ts';
import type { IssueEntry, NormalizedResult } from '../envelope/model.ts';
import { applyProfileToData, type Profile, type ProfileConfig } from '../envelope/profiles.ts';
import { classifyV01, type EnvelopeV01 } from '../envelope/prov-v01.ts';
import { FeatureGate, type TierConfig, upgradeRequiredError } from '../envelope/tiers.ts';
import { EnvelopeError, type ErrorCode, type JsonRpcErrorObject, toJsonRpcError } from '../errors/index.ts';
import { createIdSource, type IdSource } from '../ids/index.ts';
import { encodePointer } from '../pointer/json-pointer.ts';
import {
  attachRecord,
  buildCallRecord,
  type CallControls,
  METHODS,
  type ProvRecord,
  readCallControls,
} from '../provenance/index.ts';
import { attachRecordDigest } from '../provenance/integrity.ts';
import { defaultRegistry, type SchemaIssue, type SchemaRegistry } from '../schemas/index.ts';
import {
  assertDialectAvailable,
  detectEnvelope,
  envelopeV01For,
  fromEnvelopeV01,
  outputSchemaFor,
} from './dialects.ts';
import {
  contentText,
  LOSSES_META_KEY,
  PROVENANCE_META_KEY,
  type ToolResultLike,
  type ToolResultPayload,
  toolResultPayload,
  valueToToolResult,
} from './tool-result.ts';

/**
 * The one enforcement pipeline for a tools/call: validate the arguments,
 * invoke the tool, turn whatever came back (a result, an error result, a
 * rejection) into an envelope of the chosen dialect, validate structured
 * output, attach provenance when the caller opted in, and report the call.
 * The server middleware and the gateway both run every call through it, so
 * they cannot drift apart.
 */

export type ValidationMode = 'enforce' | 'warn' | 'off';

/** What the pipeline needs to know about a tool (a tools/list entry fits). */
export interface PipelineTool {
  name: string;
  title?: string;
  /** Version recorded in provenance; defaults to the server's. */
  version?: string;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

export type ToolArguments = Record<string, unknown> | undefined;

export interface ToolCall {
  tool: PipelineTool;
  arguments?: ToolArguments;
  /** The request's `params._meta` (provenance controls live here). */
  meta?: unknown;
  /** Runs the tool. A rejection is a failed execution (exception, crash, timeout). */
  invoke: (args: ToolArguments, signal?: AbortSignal) => Promise<ToolResultLike>;
  signal?: AbortSignal;
  /**
   * Results that are not the call's answer yet (an SDK input-required result,
   * say) and go back unchanged: no envelope, no validation, no record.
   */
  isInterim?: (result: ToolResultLike) => boolean;
  /** Rejections that are protocol signals rather than failures (the SDK's URL elicitation), rethrown as they are. */
  isProtocolSignal?: (error: unknown) => boolean;
  /** This caller's tier (an authenticated gateway client), in place of the pipeline's `tier`. */
  tier?: string;
}

/** What happened to one call, for logs. */
export type CallOutcome =
  | 'ok'
  | 'tool_error'
  | 'execution_failed'
  | 'invalid_input'
  | 'invalid_output'
  | 'denied'
  | 'internal_error';

export interface CallSummary {
  tool: string;
  dialect: ResultDialectId;
  outcome: CallOutcome;
  /** What was done with the tool's output. */
  action: 'wrapped' | 'passed-through' | 'converted' | 'rejected';
  /** Whether the tool ran and answered (its output reaches the client whatever the outcome). */
  tool_ran: boolean;
  /** The dialect and version of what the tool returned (`legacy` and null for a bare payload). */
  source_dialect: string | null;
  source_version: string | null;
  /** The canonical code of the first error, or null. */
  error_code: string | null;
  request_id: string;
  duration_ms: number;
  /**
   * sha256 over the RFC 8785 form of the arguments and of the returned
   * structuredContent; null for a value that has no canonical form (a lone surrogate).
   */
  arguments_digest: string | null;
  result_digest: string | null;
  provenance: boolean;
  /** Fields of the model the chosen dialect could not carry. */
  losses: number;
}

export interface RecordContext {
  tool: string;
  dialect: ResultDialectId;
  request_id: string;
  /** Where the record went: into the envelope, or the result's `_meta`. */
  placement: 'envelope' | 'meta';
}

export interface PipelineOptions {
  /** Dialect of every result; default `prov-v0.1`. */
  dialect?: ResultDialectId;
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
  /** A tool that has not answered after this long has failed (ADAPTER.EXECUTION.FAILED); its signal is aborted. */
  timeoutMs?: number;
  /** Receives every provenance record built (the gateway's ledger). */
  onRecord?: (record: ProvRecord, context: RecordContext) => void | Promise<void>;
  /** Receives one summary per call (the gateway's JSONL log). */
  onCall?: (summary: CallSummary) => void;
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

/** Whether the call's provenance record carries digests of its artifacts. */
function recordsDigests(controls: CallControls): boolean {
  return controls.captureProvenance && (controls.provenanceMode === 'full' || controls.captureArtifacts);
}

/** The sha256 of the value's canonical form, or null when it has none; a summary must not fail the call. */
function canonicalDigest(value: unknown): string | null {
  try {
    return digestValue(value).value;
  } catch (error) {
    if (error instanceof EnvelopeError) return null;
    throw error;
  }
}

/** Counts array elements and object members, stopping as soon as the count passes `max`. */
function elementCount(value: unknown, max: number): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (++count > max) return count;
      if (child !== null && typeof child === 'object') stack.push(child);
    }
  }
  return count;
}

/**
 * The model of an envelope whose result the tool marked `isError` although the
 * envelope says ok: converted, it says failed too (as readToolResult reads it),
 * with the payload kept.
 */
function markedFailed(model: NormalizedResult, failed: boolean): NormalizedResult {
  if (!failed || !model.ok) return model;
  return {
    ...model,
    ok: false,
    error: {
      code: ADAPTER_EXECUTION_FAILED,
      message: 'The tool marked its result as an error',
      retriable: false,
    },
  };
}

/** A payload as one text block, as a tool would have written it. */
function textBlock(value: unknown): unknown[] {
  return [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }];
}

/**
 * Whether an encoding dropped the payload (an error envelope with no room for data);
 * a payload carried in another form (the accessibility suite's `result.value`) is not dropped.
 */
function dropsData(losses: readonly Loss[]): boolean {
  return losses.some((loss) => loss.path === '/data' && !loss.reshaped);
}

/** What a tool returned, as content blocks that can travel beside an envelope. */
function originalBlocks(raw: ToolResultLike): unknown[] {
  const content = Array.isArray(raw.content) ? raw.content : [];
  if (content.length > 0) return content;
  return raw.structuredContent === undefined
    ? []
    : [{ type: 'text', text: JSON.stringify(raw.structuredContent) }];
}

/** A tool's own schema could not be compiled. */
class ToolSchemaError extends Error {}

/** The rejection of a tool call that ran out of time. */
export class ToolTimeoutError extends Error {
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`the tool did not answer within ${timeoutMs} ms`);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/** A call the pipeline answers with a JSON-RPC error instead of a result. */
export class PipelineRpcError extends EnvelopeError {
  readonly rpcError: JsonRpcErrorObject;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown>) {
    super(code, message, details);
    this.name = 'PipelineRpcError';
    this.rpcError = toJsonRpcError(code, message, details);
  }
}

export interface Pipeline {
  readonly dialect: ResultDialectId;
  /** The envelope schema to advertise as every tool's outputSchema (none for `legacy`). */
  readonly outputSchema: Record<string, unknown> | undefined;
  callTool(call: ToolCall): Promise<CallToolResult>;
}

const DEFAULT_ADAPTER = 'mcp-envelope';
/** Model fields the pipeline itself adds; a dialect without a place for them loses nothing of the tool's. */
const ADAPTER_META_PATHS = new Set(['/tool', '/meta/adapter', '/meta/request_id', '/meta/tier']);
const INVALID_PARAMS = 'Invalid params';

/** Methods whose contracts are defined on an mcp.envelope.v0.1 around the record. */
const V01_ENVELOPE_METHODS = new Set<string>([
  METHODS.wrap,
  METHODS.passThrough,
  METHODS.attachRecord,
  METHODS.errorsCapture,
  METHODS.warningsCapture,
]);

/** The first issue, its pointer under `prefix` (the member the validated value sits in). */
function issueSummary(issues: readonly SchemaIssue[], prefix = ''): { pointer: string; text: string } {
  const first = issues[0];
  const pointer = `${prefix}${first?.pointer ?? ''}`;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return { pointer, text: `${pointer || '/'} ${first?.message ?? 'does not match'}${more}` };
}

function entry(code: string, message: string, details: IssueEntry['details']): IssueEntry {
  return details && Object.keys(details).length > 0 ? { code, message, details } : { code, message };
}

/** Details an error carries about a failed process or a failed upstream call. */
function observedFailure(error: unknown): ObservedFailure {
  const failure: ObservedFailure = { exception: error };
  if (isJsonObject(error) || error instanceof Error) {
    const fields = error as unknown as Record<string, unknown>;
    const exit = fields.exitCode ?? fields.exit_code;
    if (typeof exit === 'number' || exit === null) failure.exitCode = exit;
    if (typeof fields.signal === 'string') failure.signal = fields.signal;
    if (typeof fields.stderr === 'string') failure.stderr = fields.stderr;
  }
  return failure;
}

interface Built {
  /** The mcp.envelope.v0.1 built here, or one the tool returned (passed through). */
  envelope?: EnvelopeV01;
  /**
   * An envelope the tool returned in another dialect than the pipeline's own
   * (converted to it) or in the `legacy` pipeline (passed through unchanged).
   */
  foreign?: Record<string, unknown>;
  /** Where `foreign` came from: its dialect and decoded model, when it is to be converted. */
  convertFrom?: { dialect: ResultDialectId; model: NormalizedResult };
  /** Exact text to carry when a pass-through envelope arrived as text. */
  text?: string;
  /**
   * What the tool returned, as content blocks to send beside the envelope when the
   * envelope itself cannot hold it (an invalid mcp.envelope.v0.1 claim, say).
   */
  original?: unknown[];
  /** The dialect and version of what the tool returned; absent when it never answered. */
  source?: { dialect: string; version: string | null };
  isError: boolean;
  outcome: CallOutcome;
  action: CallSummary['action'];
  errorCode: string | null;
  /** The payload the record's output artifact stands for. */
  result: unknown;
}

function ownBuilt(envelope: EnvelopeV01, outcome: CallOutcome, action: CallSummary['action']): Built {
  const isError = (envelope.errors?.length ?? 0) > 0;
  return {
    envelope,
    isError,
    outcome: isError && outcome === 'ok' ? 'tool_error' : outcome,
    action,
    errorCode: envelope.errors?.[0]?.code ?? null,
    result: envelope.result,
  };
}

export function createPipeline(options: PipelineOptions = {}): Pipeline {
  const dialect = options.dialect ?? 'prov-v0.1';
  assertDialectAvailable(dialect);
  const inputMode = options.inputValidation ?? 'enforce';
  const outputMode = options.outputValidation ?? 'enforce';
  const invalidInputAs = options.invalidInput ?? 'result';
  const ids = options.ids ?? createIdSource();
  const adapter = options.adapter ?? DEFAULT_ADAPTER;
  const registry = options.registry ?? defaultRegistry();
  const outputSchema = outputSchemaFor(dialect);
  const gate =
    options.gate === undefined || options.gate instanceof FeatureGate
      ? options.gate
      : new FeatureGate(options.gate);
  const tier = options.tier ?? gate?.tiers[0] ?? 'community';
  const profile = options.profile ?? 'debug';

  /** A tool schema that does not compile is the server's defect, answered as INTERNAL_ERROR. */
  function validatorFor(schema: Record<string, unknown>) {
    try {
      return registry.validatorForSchema(schema);
    } catch (error) {
      if (error instanceof EnvelopeError) throw new ToolSchemaError(error.message);
      throw error;
    }
  }

  function wrapOptions(requestId: string, warnings: IssueEntry[]): WrapOptions {
    return { meta: { adapter, request_id: requestId }, warnings };
  }

  function rejected(
    outcome: CallOutcome,
    error: IssueEntry,
    requestId: string,
    warnings: IssueEntry[],
  ): Built {
    return ownBuilt(
      wrapFailure({ toolErrors: [error] }, wrapOptions(requestId, warnings)),
      outcome,
      'rejected',
    );
  }

  function invalidInput(message: string, pointer: string, requestId: string, warnings: IssueEntry[]): Built {
    if (invalidInputAs === 'jsonrpc-error') {
      throw new PipelineRpcError('INVALID_INPUT', INVALID_PARAMS, { pointer, reason: message });
    }
    const error = entry('INVALID_INPUT', `${INVALID_PARAMS}: ${message}`, {
      pointer,
      jsonrpc_code: toJsonRpcError('INVALID_INPUT').code,
    });
    return rejected('invalid_input', error, requestId, warnings);
  }

  /** Validates the tool's structured output; returns the error entry when it does not match. */
  function outputProblem(tool: PipelineTool, raw: ToolResultLike, payload: ToolResultPayload) {
    if (outputMode === 'off' || !tool.outputSchema || raw.isError) return undefined;
    const structured = payload.source === 'structured' || payload.source === 'json-text';
    if (!structured) {
      return entry(
        'INVALID_OUTPUT',
        `Invalid tool output: ${tool.name} declares an outputSchema but returned no structured content`,
        {
          pointer: '',
          jsonrpc_code: toJsonRpcError('INVALID_OUTPUT').code,
        },
      );
    }
    const checked = validatorFor(tool.outputSchema)(payload.value);
    if (checked.valid) return undefined;
    const { pointer, text } = issueSummary(checked.issues);
    return entry('INVALID_OUTPUT', `Invalid tool output: ${text}`, {
      pointer,
      jsonrpc_code: toJsonRpcError('INVALID_OUTPUT').code,
    });
  }

  /**
   * Turns what the tool returned into the answer, never losing it: an envelope of
   * the pipeline's dialect passes through unchanged; one of another dialect is
   * converted through the normalized model; anything else is a legacy payload,
   * wrapped intact (a near miss of a dialect too, with a warning saying why it is
   * no envelope). Only a claim of mcp.envelope.v0.1 that is not valid cannot be
   * wrapped (that would nest envelopes): it is answered with an error envelope and
   * its bytes travel beside it, as does any output the envelope cannot hold.
   */
  function fromResult(
    tool: PipelineTool,
    raw: ToolResultLike,
    requestId: string,
    warnings: IssueEntry[],
  ): Built {
    const payload = toolResultPayload(raw);
    const structured = payload.source === 'structured' || payload.source === 'json-text';
    const isError = raw.isError === true;
    // Detected once: an envelope, a value that claims a dialect without being one, or neither.
    const detection = structured ? detectEnvelope(payload.value) : undefined;
    // A claim that is no envelope but holds one, or claims mcp.envelope.v0.1, cannot be
    // wrapped: that would nest envelopes. Any other claim is a near miss, the tool's own data.
    const nests = detection !== undefined && (detection.match || envelopesIn(payload.value).length > 0);
    const source = {
      dialect: detection?.match ? detection.dialect : 'legacy',
      version: detection?.match ? (detection.model.version ?? null) : null,
    };
    // The record's output artifact is what the tool produced: the payload an envelope
    // carries, else the payload itself wherever it travels.
    const done = (built: Built, result: unknown = built.result): Built => ({ ...built, source, result });
    // What is sent on carries the payload's numbers as the tool wrote them; decisions read `value`.
    const exact = structured ? (payload.lossless ?? payload.value) : payload.value;

    const problem = outputProblem(tool, raw, payload);
    if (problem && outputMode === 'enforce') {
      // The tool ran: its output stays with the error, as `result` where that nests no
      // envelope (the policy's partial output), else beside the envelope.
      const failure: ObservedFailure = {
        toolErrors: [{ ...problem, details: { ...problem.details, tool_ran: true } }],
        ...(nests || payload.value === null ? {} : { partialOutput: exact }),
      };
      const built = ownBuilt(
        wrapFailure(failure, wrapOptions(requestId, warnings)),
        'invalid_output',
        'rejected',
      );
      return nests ? done({ ...built, original: originalBlocks(raw) }, payload.value) : done(built);
    }
    if (problem) warnings.push(problem);

    if (detection?.match) {
      const failed = isError || !detection.model.ok;
      const outcome: CallOutcome = failed ? 'tool_error' : 'ok';
      const errorCode = failed
        ? (detection.model.error?.code ?? detection.model.errors?.[0]?.code ?? null)
        : null;
      const text =
        payload.source === 'json-text' || payload.source === 'structured' ? payload.text : undefined;
      const common = { isError: failed, outcome, errorCode, ...(text === undefined ? {} : { text }) };
      if (detection.dialect === 'prov-v0.1' && dialect === 'prov-v0.1') {
        const envelope = exact as EnvelopeV01;
        return done({ ...ownBuilt(envelope, outcome, 'passed-through'), ...common });
      }
      const codec = codecFor(detection.dialect);
      const model = { ...detection.model };
      // The decoded payload is the plain value's; the exact one is the same member of `exact`.
      if (exact !== payload.value && model.data === codec.payloadOf(payload.value))
        model.data = codec.payloadOf(exact);
      const data = model.data;
      if (detection.dialect === dialect || dialect === 'legacy') {
        const foreign = exact as Record<string, unknown>;
        return done({ foreign, action: 'passed-through', ...common, result: data });
      }
      return done({
        foreign: detection.value,
        convertFrom: {
          dialect: detection.dialect as ResultDialectId,
          model: markedFailed(model, failed),
        },
        action: 'converted',
        ...common,
        result: data,
      });
    }
    if (nests && detection) {
      // No valid envelope, and one that cannot be wrapped (a broken mcp.envelope.v0.1, an
      // envelope in an envelope, one valid in two dialects): an error, its bytes beside it.
      const v01 = classifyV01(payload.value);
      const { pointer, text } =
        v01.kind === 'invalid-envelope' ? issueSummary(v01.issues) : { pointer: '', text: detection.message };
      const what = v01.kind === 'invalid-envelope' ? 'not a valid mcp.envelope.v0.1: ' : '';
      const error = entry('INVALID_OUTPUT', `Invalid tool output: ${what}${text}`, {
        pointer,
        jsonrpc_code: toJsonRpcError('INVALID_OUTPUT').code,
        tool_ran: true,
      });
      const built = ownBuilt(
        wrapFailure({ toolErrors: [error] }, wrapOptions(requestId, warnings)),
        'invalid_output',
        'rejected',
      );
      return done({ ...built, original: originalBlocks(raw) }, payload.value);
    }
    if (detection) {
      // A near miss of another dialect is no envelope: the tool's own payload, wrapped intact.
      warnings.push(
        entry(
          ENVELOPE_NEAR_MISS,
          `The tool output resembles ${detection.message}; it is kept intact as a legacy payload`,
          {
            dialect: detection.dialects.join(', '),
          },
        ),
      );
    }

    if (isError) {
      const text = contentText(raw.content);
      const textual = payload.source === 'text' || payload.source === 'empty';
      // A plain-text error is the tool's message (an SDK server's thrown exception arrives
      // so), not output: it travels as the error's message, and `result` stays null as the
      // policy says for failures seen only as a message.
      // A message longer than an error entry holds is kept whole as the result.
      const whole = !textual || text.length > MAX_MESSAGE_CHARS;
      const failure: ObservedFailure = {
        message: text || `Tool ${tool.name} reported an error`,
        ...(whole ? { partialOutput: exact } : {}),
      };
      const own = textual ? undefined : toolReportedErrors(payload.value);
      if (own) failure.toolErrors = own;
      return done(ownBuilt(wrapFailure(failure, wrapOptions(requestId, warnings)), 'tool_error', 'wrapped'));
    }
    const data =
      profile === 'debug'
        ? exact
        : applyProfileToData(payload.value, profile, options.profileConfig, tool.name);
    return done(ownBuilt(wrapLegacy(data, wrapOptions(requestId, warnings)), 'ok', 'wrapped'));
  }

  function fromRejection(error: unknown, requestId: string, warnings: IssueEntry[]): Built {
    if (error instanceof EnvelopeError && error.code === 'INVALID_INPUT') {
      const pointer = typeof error.details?.pointer === 'string' ? error.details.pointer : '';
      return invalidInput(error.message, pointer, requestId, warnings);
    }
    return ownBuilt(
      wrapFailure(observedFailure(error), wrapOptions(requestId, warnings)),
      'execution_failed',
      'wrapped',
    );
  }

  async function invokeWithTimeout(call: ToolCall): Promise<ToolResultLike> {
    const timeoutMs = options.timeoutMs;
    if (timeoutMs === undefined) return call.invoke(call.arguments, call.signal);
    const controller = new AbortController();
    const signal = call.signal ? AbortSignal.any([call.signal, controller.signal]) : controller.signal;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new ToolTimeoutError(timeoutMs);
        // Settle first, so that a tool answering its abort cannot win the race.
        reject(error);
        controller.abort(error);
      }, timeoutMs);
    });
    try {
      return await Promise.race([call.invoke(call.arguments, signal), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function run(
    call: ToolCall,
    requestId: string,
    needsCanonicalArguments: boolean,
  ): Promise<Built | { interim: ToolResultLike }> {
    const warnings: IssueEntry[] = [];
    const { tool } = call;
    if (gate) {
      const features = options.featuresOf?.(tool, call.arguments) ?? [tool.name];
      const hints = gate.hintsFor(call.tier ?? tier, features);
      const [first] = hints;
      if (first) {
        const envelope = envelopeV01For({
          ok: false,
          data: null,
          error: upgradeRequiredError(first),
          meta: { adapter, request_id: requestId, upgrade_hints: hints },
        });
        return ownBuilt(envelope, 'denied', 'rejected');
      }
    }
    const maxElements = options.maxArgumentElements;
    if (maxElements !== undefined && elementCount(call.arguments, maxElements) > maxElements) {
      return invalidInput(`arguments hold more than ${maxElements} elements`, '', requestId, warnings);
    }
    // Deeper than the canonical form allows, the arguments could be neither digested nor
    // forwarded (serializing them overflows the stack): refused before the tool runs.
    const tooDeep = pathBeyondDepth(call.arguments);
    if (tooDeep) {
      return invalidInput(
        `arguments are nested deeper than ${MAX_NESTING_DEPTH} levels`,
        encodePointer(tooDeep),
        requestId,
        warnings,
      );
    }
    if (needsCanonicalArguments) {
      // The record will digest the arguments: one with no canonical form is refused now, not after the tool ran.
      try {
        canonicalize(call.arguments ?? {});
      } catch (error) {
        if (!(error instanceof EnvelopeError)) throw error;
        const pointer = typeof error.details?.pointer === 'string' ? error.details.pointer : '';
        return invalidInput(error.message, pointer, requestId, warnings);
      }
    }
    if (inputMode !== 'off' && tool.inputSchema) {
      // The accessibility suite's request form carries the tool's input under `input`.
      const requestInput = a11yRequestInput(call.arguments);
      const checked = validatorFor(tool.inputSchema)(requestInput ?? call.arguments ?? {});
      if (!checked.valid) {
        const { pointer, text } = issueSummary(checked.issues, requestInput === undefined ? '' : '/input');
        if (inputMode === 'enforce') return invalidInput(text, pointer, requestId, warnings);
        warnings.push(entry('INVALID_INPUT', `${INVALID_PARAMS}: ${text}`, { pointer }));
      }
    }
    let raw: ToolResultLike;
    try {
      raw = await invokeWithTimeout(call);
    } catch (error) {
      if (call.isProtocolSignal?.(error)) throw error;
      return fromRejection(error, requestId, warnings);
    }
    if (call.isInterim?.(raw)) return { interim: raw };
    return fromResult(tool, raw, requestId, warnings);
  }

  function record(call: ToolCall, built: Built, controls: CallControls, runId: string): ProvRecord {
    const attached = dialect === 'prov-v0.1' && built.action !== 'passed-through' && !built.foreign;
    const built0 = buildCallRecord({
      runId,
      tool: {
        name: call.tool.name,
        version: call.tool.version ?? options.server?.version ?? '0.0.0',
        adapter,
      },
      action: built.action === 'passed-through' ? 'passed-through' : 'wrapped',
      inputs: [
        {
          id: 'arguments',
          mediaType: 'application/json',
          content: { json: call.arguments ?? {} },
        },
      ],
      result: built.result,
      capturedErrors: (built.envelope?.errors?.length ?? 0) > 0,
      capturedWarnings: (built.envelope?.warnings?.length ?? 0) > 0,
      attached,
      controls,
    });
    const v01Around = !built.foreign && (dialect === 'prov-v0.1' || built.action === 'passed-through');
    if (v01Around) return built0;
    // No mcp.envelope.v0.1 surrounds this record, so the adapter methods defined on one are not claimed.
    const methods = built0.methods.filter((method) => !V01_ENVELOPE_METHODS.has(method));
    const { integrity, ...rest } = built0;
    const stripped: ProvRecord = { ...rest, methods };
    return integrity ? attachRecordDigest(stripped) : stripped;
  }

  /**
   * The call's record. When an artifact has no canonical form (a lone surrogate, nesting
   * beyond the limit) its digest cannot be taken: the record is built without digests,
   * and an envelope built here says why in a warning with the canonical code.
   */
  function recordOrUndigested(
    call: ToolCall,
    built: Built,
    controls: CallControls,
    runId: string,
  ): { built: Built; provRecord: ProvRecord } {
    try {
      return { built, provRecord: record(call, built, controls, runId) };
    } catch (error) {
      if (!(error instanceof EnvelopeError) || !recordsDigests(controls)) throw error;
      const artifact = canonicalDigest(call.arguments ?? {}) === null ? 'arguments' : 'result';
      const warning = entry(
        error.code,
        `The provenance record carries no digests: ${artifact}: ${error.message}`,
        {
          artifact,
          ...(typeof error.details?.pointer === 'string' ? { pointer: error.details.pointer } : {}),
        },
      );
      const own = built.envelope && built.action !== 'passed-through' && !built.foreign;
      const noted: Built =
        own && built.envelope
          ? {
              ...built,
              envelope: { ...built.envelope, warnings: [...(built.envelope.warnings ?? []), warning] },
            }
          : built;
      const undigested = { ...controls, provenanceMode: 'minimal' as const, captureArtifacts: false };
      return { built: noted, provRecord: record(call, noted, undigested, runId) };
    }
  }

  async function callTool(call: ToolCall): Promise<CallToolResult> {
    const started = performance.now();
    const runId = ids.runId({ tool: call.tool.name, arguments: call.arguments ?? {} });
    const requestId = requestIdFor(dialect, runId);
    let controls: CallControls;
    try {
      controls = readCallControls(call.meta);
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error;
      return finish(
        call,
        fromRejection(error, requestId, []),
        runId,
        readCallControls(undefined),
        requestId,
        started,
      );
    }
    let ran: Awaited<ReturnType<typeof run>>;
    try {
      ran = await run(call, requestId, recordsDigests(controls));
    } catch (error) {
      if (!(error instanceof ToolSchemaError)) throw error;
      const entryFor = entry(
        'INTERNAL_ERROR',
        `Tool ${call.tool.name} has a schema that does not compile: ${error.message}`,
        undefined,
      );
      ran = rejected('internal_error', entryFor, requestId, []);
    }
    if ('interim' in ran) return ran.interim as CallToolResult;
    return finish(call, ran, runId, controls, requestId, started);
  }

  async function finish(
    call: ToolCall,
    ranBuilt: Built,
    runId: string,
    controls: CallControls,
    requestId: string,
    started: number,
  ): Promise<CallToolResult> {
    const resultMeta: Record<string, unknown> = {};
    let built = ranBuilt;
    let envelope = built.envelope;
    let provRecord: ProvRecord | undefined;
    if (controls.captureProvenance) {
      ({ built, provRecord } = recordOrUndigested(call, built, controls, runId));
      envelope = built.envelope;
      const inEnvelope = dialect === 'prov-v0.1' && built.action !== 'passed-through' && !built.foreign;
      if (inEnvelope && envelope) envelope = attachRecord(envelope, provRecord);
      else resultMeta[PROVENANCE_META_KEY] = provRecord;
      await options.onRecord?.(provRecord, {
        tool: call.tool.name,
        dialect,
        request_id: requestId,
        placement: inEnvelope ? 'envelope' : 'meta',
      });
    }
    let value: unknown;
    let text = built.text;
    let losses = 0;
    let original = built.original;
    if (built.convertFrom) {
      // Another dialect's envelope, converted so that what is sent is what is advertised.
      const converted = codecFor(dialect).encode(built.convertFrom.model, {
        tool: call.tool.name,
        requestId,
      });
      value = converted.value;
      text = undefined;
      losses = converted.losses.length;
      if (converted.losses.length > 0) resultMeta[LOSSES_META_KEY] = converted.losses;
      // Whatever the target could not carry of the payload still reaches the client, as it came.
      if (dropsData(converted.losses)) original ??= textBlock(built.convertFrom.model.data);
    } else if (built.foreign || built.action === 'passed-through' || !envelope) {
      value = built.foreign ?? envelope;
    } else {
      const converted = fromEnvelopeV01(envelope, dialect, {
        tool: call.tool.name,
        requestId,
        ...((call.tier ?? options.tier) === undefined ? {} : { tier: call.tier ?? options.tier }),
      });
      value = converted.value;
      // The adapter's own metadata is no loss of the tool's; everything else is reported.
      let reported = converted.losses.filter((loss) => !ADAPTER_META_PATHS.has(loss.path));
      text = undefined;
      // A legacy error result is its message, as plain MCP servers write it: isError and the text carry the errors.
      if (dialect === 'legacy' && built.isError) {
        text = (envelope.errors ?? []).map((issue) => `${issue.code}: ${issue.message}`).join('\n');
        value = text;
        reported = reported.filter((loss) => !/^\/(?:ok|error|errors)(?:\/|$)/.test(loss.path));
        // The tool's partial output travels after the messages, unless they already say it.
        const partial = envelope.result;
        const said = typeof partial === 'string' && text.includes(partial);
        if (partial !== null && partial !== undefined && !said) original ??= textBlock(partial);
      } else if (dropsData(converted.losses) && envelope.result !== null) {
        original ??= textBlock(envelope.result);
      }
      losses = reported.length;
      if (reported.length > 0) resultMeta[LOSSES_META_KEY] = reported;
    }
    const result = valueToToolResult(value, {
      isError: built.isError,
      ...(text === undefined ? {} : { text }),
      meta: resultMeta,
    });
    if (original && original.length > 0) result.content.push(...(original as CallToolResult['content']));
    if (options.onCall) {
      options.onCall({
        tool: call.tool.name,
        dialect,
        outcome: built.outcome,
        action: built.action,
        error_code: built.errorCode,
        request_id: requestId,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        arguments_digest: canonicalDigest(call.arguments ?? {}),
        result_digest: canonicalDigest(value),
        provenance: provRecord !== undefined,
        losses,
        tool_ran: built.source !== undefined,
        source_dialect: built.source?.dialect ?? null,
        source_version: built.source?.version ?? null,
      });
    }
    return result;
  }

  return { dialect, outputSchema, callTool };
}
