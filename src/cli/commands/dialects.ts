import { Option } from 'commander';
import { isJsonObject, plainJson } from '../../canonical/json-value.ts';
import { convert, normalize } from '../../envelope/convert.ts';
import { detectDialect } from '../../envelope/detect.ts';
import { DIALECT_IDS, type Loss, type ResultDialectId } from '../../envelope/dialect.ts';
import { codecFor, isDialectId } from '../../envelope/dialects/index.ts';
import {
  applyProfile,
  isProfile,
  PROFILES,
  type Profile,
  type ProfileConfig,
  profileConfigFrom,
} from '../../envelope/profiles.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { type ToolResultLike, toolResultPayload } from '../../mcp/tool-result.ts';
import { type Registrar, runs } from '../command.ts';
import { type ResultInput, readJsonInput, readResultInput } from '../input.ts';
import { EXIT } from '../output.ts';

/** detect, normalize and convert: the dialect layer on the command line. */

/** The dialects a tool result can be written in: all but the JSON-RPC request form. */
export const RESULT_DIALECT_IDS = DIALECT_IDS.filter((id): id is ResultDialectId => id !== 'jsonrpc-request');

/** A target dialect for a tool result, as --to and --dialect take it. */
export function dialectOption(value: string | undefined, flag: string): ResultDialectId {
  if (!isDialectId(value)) {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `${flag} must be one of ${RESULT_DIALECT_IDS.join(', ')}, got ${String(value)}`,
    );
  }
  if (value === 'jsonrpc-request') {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `${flag} wants a result dialect (${RESULT_DIALECT_IDS.join(', ')}); jsonrpc-request is a request form, not a result (validate --as jsonrpc-request checks one)`,
    );
  }
  return value;
}

async function profileFrom(
  options: { profile: string; profileConfig?: string },
  io: Parameters<typeof readJsonInput>[1],
): Promise<{ profile: Profile; config: ProfileConfig }> {
  if (!isProfile(options.profile))
    throw new EnvelopeError('USAGE_ERROR', `--profile must be one of ${PROFILES.join(', ')}`);
  const config =
    options.profileConfig === undefined
      ? {}
      : profileConfigFrom(await readJsonInput(options.profileConfig, io));
  return { profile: options.profile, config };
}

const PROFILE_CONFIG_HELP =
  'JSON file: {"include_only": {"tool": ["member", …]}, "defaults": {"member": value}} (used by minimal)';

/** The members a CallToolResult may have; an object with any other is not one. */
const CALL_TOOL_RESULT_MEMBERS: ReadonlySet<string> = new Set([
  'content',
  'structuredContent',
  'isError',
  '_meta',
]);
const CONTENT_BLOCK_TYPES: ReadonlySet<string> = new Set([
  'text',
  'image',
  'audio',
  'resource',
  'resource_link',
]);

/**
 * Whether a value is an MCP CallToolResult rather than a payload: a `content`
 * array of content blocks (empty only beside `structuredContent`), no member a
 * CallToolResult does not have, and no envelope dialect of its own.
 */
function isCallToolResult(value: unknown): value is ToolResultLike {
  if (!isJsonObject(value) || !Array.isArray(value.content)) return false;
  if (Object.keys(value).some((key) => !CALL_TOOL_RESULT_MEMBERS.has(key))) return false;
  if (value.content.length === 0 && value.structuredContent === undefined) return false;
  const blocks = value.content.every(
    (block) => isJsonObject(block) && typeof block.type === 'string' && CONTENT_BLOCK_TYPES.has(block.type),
  );
  if (!blocks || (value.isError !== undefined && typeof value.isError !== 'boolean')) return false;
  if (value._meta !== undefined && !isJsonObject(value._meta)) return false;
  const own = detectDialect(value).dialect;
  return own === null || own === 'legacy';
}

/** A result read out of a CallToolResult: the payload, and the member it came from. */
interface Unwrapped {
  input: ResultInput;
  /** `structuredContent`, `content[0].text` or `content` (several blocks, none, or not text). */
  from: string;
}

/**
 * The payload of a CallToolResult, found as readToolResult finds it
 * (`toolResultPayload`): `structuredContent`, else the JSON in a single text
 * block, else the text, else the content blocks. Its numbers stay as written.
 */
function unwrapCallToolResult(input: ResultInput): Unwrapped | undefined {
  if (!input.json || !isCallToolResult(input.value)) return undefined;
  const payload = toolResultPayload(input.value);
  switch (payload.source) {
    case 'structured': {
      const lossless = (input.lossless as Record<string, unknown>).structuredContent;
      // The text twin, when there is one, is the envelope as the tool wrote it.
      const text = payload.text ?? JSON.stringify(lossless);
      return { input: { value: payload.value, json: true, text, lossless }, from: 'structuredContent' };
    }
    case 'json-text':
      return {
        input: {
          value: payload.value,
          json: true,
          text: payload.text,
          lossless: payload.lossless ?? payload.value,
        },
        from: 'content[0].text',
      };
    case 'text':
      return {
        input: { value: payload.text, json: false, text: payload.text, lossless: payload.text },
        from: 'content[0].text',
      };
    default: {
      const lossless =
        payload.source === 'empty' ? null : (input.lossless as Record<string, unknown>).content;
      return {
        input: { value: payload.value, json: true, text: JSON.stringify(lossless), lossless },
        from: 'content',
      };
    }
  }
}

/** The result to work on: the input, or the payload of the CallToolResult it is (unless read as text). */
async function resultInput(
  file: string,
  io: Parameters<typeof readResultInput>[1],
  asText: boolean,
): Promise<{ input: ResultInput; from?: string }> {
  const input = await readResultInput(file, io, { asText });
  return (asText ? undefined : unwrapCallToolResult(input)) ?? { input };
}

/** How the output says where the result was found. */
function readFrom(from: string): string {
  return `read from a CallToolResult's ${from}`;
}

export function lossLines(losses: readonly Loss[]): string {
  return losses.map((loss) => `loss: ${loss.path} ${loss.reason}\n`).join('');
}

export const registerDetect: Registrar = (program, invocation) => {
  program
    .command('detect')
    .description(
      'name the envelope dialect of a tool result (JSON, JSON text, plain text, or a CallToolResult holding one), or say why none',
    )
    .argument('[file]', 'file, or - for stdin', '-')
    .option('--text', 'treat the input as text (a string payload) even if it is JSON')
    .action(
      runs(invocation, async ({ io }, file: string, options: { text?: boolean }) => {
        const { input, from } = await resultInput(file, io, options.text === true);
        const report = detectDialect(input.value);
        const found = report.dialect !== null;
        const where = from === undefined ? '' : ` (${readFrom(from)})`;
        const human = found
          ? `${report.dialect}${report.version === null ? '' : ` ${report.version}`}${report.text ? ' (as JSON text)' : ''}${input.json ? '' : report.dialect === 'legacy' ? ' (text)' : ''}${where}`
          : [
              `no dialect (near: ${report.near.join(', ')})${where}`,
              ...report.reasons.map((reason) => `  ${reason}`),
            ].join('\n');
        return {
          exitCode: found ? EXIT.ok : EXIT.checkFailed,
          human,
          json: {
            dialect: report.dialect,
            version: report.version,
            text: report.text,
            input: input.json ? 'json' : 'text',
            ...(from === undefined ? {} : { call_tool_result: from }),
            near: report.near,
            reasons: report.reasons,
          },
        };
      }),
    );
};

export const registerNormalize: Registrar = (program, invocation) => {
  program
    .command('normalize')
    .description(
      'decode a tool result of any dialect (or the one in a CallToolResult) into the normalized model',
    )
    .argument('[file]', 'file, or - for stdin', '-')
    .option('--text', 'treat the input as text (a string payload) even if it is JSON')
    .option('--profile <profile>', `trim the payload: ${PROFILES.join(', ')}`, 'debug')
    .option('--profile-config <file>', PROFILE_CONFIG_HELP)
    .action(
      runs(
        invocation,
        async (
          { io },
          file: string,
          options: { text?: boolean; profile: string; profileConfig?: string },
        ) => {
          const { profile, config } = await profileFrom(options, io);
          const { input, from: where } = await resultInput(file, io, options.text === true);
          const { from, model } = normalize(input.value, { lossless: input.lossless });
          const { decodedFrom: _from, ...shown } = applyProfile(model, profile, config);
          const output = { from, ...(where === undefined ? {} : { call_tool_result: where }), model: shown };
          return { exitCode: EXIT.ok, raw: `${JSON.stringify(output, null, 2)}\n`, json: output };
        },
      ),
    );
};

interface ConvertCliOptions {
  to?: string;
  strict?: boolean;
  text?: boolean;
  tool?: string;
  toolName?: string;
  requestId?: string;
  profile: string;
  profileConfig?: string;
}

export const registerConvert: Registrar = (program, invocation) => {
  program
    .command('convert')
    .description(
      'convert a tool result (or the one in a CallToolResult) to another dialect; every field the target cannot carry is reported (stderr), or with --strict refused',
    )
    .argument('[file]', 'file, or - for stdin', '-')
    .requiredOption('--to <dialect>', `target dialect: ${RESULT_DIALECT_IDS.join(', ')}`)
    .option('--strict', 'fail (CONVERSION_LOSSY, exit 1) instead of reporting losses')
    .option('--text', 'treat the input as text (a string payload) even if it is JSON')
    .option(
      '--tool-name <name>',
      'tool name for dialects that require one, when the input has none (as wrap takes it)',
    )
    // The earlier spelling, kept working.
    .addOption(new Option('--tool <name>').hideHelp())
    .option('--request-id <id>', 'request id for dialects that require one, when the input has none')
    .option('--profile <profile>', `trim the payload first: ${PROFILES.join(', ')}`, 'debug')
    .option('--profile-config <file>', PROFILE_CONFIG_HELP)
    .action(
      runs(invocation, async ({ io, global }, file: string, options: ConvertCliOptions) => {
        const to = dialectOption(options.to, '--to');
        const { profile, config } = await profileFrom(options, io);
        const { input, from: where } = await resultInput(file, io, options.text === true);
        // stdout carries the converted result alone: where it was found is said beside it.
        if (where !== undefined && !global.json) io.stderr(`note: ${readFrom(where)}\n`);
        // The payload's numbers go out as written: `lossless` is `value` with them kept.
        let value = input.value;
        let lossless = input.lossless;
        if (profile !== 'debug') {
          // Trimming re-encodes in the source dialect first, so the conversion sees the trimmed payload.
          const { from, model } = normalize(value, { lossless });
          lossless = codecFor(from).encode(applyProfile(model, profile, config)).value;
          value = plainJson(lossless);
        }
        const result = convert(value, to, {
          lossless,
          ...(options.strict ? { strict: true } : {}),
          ...((options.toolName ?? options.tool) !== undefined
            ? { tool: options.toolName ?? options.tool }
            : {}),
          ...(options.requestId !== undefined ? { requestId: options.requestId } : {}),
        });
        if (!global.json && result.losses.length > 0) io.stderr(lossLines(result.losses));
        // Already in the target dialect and untrimmed: the input's own text, unchanged.
        const unchanged = result.from === to && profile === 'debug';
        const raw = unchanged
          ? input.text
          : typeof result.value === 'string' && result.from === to
            ? result.value
            : `${JSON.stringify(result.value)}\n`;
        return {
          exitCode: EXIT.ok,
          raw: raw.endsWith('\n') ? raw : `${raw}\n`,
          json: {
            from: result.from,
            ...(where === undefined ? {} : { call_tool_result: where }),
            to,
            value: result.value,
            losses: result.losses,
          },
        };
      }),
    );
};
