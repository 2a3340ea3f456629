import { canonicalize } from '../../canonical/canonicalize.ts';
import { type Registrar, runs } from '../command.ts';
import { readJsonInput } from '../input.ts';
import { EXIT } from '../output.ts';

export const registerCanonicalize: Registrar = (program, invocation) => {
  program
    .command('canonicalize')
    .description('print the RFC 8785 canonical form of a JSON document (exactly those bytes, no newline)')
    .argument('[file]', 'JSON file, or - for stdin', '-')
    .action(
      runs(invocation, async ({ io }, file: string) => {
        const canonical = canonicalize(await readJsonInput(file, io));
        return { exitCode: EXIT.ok, raw: canonical, json: { canonical } };
      }),
    );
};
