import { Command, CommanderError } from 'commander';
import { EnvelopeError } from '../errors/index.ts';
import { PACKAGE_VERSION } from '../version.ts';
import type { Invocation, Registrar } from './command.ts';
import { registerArtifacts } from './commands/artifacts.ts';
import { registerCanonicalize } from './commands/canonicalize.ts';
import {
  registerCheckVector,
  registerConformanceReport,
  registerListVectors,
  registerValidateManifest,
} from './commands/conformance.ts';
import { registerConvert, registerDetect, registerNormalize } from './commands/dialects.ts';
import { registerDigest } from './commands/digest.ts';
import { registerGateway } from './commands/gateway.ts';
import { registerKeygen, registerLineage, registerSign, registerVerify } from './commands/integrity.ts';
import { registerLedger } from './commands/ledger.ts';
import { registerListMethods, registerValidateMethods } from './commands/methods.ts';
import { registerProxy } from './commands/proxy.ts';
import { registerValidateSchemas } from './commands/schemas.ts';
import { registerSelfTest } from './commands/self-test.ts';
import { registerTools } from './commands/tools.ts';
import { registerValidate } from './commands/validate.ts';
import { registerWrap } from './commands/wrap.ts';
import { type CliIo, EXIT, printError } from './output.ts';

const REGISTRARS: readonly Registrar[] = [
  registerCanonicalize,
  registerDigest,
  registerWrap,
  registerValidate,
  registerDetect,
  registerNormalize,
  registerConvert,
  registerListMethods,
  registerValidateMethods,
  registerValidateManifest,
  registerCheckVector,
  registerListVectors,
  registerValidateSchemas,
  registerSelfTest,
  registerConformanceReport,
  registerKeygen,
  registerSign,
  registerVerify,
  registerLineage,
  registerProxy,
  registerGateway,
  registerLedger,
  registerTools,
  registerArtifacts,
];

export const VERSION = PACKAGE_VERSION;

export function buildProgram(invocation: Invocation): Command {
  const program = new Command('mcp-envelope')
    .description('Wrap, validate, convert and verify MCP tool results and their provenance.')
    .version(VERSION)
    .option('--json', 'print machine-readable JSON')
    .option('--debug', 'print stack traces for errors')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => invocation.io.stdout(text),
      // Commander's own usage errors are reported through printError instead.
      writeErr: () => {},
    });
  for (const register of REGISTRARS) register(program, invocation);
  for (const command of program.commands) command.exitOverride();
  return program;
}

/**
 * Runs the CLI on `argv` (the arguments after the program name) against `io`
 * and resolves to the exit code. It never throws and never ends the process,
 * so it runs in-process as well as behind src/cli/bin.ts.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const invocation: Invocation = { io, exitCode: EXIT.ok };
  const program = buildProgram(invocation);
  const wantsJson = argv.includes('--json');
  const debug = argv.includes('--debug');
  try {
    await program.parseAsync(argv as string[], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
      if (error.code === 'commander.help') return EXIT.ok;
      const message = error.message.replace(/^error: /, '');
      printError(new EnvelopeError('USAGE_ERROR', message), { json: wantsJson, debug }, io);
      return EXIT.usage;
    }
    printError(error, { json: wantsJson, debug }, io);
    return EXIT.usage;
  }
  return invocation.exitCode;
}
