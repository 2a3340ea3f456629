import { resolve } from 'node:path';
import type { Command } from 'commander';
import { Keyring } from '../../artifacts/keyring.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { CONFIG_DEFAULTS } from '../../gateway/defaults.ts';
import { type Invocation, type Registrar, runs } from '../command.ts';
import { EXIT } from '../output.ts';

const DIR_HELP = `the artifacts folder (the gateway's artifacts.dir; default ${CONFIG_DEFAULTS.artifacts.dir}, relative to its configuration)`;

function parseTtl(value: string): number {
  const ttl = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(ttl) || ttl < 1) {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `--ttl-ms must be a positive whole number of milliseconds, got "${value}"`,
    );
  }
  return ttl;
}

/**
 * Replaces the key download links are signed with, in `<dir>/keys.json`. The
 * old key keeps verifying until the links it signed have expired (`--ttl-ms`,
 * the gateway's artifacts.ttlMs), so no link handed out stops working early;
 * keys past that are pruned. A running gateway picks the new key up at once.
 */
function registerRotateKey(artifacts: Command, invocation: Invocation): void {
  artifacts
    .command('rotate-key')
    .description(
      'make a new download signing key; the old one verifies until its links expire, then is pruned',
    )
    .option('--dir <dir>', DIR_HELP, CONFIG_DEFAULTS.artifacts.dir)
    .option(
      '--ttl-ms <ms>',
      'the longest link lifetime (the gateway artifacts.ttlMs): how long the old key keeps verifying',
      String(CONFIG_DEFAULTS.artifacts.ttlMs),
    )
    .action(
      runs(invocation, async ({ io }, options: { dir: string; ttlMs: string }) => {
        const maxTtlMs = parseTtl(options.ttlMs);
        const keyring = Keyring.inFolder({ dir: resolve(io.cwd, options.dir), maxTtlMs });
        const rotation = keyring.rotate();
        const until = new Date(Date.now() + maxTtlMs).toISOString();
        const lines = [
          `new key:     ${rotation.current}`,
          rotation.retired === undefined
            ? 'retired key: none (this folder had no key yet)'
            : `retired key: ${rotation.retired} (verifies links until ${until})`,
          ...(rotation.pruned.length > 0 ? [`pruned:      ${rotation.pruned.join(', ')}`] : []),
          `keys file:   ${keyring.file}`,
        ];
        return {
          exitCode: EXIT.ok,
          human: lines.join('\n'),
          json: {
            current: rotation.current,
            retired: rotation.retired ?? null,
            retired_verifies_until: rotation.retired === undefined ? null : until,
            pruned: rotation.pruned,
            file: keyring.file,
          },
        };
      }),
    );
}

export const registerArtifacts: Registrar = (program, invocation) => {
  const artifacts = program
    .command('artifacts')
    .description('manage the artifact store behind download links')
    .action(() => {
      throw new EnvelopeError('USAGE_ERROR', 'artifacts needs a command: rotate-key');
    });
  registerRotateKey(artifacts, invocation);
};
