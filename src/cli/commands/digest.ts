import { resolve } from 'node:path';
import { assertDigestAlg, digestFile, digestStream, digestValue } from '../../canonical/digest.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { type Registrar, runs } from '../command.ts';
import { isStdin, readJsonInput, stdinChunks } from '../input.ts';
import { EXIT } from '../output.ts';

export const registerDigest: Registrar = (program, invocation) => {
  program
    .command('digest')
    .description(
      'digest a JSON document over its canonical bytes, or with --raw a regular file (or stdin) as its bytes (streamed, constant memory)',
    )
    .argument('[file]', 'input file, or - for stdin', '-')
    .option('--alg <alg>', 'sha256, sha512 or blake3', 'sha256')
    .option('--raw', 'digest the bytes as they are instead of the canonical JSON')
    .action(
      runs(invocation, async ({ io }, file: string, options: { alg: string; raw?: boolean }) => {
        const alg = assertDigestAlg(options.alg);
        let digest: { alg: string; value: string };
        let size: number | undefined;
        if (options.raw) {
          try {
            const streamed = isStdin(file)
              ? await digestStream(stdinChunks(io.stdin), alg)
              : await digestFile(resolve(io.cwd, file), alg);
            digest = { alg: streamed.alg, value: streamed.value };
            size = streamed.size;
          } catch (error) {
            if (error instanceof EnvelopeError) throw error;
            const code = (error as NodeJS.ErrnoException).code;
            const reason =
              code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : String(error);
            throw new EnvelopeError('INPUT_UNREADABLE', `Cannot read ${file}: ${reason}`, { path: file });
          }
        } else {
          digest = digestValue(await readJsonInput(file, io), alg);
        }
        return {
          exitCode: EXIT.ok,
          human: `${digest.alg}:${digest.value}`,
          json: size === undefined ? digest : { ...digest, size_bytes: size },
        };
      }),
    );
};
