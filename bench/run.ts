import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Runs every bench/*.bench.ts in name order, each in its own process so that
 * one benchmark's heap, JIT state and peak RSS do not leak into the next.
 * A name filter may be given: `node bench/run.ts canonical`.
 */

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2];
const files = readdirSync(here)
  .filter((name) => name.endsWith('.bench.ts') && (filter === undefined || name.includes(filter)))
  .sort();

let failed = 0;
for (const name of files) {
  process.stdout.write(`\n== ${name}\n`);
  const run = spawnSync(process.execPath, [join(here, name)], { stdio: 'inherit' });
  if (run.status !== 0) {
    failed++;
    process.stdout.write(`!! ${name} exited with ${run.status ?? run.signal}\n`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
