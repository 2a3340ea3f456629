import { describeErrorCode, EnvelopeError } from '../errors/index.ts';

/** Exit codes used by every command. */
export const EXIT = {
  ok: 0,
  /** A check ran and failed: invalid, verification failed, vector failed. */
  checkFailed: 1,
  /** Usage error, or input that could not be read or parsed. */
  usage: 2,
} as const;

/**
 * Everything a command touches outside its arguments, so that the CLI runs the
 * same in a process (src/cli/bin.ts) and in-process (tests, embedding).
 */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Standard input: a stream, or its whole content. */
  stdin: NodeJS.ReadableStream | string | Uint8Array;
  /** The environment of programs a command runs, and of settings read from it. */
  env: NodeJS.ProcessEnv;
  /** Relative paths resolve against this folder. */
  cwd: string;
  /**
   * Whether this is the process's own environment (the real CLI, not a caller
   * running `main` in process): only then may a command replace the process
   * to take secrets out of its environment.
   */
  ownProcess?: boolean;
}

export interface GlobalOptions {
  json: boolean;
  debug: boolean;
}

/** What a command hands back: the exit code and what to print in each mode. */
export interface CommandResult {
  exitCode: number;
  /** Human-readable output, printed as is (a trailing newline is added when missing). */
  human?: string;
  /** Machine-readable output for `--json`. */
  json?: unknown;
  /** Raw text for stdout in both modes (canonical bytes, for one). */
  raw?: string;
}

export function printResult(result: CommandResult, options: GlobalOptions, io: CliIo): void {
  if (result.raw !== undefined && !options.json) {
    io.stdout(result.raw);
    return;
  }
  if (options.json) {
    const payload = result.json ?? (result.raw !== undefined ? { output: result.raw } : {});
    io.stdout(`${JSON.stringify(payload, null, 2)}\n`);
    return;
  }
  if (result.human !== undefined && result.human !== '') {
    io.stdout(result.human.endsWith('\n') ? result.human : `${result.human}\n`);
  }
}

/** Exit code for an error thrown out of a command: failed checks are 1, all else 2. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof EnvelopeError && describeErrorCode(error.code).kind === 'check')
    return EXIT.checkFailed;
  return EXIT.usage;
}

/** One line on stderr with a stable code; a stack only with --debug. */
export function printError(error: unknown, options: GlobalOptions, io: CliIo): void {
  const envelopeError =
    error instanceof EnvelopeError
      ? error
      : new EnvelopeError('INTERNAL_ERROR', error instanceof Error ? error.message : String(error));
  const oneLine = envelopeError.message.replace(/\s*\n\s*/g, ' ');
  if (options.json) {
    io.stderr(`${JSON.stringify({ error: { ...envelopeError.toJSON(), message: oneLine } })}\n`);
  } else {
    io.stderr(`error[${envelopeError.code}]: ${oneLine}\n`);
  }
  if (options.debug && error instanceof Error && error.stack) io.stderr(`${error.stack}\n`);
}
