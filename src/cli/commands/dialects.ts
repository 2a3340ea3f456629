import { Option } from 'commander';
import { plainJson } from '../../canonical/json-value.ts';
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
import { type Registrar, runs } from '../command.ts';
import { readJsonInput, readResultInput } from '../input.ts';
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

export function lossLines(losses: readonly Loss[]): string {
  return losses.map((loss) => `loss: ${loss.path} ${loss.reason}\n`).join('');
}

export const registerDetect: Registrar = (program, invocation) => {
  program
    .command('detect')
    .description(
      'name the envelope dialect of a tool result (JSON, JSON text, or plain text), or say why none',
    )
    .argument('[file]', 'file, or - for stdin', '-')
    .option('--text', 'treat the input as text (a string payload) even if it is JSON')
    .action(
      runs(invocation, async ({ io }, file: string, options: { text?: boolean }) => {
        const input = await readResultInput(file, io, { asText: options.text === true });
        const report = detectDialect(input.value);
        const found = report.dialect !== null;
        const human = found
          ? `${report.dialect}${report.version === null ? '' : ` ${report.version}`}${report.text ? ' (as JSON text)' : ''}${input.json ? '' : report.dialect === 'legacy' ? ' (text)' : ''}`
          : [
              `no dialect (near: ${report.near.join(', ')})`,
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
    .description('decode a tool result of any dialect into the normalized model')
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
          const input = await readResultInput(file, io, { asText: options.text === true });
          const { from, model } = normalize(input.value, { lossless: input.lossless });
          const { decodedFrom: _from, ...shown } = applyProfile(model, profile, config);
          const output = { from, model: shown };
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
      'convert a tool result to another dialect; every field the target cannot carry is reported (stderr), or with --strict refused',
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
        const input = await readResultInput(file, io, { asText: options.text === true });
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
          json: { from: result.from, to, value: result.value, losses: result.losses },
        };
      }),
    );
};
