import { spawn } from 'node:child_process';
import { basename } from 'node:path';
import { decodeUtf8, parseJsonLossless } from '../../canonical/json-text.ts';
import type { JsonValue } from '../../canonical/json-value.ts';
import {
  ADAPTER_STDERR_OUTPUT,
  applyCompatibilityPolicy,
  ENVELOPE_NEAR_MISS,
  stderrExcerpt,
  toolReportedErrors,
} from '../../envelope/compat-policy.ts';
import { convert } from '../../envelope/convert.ts';
import { type DetectionReport, detectDialect, requireDialect } from '../../envelope/detect.ts';
import type { Loss, ResultDialectId } from '../../envelope/dialect.ts';
import { codecFor } from '../../envelope/dialects/index.ts';
import type { IssueEntry } from '../../envelope/model.ts';
import type { EnvelopeV01 } from '../../envelope/prov-v01.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { createIdSource } from '../../ids/index.ts';
import { createPipeline, ToolProcessError } from '../../mcp/pipeline.ts';
import { LOSSES_META_KEY, PROVENANCE_META_KEY } from '../../mcp/tool-result.ts';
import {
  attachRecord,
  buildCallRecord,
  type CallControls,
  type InputArtifact,
} from '../../provenance/attach.ts';
import { type Registrar, runs } from '../command.ts';
import { displayName, isStdin, MAX_INPUT_BYTES, readInputBytes } from '../input.ts';
import { type CliIo, EXIT } from '../output.ts';
import { dialectOption, lossLines, RESULT_DIALECT_IDS } from './dialects.ts';

interface WrapCliOptions {
  exec?: boolean;
  text?: boolean;
  captureProvenance?: boolean;
  captureArtifacts?: boolean;
  provenanceMode: string;
  deterministic: boolean;
  deterministicIds?: string;
  toolName?: string;
  toolVersion: string;
  requestId?: string;
  adapter: string;
  timeout?: string;
  dialect?: string;
}

interface ExecOutcome {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
  spawnError?: Error;
  timedOut: boolean;
  stdoutNotUtf8: boolean;
}

/**
 * Whether a value no dialect accepts is a near miss of a dialect other than
 * mcp.envelope.v0.1 only (and not ambiguous): such a value is a tool's own payload.
 * A claim of mcp.envelope.v0.1 can never be wrapped: that would nest envelopes.
 */
function isNearMissOfOther(report: DetectionReport): boolean {
  return (
    report.near.length > 0 &&
    !report.near.includes('prov-v0.1') &&
    !report.reasons.some((reason) => reason.includes('ambiguous') || reason.startsWith('double-wrapped'))
  );
}

/** The warning a near miss wrapped as a legacy payload carries. */
function nearMissWarning(report: DetectionReport): IssueEntry {
  return {
    code: ENVELOPE_NEAR_MISS,
    message: `The payload resembles a ${report.near.join(' / ')} envelope but is not one (${report.reasons
      .slice(0, 3)
      .join('; ')}); it is kept intact as a legacy payload`.slice(0, 2000),
    details: { dialect: report.near.join(', ') },
  };
}

/** Keeps only the tail of stderr: the excerpt is bounded anyway, memory should be too. */
const STDERR_KEEP_BYTES = 64 * 1024;

function runCommand(
  command: string,
  args: readonly string[],
  timeoutMs: number | undefined,
  io: CliIo,
): Promise<ExecOutcome> {
  return new Promise((resolvePromise) => {
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = Buffer.alloc(0);
    let timedOut = false;
    let spawnError: Error | undefined;
    const child = spawn(command, [...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: io.cwd, env: io.env });
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > MAX_INPUT_BYTES) {
        child.kill('SIGKILL');
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.length > STDERR_KEEP_BYTES) stderr = stderr.subarray(stderr.length - STDERR_KEEP_BYTES);
    });
    child.on('error', (error) => {
      spawnError = error;
    });
    child.on('close', (exitCode, signal) => {
      if (timer) clearTimeout(timer);
      const bytes = Buffer.concat(stdout);
      let text: string;
      let stdoutNotUtf8 = false;
      try {
        text = decodeUtf8(bytes);
      } catch {
        text = bytes.toString('utf8');
        stdoutNotUtf8 = true;
      }
      resolvePromise({
        stdout: text,
        stderr: stderr.toString('utf8'),
        exitCode,
        signal,
        timedOut,
        stdoutNotUtf8,
        ...(spawnError ? { spawnError } : {}),
      });
    });
  });
}

/** A payload as parsed: `value` for logic, `lossless` (numbers as written) for output. */
interface Parsed {
  value: unknown;
  lossless: unknown;
}

/**
 * The envelope as written out: its result is the payload with its numbers as
 * the input wrote them, when it is the payload as parsed. Everything before
 * (policy, provenance digests) reads the plain value; the digests are the same
 * either way (RFC 8785 reads a number as its double).
 */
function withPayloadAsWritten(envelope: EnvelopeV01, payload: Parsed): EnvelopeV01 {
  if (payload.lossless === payload.value) return envelope;
  // A tool's own failure envelope, passed on as it is.
  if (envelope === payload.value) return payload.lossless as EnvelopeV01;
  if (envelope.result !== payload.value) return envelope;
  return { ...envelope, result: payload.lossless as JsonValue };
}

function controlsFrom(options: WrapCliOptions): CallControls {
  if (options.provenanceMode !== 'minimal' && options.provenanceMode !== 'full') {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `--provenance-mode must be minimal or full, got ${options.provenanceMode}`,
    );
  }
  return {
    captureProvenance: options.captureProvenance === true,
    captureArtifacts: options.captureArtifacts === true,
    provenanceMode: options.provenanceMode,
    deterministic: options.deterministic,
  };
}

function parseTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms <= 0)
    throw new EnvelopeError('USAGE_ERROR', `--timeout must be a positive integer (ms), got ${value}`);
  return ms;
}

/** A command's stdout as a tool's output: a JSON object or array (numbers as written), else the text. */
function stdoutPayload(text: string): Parsed {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return { value: text, lossless: text };
  try {
    return parseJsonLossless(text);
  } catch {
    return { value: text, lossless: text };
  }
}

/**
 * `wrap --exec`: the command is a tool the enforcement pipeline calls, as the
 * gateway calls an upstream's; its stdout is the tool's text, a failure (exit
 * code, signal, a timeout, a command that cannot start) the observed failure,
 * with what it wrote before failing as the partial output. The envelope is
 * printed as the pipeline answers it (its text), exit 1 when it carries an error.
 */
async function wrapExec(input: string[], options: WrapCliOptions, dialect: ResultDialectId, io: CliIo) {
  const [command, ...args] = input;
  if (command === undefined)
    throw new EnvelopeError('USAGE_ERROR', 'wrap --exec needs a command: wrap --exec -- CMD [ARGS...]');
  const controls = controlsFrom(options);
  const timeoutMs = parseTimeout(options.timeout);
  const warnings: IssueEntry[] = [];
  let durationMs = 0;
  let stdout: string | undefined;
  const pipeline = createPipeline({
    dialect,
    adapter: options.adapter,
    ids: createIdSource(options.deterministicIds),
    // A command has no schemas to check against.
    inputValidation: 'off',
    outputValidation: 'off',
  });
  const result = await pipeline.callTool({
    tool: { name: options.toolName ?? basename(command), version: options.toolVersion },
    arguments: { argv: input },
    meta: {
      capture_provenance: controls.captureProvenance,
      capture_artifacts: controls.captureArtifacts,
      provenance_mode: controls.provenanceMode,
      deterministic: controls.deterministic,
    },
    ...(options.requestId === undefined ? {} : { requestId: options.requestId }),
    warnings,
    invoke: async () => {
      const started = performance.now();
      const run = await runCommand(command, args, timeoutMs, io);
      durationMs = Math.round(performance.now() - started);
      stdout = run.stdout;
      if (run.stdoutNotUtf8) {
        warnings.push({
          code: 'ADAPTER.OUTPUT.NOT_UTF8',
          message: 'The tool wrote bytes that are not UTF-8; they were decoded lossily.',
        });
      }
      if (run.spawnError !== undefined || run.timedOut || run.exitCode !== 0) {
        const parsed = stdoutPayload(run.stdout);
        const toolErrors = toolReportedErrors(parsed.value);
        throw new ToolProcessError({
          ...(run.spawnError ? { exception: run.spawnError } : {}),
          // A command that could not start has no exit code (Node reports the errno there).
          ...(run.spawnError ? {} : { exitCode: run.exitCode }),
          ...(run.signal ? { signal: run.signal } : {}),
          stderr: run.stderr,
          partialOutput: parsed.lossless,
          ...(toolErrors ? { toolErrors } : {}),
          ...(run.timedOut ? { message: `Tool execution timed out after ${timeoutMs} ms.` } : {}),
          ...(run.spawnError ? { message: `Tool could not be started: ${run.spawnError.message}` } : {}),
        });
      }
      if (run.stderr.trim() !== '') {
        warnings.push({
          code: ADAPTER_STDERR_OUTPUT,
          message: 'The tool succeeded and wrote to stderr.',
          details: { stderr_excerpt: stderrExcerpt(run.stderr) },
        });
      }
      return { content: [{ type: 'text', text: run.stdout }] };
    },
  });
  const meta = result._meta ?? {};
  const losses = meta[LOSSES_META_KEY];
  if (Array.isArray(losses) && losses.length > 0) io.stderr(lossLines(losses as Loss[]));
  if (meta[PROVENANCE_META_KEY] !== undefined)
    io.stderr('note: provenance not attached: only an mcp.envelope.v0.1 built here carries its record\n');
  const exitCode = result.isError ? EXIT.checkFailed : EXIT.ok;
  const [first] = result.content;
  const text = first?.type === 'text' ? first.text : '';
  const envelope = result.structuredContent;
  // The tool's own envelope leads in the answer as the tool wrote it: passed on byte for byte.
  const own = text === stdout;
  if (!controls.deterministic && envelope && dialect === 'prov-v0.1' && !own) {
    // The duration makes the output differ between runs: only when the caller waived determinism.
    const before = (envelope as { meta?: Record<string, unknown> }).meta;
    const timed = { ...envelope, meta: { ...before, duration_ms: durationMs } };
    return { exitCode, raw: `${JSON.stringify(timed)}\n`, json: timed };
  }
  // The envelope's text as the pipeline sent it (legacy: the tool's text, or an error's `CODE: message`).
  return { exitCode, raw: own || text.endsWith('\n') ? text : `${text}\n`, json: envelope ?? text };
}

export const registerWrap: Registrar = (program, invocation) => {
  program
    .command('wrap')
    .description(
      'wrap a legacy payload in mcp.envelope.v0.1 (envelopes pass through unchanged), or with --exec run a command and envelope its output, exit code and stderr',
    )
    .argument('[input...]', 'JSON file (or - for stdin); with --exec: -- CMD [ARGS...]')
    .option('--exec', 'run the command after -- and wrap what it does')
    .option('--text', 'treat the input as text (a string result) instead of JSON')
    .option('--capture-provenance', 'attach a prov.record.v0.1')
    .option('--capture-artifacts', 'digest the input and output artifacts (sha256)')
    .option(
      '--provenance-mode <mode>',
      'minimal or full (full adds sizes, digests and the record digest)',
      'minimal',
    )
    .option('--no-deterministic', 'allow timestamps and duration in the output')
    .option('--deterministic-ids <seed>', 'derive the run id (UUIDv5) from this seed and the call')
    .option('--tool-name <name>', 'tool name for the provenance record')
    .option('--tool-version <version>', 'tool version for the provenance record', 'unknown')
    .option('--request-id <id>', 'correlation id to put in meta.request_id')
    .option('--adapter <name>', 'adapter name for meta.adapter and the record', 'cli')
    .option('--timeout <ms>', 'with --exec: kill the command after this many milliseconds')
    .option(
      '--dialect <dialect>',
      `envelope dialect to produce (${RESULT_DIALECT_IDS.join(', ')}); an envelope of another dialect is converted, never nested`,
      'prov-v0.1',
    )
    .action(
      runs(invocation, async ({ io }, input: string[], options: WrapCliOptions) => {
        const dialect = dialectOption(options.dialect, '--dialect');
        if (options.exec) return wrapExec(input, options, dialect, io);
        const context = {
          ...(options.toolName !== undefined ? { tool: options.toolName } : {}),
          ...(options.requestId !== undefined ? { requestId: options.requestId } : {}),
        };
        /**
         * The output in the chosen dialect: prov-v0.1 as built, others converted with their losses noted.
         * `lossless` is `envelope` with the payload's numbers as written, which the output carries.
         */
        const inDialect = (envelope: unknown, lossless: unknown, exitCode: number) => {
          const result = convert(envelope, dialect, { ...context, lossless });
          if (result.losses.length > 0) io.stderr(lossLines(result.losses));
          return { exitCode, raw: `${JSON.stringify(result.value)}\n`, json: result.value };
        };
        const controls = controlsFrom(options);
        if (options.timeout !== undefined)
          throw new EnvelopeError('USAGE_ERROR', '--timeout applies to --exec only');
        const meta: EnvelopeV01['meta'] = { adapter: options.adapter };
        if (options.requestId !== undefined) meta.request_id = options.requestId;

        let outcome: { envelope: EnvelopeV01; action: 'wrapped' | 'passed-through'; text?: string };
        let inputArtifact: InputArtifact;
        let parsed: Parsed;
        const toolName = options.toolName;
        {
          if (input.length > 1)
            throw new EnvelopeError('USAGE_ERROR', 'wrap takes one input file (use --exec to run a command)');
          const file = input[0];
          const bytes = await readInputBytes(file, io);
          const name = displayName(file);
          let payload: unknown;
          if (options.text) {
            payload = decodeUtf8(bytes);
            parsed = { value: payload, lossless: payload };
            inputArtifact = {
              id: 'input',
              mediaType: 'text/plain',
              content: { text: payload as string },
              labels: { role: 'input' },
            };
          } else {
            const text = decodeUtf8(bytes);
            try {
              parsed = parseJsonLossless(text);
              payload = parsed.value;
            } catch (error) {
              if (error instanceof EnvelopeError) {
                throw new EnvelopeError(
                  error.code,
                  `${name}: ${error.message} (use --text to wrap text)`,
                  error.details,
                );
              }
              throw error;
            }
            inputArtifact = {
              id: 'input',
              mediaType: 'application/json',
              content: { json: payload as JsonValue },
              labels: { role: 'input' },
            };
          }
          if (!isStdin(file)) inputArtifact.locator = file as string;
          const warnings: IssueEntry[] = [];
          if (!options.text) {
            const report = detectDialect(payload);
            const nearMiss = report.dialect === null && isNearMissOfOther(report);
            // A near miss of another dialect is the tool's own payload: wrapped intact, with a warning.
            const from = nearMiss ? 'legacy' : requireDialect(report);
            if (nearMiss) {
              const warning = nearMissWarning(report);
              warnings.push(warning);
              io.stderr(`warning[${warning.code}]: ${warning.message}\n`);
              if (dialect !== 'prov-v0.1') {
                const encoded = codecFor(dialect).encode(
                  { ok: true, data: parsed.lossless, decodedFrom: 'legacy' },
                  context,
                );
                if (encoded.losses.length > 0) io.stderr(lossLines(encoded.losses));
                return { exitCode: EXIT.ok, raw: `${JSON.stringify(encoded.value)}\n`, json: encoded.value };
              }
            }
            if (from === dialect && from !== 'legacy' && from !== 'prov-v0.1') {
              // Already in the target dialect: unchanged, byte for byte.
              return { exitCode: EXIT.ok, raw: decodeUtf8(bytes), json: parsed.lossless };
            }
            if (dialect !== 'prov-v0.1' || (from !== 'legacy' && from !== 'prov-v0.1')) {
              if (controls.captureProvenance)
                io.stderr('note: provenance not attached: only a prov-v0.1 wrap attaches a record\n');
              return inDialect(payload, parsed.lossless, EXIT.ok);
            }
          } else if (dialect !== 'prov-v0.1') {
            // --text: the text is the payload as it stands, even if it reads as JSON.
            const encoded = codecFor(dialect).encode(
              { ok: true, data: payload, decodedFrom: 'legacy' },
              context,
            );
            if (encoded.losses.length > 0) io.stderr(lossLines(encoded.losses));
            return { exitCode: EXIT.ok, raw: `${JSON.stringify(encoded.value)}\n`, json: encoded.value };
          }
          const policy = applyCompatibilityPolicy(payload, { meta, warnings });
          outcome =
            policy.action === 'passed-through' && !options.text
              ? { envelope: policy.envelope, action: policy.action, text: decodeUtf8(bytes) }
              : { envelope: policy.envelope, action: policy.action };
        }

        let envelope = outcome.envelope;
        let note: string | undefined;
        if (controls.captureProvenance) {
          if (outcome.action === 'passed-through') {
            note =
              'provenance not attached: the input already is an envelope, which passes through unchanged';
          } else {
            const ids = createIdSource(options.deterministicIds);
            const record = buildCallRecord({
              runId: ids.runId({ input: inputArtifact.content, tool: toolName ?? 'legacy-tool' }),
              tool: {
                name: toolName ?? 'legacy-tool',
                version: options.toolVersion,
                adapter: options.adapter,
              },
              action: 'wrapped',
              inputs: [inputArtifact],
              // The payload with its numbers as written: the digest binds an integer beyond 2^53 by its digits.
              result: withPayloadAsWritten(envelope, parsed).result,
              capturedErrors: (envelope.errors?.length ?? 0) > 0,
              capturedWarnings: (envelope.warnings?.length ?? 0) > 0,
              attached: true,
              controls,
            });
            envelope = attachRecord(envelope, record);
          }
        }
        if (note) io.stderr(`note: ${note}\n`);
        const hasErrors = (envelope.errors?.length ?? 0) > 0;
        const written = withPayloadAsWritten(envelope, parsed);
        const raw =
          outcome.action === 'passed-through' && outcome.text !== undefined
            ? outcome.text
            : `${JSON.stringify(written)}\n`;
        if (dialect !== 'prov-v0.1')
          return inDialect(envelope, written, hasErrors ? EXIT.checkFailed : EXIT.ok);
        return { exitCode: hasErrors ? EXIT.checkFailed : EXIT.ok, raw, json: written };
      }),
    );
};
