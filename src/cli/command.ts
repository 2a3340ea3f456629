import type { Command } from 'commander';
import {
  type CliIo,
  type CommandResult,
  exitCodeFor,
  type GlobalOptions,
  printError,
  printResult,
} from './output.ts';

export interface CommandContext {
  io: CliIo;
  global: GlobalOptions;
}

/** Shared state for one CLI invocation: where to write and the exit code so far. */
export interface Invocation {
  io: CliIo;
  exitCode: number;
}

/**
 * Wraps a command body: reads the global flags, prints the result in the
 * chosen mode, and turns a thrown error into one stderr line and an exit code.
 */
export function runs<Args extends unknown[]>(
  invocation: Invocation,
  body: (context: CommandContext, ...args: Args) => Promise<CommandResult>,
): (...args: unknown[]) => Promise<void> {
  return async (...commanderArgs: unknown[]) => {
    const command = commanderArgs.at(-1) as Command;
    const global = command.optsWithGlobals() as Partial<GlobalOptions>;
    const options: GlobalOptions = { json: global.json === true, debug: global.debug === true };
    const context: CommandContext = { io: invocation.io, global: options };
    try {
      const result = await body(context, ...(commanderArgs.slice(0, -1) as Args));
      printResult(result, options, invocation.io);
      invocation.exitCode = result.exitCode;
    } catch (error) {
      printError(error, options, invocation.io);
      invocation.exitCode = exitCodeFor(error);
    }
  };
}

export type Registrar = (program: Command, invocation: Invocation) => void;
