import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN, REPO_ROOT } from '../helpers/cli.ts';

/** bin/check-node.mjs: plain JS (it must run on old Nodes), so no types; these are its exports. */
interface CheckNode {
  parseVersion(text: string): [number, number, number] | null;
  compareVersions(a: string, b: string): number;
  satisfies(version: string, range: string): boolean;
  describeRange(range: string): string;
  requiredRange(): string;
  nodeVersionProblem(version?: string, range?: string): string | null;
}

const CHECK_SCRIPT = join(REPO_ROOT, 'bin', 'check-node.mjs');
const PACKAGE = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};
const check = (await import(pathToFileURL(CHECK_SCRIPT).href)) as CheckNode;

describe('the Node.js version check (bin/check-node.mjs)', () => {
  it('reads the range from package.json engines', () => {
    expect(check.requiredRange()).toBe(PACKAGE.engines.node);
    // The lowest Node on which every command, example and test works: node:sqlite (which the CLI
    // loads) prints an ExperimentalWarning on stderr up to 24.14.x, and on every 22.x and 23.x.
    expect(check.satisfies('24.15.0', PACKAGE.engines.node)).toBe(true);
    expect(check.satisfies('24.14.1', PACKAGE.engines.node)).toBe(false);
    expect(check.satisfies('22.23.3', PACKAGE.engines.node)).toBe(false);
  });

  it('parses and orders versions numerically, not as text', () => {
    expect(check.parseVersion('v22.12.0')).toEqual([22, 12, 0]);
    expect(check.parseVersion('24')).toEqual([24, 0, 0]);
    expect(check.parseVersion('24.0.0-nightly20250101')).toEqual([24, 0, 0]);
    expect(check.parseVersion('twenty-two')).toBeNull();
    expect(check.compareVersions('22.9.0', '22.18.0')).toBe(-1);
    expect(check.compareVersions('v22.18.0', '22.18')).toBe(0);
    expect(check.compareVersions('100.0.0', '24.3.0')).toBe(1);
  });

  it('evaluates ranges with || and partial versions', () => {
    const range = '>=22.18.0 <23 || >=24.3.0';
    const inside = ['22.18.0', '22.23.3', 'v24.3.0', '24.21.0', '25.0.0'];
    const outside = ['20.20.2', '22.12.0', '22.13.0', '22.17.1', '23.0.0', '23.11.1', '24.0.0', '24.2.0'];
    for (const version of inside) expect(check.satisfies(version, range), version).toBe(true);
    for (const version of outside) expect(check.satisfies(version, range), version).toBe(false);
    expect(check.satisfies('22.12.0', '>=22.12')).toBe(true);
    expect(check.satisfies('22.11.9', '>=22.12')).toBe(false);
    expect(check.satisfies('22.1.0', '>22.0.0 <=22.1.0')).toBe(true);
  });

  it('refuses range syntax it would misread instead of guessing', () => {
    for (const range of ['^22.18.0', '~24.3', '22.x', '', '>=22 || ']) {
      expect(() => check.satisfies('24.3.0', range), range).toThrow(/unsupported version range/);
    }
  });

  it('accepts the Node running these tests, and names both versions when it refuses one', () => {
    expect(check.nodeVersionProblem()).toBeNull();
    expect(check.describeRange('>=22.18.0 <23 || >=24.3.0')).toBe(
      '22.18.0 or a later 22.x, or 24.3.0 or newer',
    );
    expect(check.nodeVersionProblem('22.12.0', '>=22.18.0 <23 || >=24.3.0')).toBe(
      'error[USAGE_ERROR]: mcp-envelope needs Node.js 22.18.0 or a later 22.x, or 24.3.0 or newer ' +
        '(package.json engines: ">=22.18.0 <23 || >=24.3.0"); this is Node.js v22.12.0',
    );
  });

  it('lets the launcher and the check script run under the current Node', () => {
    const script = spawnSync(process.execPath, [CHECK_SCRIPT], { encoding: 'utf8' });
    expect(script.stderr).toBe('');
    expect(script.status).toBe(0);
    const launcher = spawnSync(process.execPath, [BIN, '--version'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(launcher.status).toBe(0);
    expect(launcher.stdout.trim()).toBe(PACKAGE.version);
  });
});
