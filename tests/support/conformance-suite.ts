import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The official MCP conformance suite, run as its own CLI against a URL. Two
 * releases are installed side by side: 0.1.x, whose `--suite all` is one run
 * of every server scenario, and 0.2.x, whose `--requirements REVISION` runs
 * exactly what one protocol revision requires, at that revision's wire.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
export const SUITE_NEXT = join(ROOT, 'node_modules/@modelcontextprotocol/conformance-next/dist/index.js');

export interface SuiteOutput {
  code: number | null;
  output: string;
}

/** One run of the suite's CLI, bounded: stdout and stderr together, and how it exited. */
export function runSuite(
  suite: string,
  args: readonly string[],
  cwd: string,
  timeoutMs: number,
): Promise<SuiteOutput> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [suite, ...args],
      { cwd, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : null) : 0,
          output: `${stdout}\n${stderr}`,
        }),
    );
  });
}

export interface ScenarioResult {
  scenario: string;
  passed: number;
  failed: number;
}

/** Per-scenario lines of the suite's summary: `✓ name: 2 passed, 0 failed`. */
export function parseSummary(output: string): Map<string, ScenarioResult> {
  const results = new Map<string, ScenarioResult>();
  for (const match of output.matchAll(/^[✓✗]\s+(\S+):\s*(\d+) passed,\s*(\d+) failed/gm)) {
    const scenario = match[1] as string;
    results.set(scenario, { scenario, passed: Number(match[2]), failed: Number(match[3]) });
  }
  return results;
}

export function totals(results: Iterable<ScenarioResult>): { passed: number; failed: number } {
  let passed = 0;
  let failed = 0;
  for (const result of results) {
    passed += result.passed;
    failed += result.failed;
  }
  return { passed, failed };
}

/** One check as the suite records it in a scenario's checks.json. */
export interface Check {
  id: string;
  name: string;
  description?: string;
  /** SUCCESS and FAILURE are scored; WARNING (SHOULD-level), SKIPPED and INFO are not. */
  status: string;
  errorMessage?: string;
}

export interface ScenarioChecks {
  scenario: string;
  checks: Check[];
  passed: number;
  failed: number;
}

export interface RequirementsRun {
  revision: string;
  url: string;
  /** What the revision requires of a server: the scored scenarios, in the suite's order. */
  required: string[];
  /** Every scenario the run finished, scored or not, by name. */
  scenarios: Map<string, ScenarioChecks>;
  code: number | null;
  output: string;
  ms: number;
}

/** The server scenarios a revision requires, as `list --requirements` names them (the not-scored ones left out). */
export async function requiredServerScenarios(revision: string): Promise<string[]> {
  const { output } = await runSuite(
    SUITE_NEXT,
    ['list', '--server', '--requirements', revision],
    ROOT,
    30_000,
  );
  const section = /^Server scenarios[^\n]*\n((?:[ \t]+- \S+\n)+)/m.exec(output);
  if (!section?.[1]) throw new Error(`no server scenarios listed for ${revision}:\n${output}`);
  return [...section[1].matchAll(/- (\S+)/g)].map((match) => match[1] as string);
}

/**
 * What the run wrote with `--output-dir`: one folder per finished scenario,
 * `server-<scenario>-<timestamp>/checks.json`. The suite's schema checks
 * (`wire-schema-valid`: every message the server sent validated against the
 * revision's JSON schema) are among a scenario's checks, scored like the rest.
 */
function readChecks(dir: string): Map<string, ScenarioChecks> {
  const scenarios = new Map<string, ScenarioChecks>();
  for (const entry of readdirSync(dir)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    if (!scenario) continue;
    let checks: Check[];
    try {
      checks = JSON.parse(readFileSync(join(dir, entry, 'checks.json'), 'utf8')) as Check[];
    } catch {
      continue;
    }
    scenarios.set(scenario, {
      scenario,
      checks,
      passed: checks.filter((check) => check.status === 'SUCCESS').length,
      failed: checks.filter((check) => check.status === 'FAILURE').length,
    });
  }
  return scenarios;
}

/**
 * `server --requirements REVISION` against a URL, once: a scenario that fails
 * is not run again, so flakiness shows. `required` is what the revision
 * requires (requiredServerScenarios), what the run is scored on. Each scenario is bounded by the suite's
 * own `--timeout`, the whole run by `runTimeoutMs`; a scenario the run did not
 * finish is missing from `scenarios`.
 */
export async function runRequirements(
  revision: string,
  url: string,
  options: { required: string[]; scenarioTimeoutMs: number; runTimeoutMs: number },
): Promise<RequirementsRun> {
  const cwd = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  try {
    const outDir = join(cwd, 'results');
    const started = performance.now();
    const run = await runSuite(
      SUITE_NEXT,
      [
        'server',
        '--url',
        url,
        '--requirements',
        revision,
        '--timeout',
        String(options.scenarioTimeoutMs),
        '--output-dir',
        outDir,
      ],
      cwd,
      options.runTimeoutMs,
    );
    const ms = performance.now() - started;
    let scenarios = new Map<string, ScenarioChecks>();
    try {
      scenarios = readChecks(outDir);
    } catch {
      // No folder at all: the run wrote nothing, and every scenario reads as missing.
    }
    return { revision, url, required: options.required, scenarios, code: run.code, output: run.output, ms };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/**
 * Scenarios passed and checks passed, failed and warned (SHOULD-level, not
 * scored) over the required scenarios; a missing scenario counts as not passed.
 */
export function score(run: RequirementsRun): {
  scenariosPassed: number;
  scenariosTotal: number;
  checksPassed: number;
  checksFailed: number;
  warnings: number;
} {
  let scenariosPassed = 0;
  let checksPassed = 0;
  let checksFailed = 0;
  let warnings = 0;
  for (const name of run.required) {
    const result = run.scenarios.get(name);
    if (!result) continue;
    checksPassed += result.passed;
    checksFailed += result.failed;
    warnings += result.checks.filter((check) => check.status === 'WARNING').length;
    if (result.failed === 0 && result.passed > 0) scenariosPassed++;
  }
  return { scenariosPassed, scenariosTotal: run.required.length, checksPassed, checksFailed, warnings };
}

export function scoreLine(label: string, run: RequirementsRun): string {
  const s = score(run);
  return (
    `${label}: ${s.scenariosPassed}/${s.scenariosTotal} scenarios passed, ` +
    `${s.checksPassed} checks passed, ${s.checksFailed} failed, ${s.warnings} warnings ` +
    `(${(run.ms / 1000).toFixed(1)} s, exit ${run.code})`
  );
}

/** `scenario: check-id: message` for each failed check of the required scenarios, and a line for each missing one. */
export function failures(run: RequirementsRun, scenarios: readonly string[] = run.required): string[] {
  const lines: string[] = [];
  for (const name of scenarios) {
    const result = run.scenarios.get(name);
    if (!result) {
      lines.push(`${name}: did not finish (no checks recorded)`);
      continue;
    }
    for (const check of result.checks) {
      if (check.status === 'FAILURE')
        lines.push(`${name}: ${check.id}: ${check.errorMessage ?? check.description ?? ''}`);
    }
    if (result.checks.length === 0) lines.push(`${name}: recorded no checks`);
  }
  return lines;
}

/**
 * What fails against `other` and not against `baseline`, per required
 * scenario: each failed check whose id does not fail in the baseline too, and
 * each check id with fewer passes than in the baseline (some ids are checked
 * more than once in a scenario) that did not fail: a SHOULD-level WARNING, or
 * a check the scenario did not reach.
 */
export function regressions(baseline: RequirementsRun, other: RequirementsRun): string[] {
  const lines: string[] = [];
  for (const name of baseline.required) {
    const before = baseline.scenarios.get(name);
    if (!before) continue;
    const after = other.scenarios.get(name);
    if (!after) {
      lines.push(`${name}: did not finish (no checks recorded)`);
      continue;
    }
    const count = (checks: Check[], id: string, status: string) =>
      checks.filter((check) => check.id === id && check.status === status).length;
    for (const check of after.checks) {
      if (check.status === 'FAILURE' && count(before.checks, check.id, 'FAILURE') === 0) {
        lines.push(`${name}: ${check.id}: ${check.errorMessage ?? check.description ?? ''}`);
      }
    }
    for (const id of new Set(before.checks.map((check) => check.id))) {
      const lost = count(before.checks, id, 'SUCCESS') - count(after.checks, id, 'SUCCESS');
      if (lost <= 0 || count(after.checks, id, 'FAILURE') > 0) continue;
      // A SHOULD-level check reports WARNING, not FAILURE: it still passed directly and not here.
      const other = after.checks.find((check) => check.id === id && check.status !== 'SUCCESS');
      lines.push(
        other
          ? `${name}: ${id}: ${other.status}: ${other.errorMessage ?? other.description ?? ''}`
          : `${name}: ${id}: not checked (${lost} pass${lost > 1 ? 'es' : ''} fewer than directly)`,
      );
    }
  }
  return lines;
}
