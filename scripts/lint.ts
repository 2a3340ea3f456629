/**
 * `npm run lint`: `biome ci` over the files git tracks, so a file someone keeps
 * in their clone without adding it (a scratch script, a half-written module)
 * fails no one's lint. Biome reads .gitignore (biome.json's `vcs`) but has no
 * way to tell an untracked file from a tracked one, hence the list. Its own
 * `files.includes` still applies to the files named.
 *
 * Usage: node scripts/lint.ts     (from the repository's root; exit code is biome's)
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');

function trackedFiles(): string[] | undefined {
  const listed = spawnSync('git', ['ls-files', '-z'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (listed.error || listed.status !== 0) return undefined;
  // A file deleted but not yet staged is still listed: there is nothing to lint.
  return listed.stdout.split('\0').filter((file) => file !== '' && existsSync(file));
}

const tracked = trackedFiles();
if (tracked === undefined) {
  process.stderr.write('lint: not a git checkout (or no git): linting every file biome.json includes\n');
}
// Without paths biome would take the whole folder: no tracked file means nothing to lint.
if (tracked?.length === 0) process.exit(0);
const targets = tracked ?? ['.'];
const run = spawnSync(process.execPath, [biome, 'ci', '--files-ignore-unknown=true', ...targets], {
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
