import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.ts';

/**
 * `npm run lint` as package.json spells it, in a scratch git repository holding
 * this project's lint setup: what git tracks is linted, a file beside it that
 * was never added is not, and neither is what .gitignore names.
 */

const hasGit = spawnSync('git', ['--version']).status === 0;
const scratch = mkdtempSync(join(tmpdir(), 'mcp-envelope-lint-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const CLEAN = 'export const answer = 42;\n';
/** A lint error of biome's recommended rules (noDebugger), formatted as biome wants it. */
const BROKEN = 'export function stop(): void {\n  debugger;\n}\n';

function git(...args: string[]): void {
  const run = spawnSync('git', ['-C', scratch, ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')}: ${run.stderr}`);
}

/** package.json's lint script, run the way npm runs it: by a shell, with node_modules/.bin and this Node first on PATH. */
function lint(script: string): { code: number | null; output: string } {
  const path = [join(scratch, 'node_modules', '.bin'), dirname(process.execPath), process.env.PATH].join(
    delimiter,
  );
  const run = spawnSync(script, {
    cwd: scratch,
    shell: true,
    encoding: 'utf8',
    env: { ...process.env, PATH: path, NO_COLOR: '1' },
  });
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

describe.skipIf(!hasGit)(hasGit ? 'npm run lint' : 'npm run lint (skipped: git not installed)', () => {
  const script = (
    JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { lint: string } }
  ).scripts.lint;

  beforeAll(() => {
    for (const file of ['biome.json', '.gitignore', 'scripts/lint.ts']) {
      cpSync(join(REPO_ROOT, file), join(scratch, file));
    }
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(scratch, 'node_modules'), 'dir');
    mkdirSync(join(scratch, 'src'));
    mkdirSync(join(scratch, 'runs'));
    writeFileSync(join(scratch, 'src', 'tracked.ts'), CLEAN);
    git('init', '--quiet');
    git('add', 'biome.json', '.gitignore', 'src/tracked.ts');
  });

  it('skips a file git does not track, and one .gitignore names', () => {
    writeFileSync(join(scratch, 'src', 'scratch.ts'), BROKEN);
    writeFileSync(join(scratch, 'runs', 'ignored.ts'), BROKEN);
    const run = lint(script);
    expect(run.code, run.output).toBe(0);
  });

  it('fails on a lint error in a tracked file, naming it', () => {
    writeFileSync(join(scratch, 'src', 'tracked.ts'), BROKEN);
    const run = lint(script);
    expect(run.code).toBe(1);
    expect(run.output).toContain('src/tracked.ts');
    expect(run.output).toContain('noDebugger');
    expect(run.output).not.toContain('src/scratch.ts');
  });
});
