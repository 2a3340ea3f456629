import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE, NODE, ROOT, type Running, startListening, startProxyHttp } from './processes.ts';

// The official suite, run as its own CLI against a URL.
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SUITE_TIMEOUT_MS = 120_000;

interface ScenarioResult {
  scenario: string;
  passed: number;
  failed: number;
}

interface Suite {
  results: Map<string, ScenarioResult>;
  output: string;
}

function runSuite(args: string[], cwd: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    execFile(NODE, [SUITE, ...args], { cwd, timeout: timeoutMs }, (_error, stdout, stderr) =>
      resolve(`${stdout}\n${stderr}`),
    );
  });
}

/** Per-scenario lines of the suite's summary: `✓ name: 2 passed, 0 failed`. */
function parseSummary(output: string): Map<string, ScenarioResult> {
  const results = new Map<string, ScenarioResult>();
  for (const match of output.matchAll(/^[✓✗]\s+(\S+):\s*(\d+) passed,\s*(\d+) failed/gm)) {
    const scenario = match[1] as string;
    results.set(scenario, { scenario, passed: Number(match[2]), failed: Number(match[3]) });
  }
  return results;
}

/** The whole suite against a URL, once: a scenario that fails is not run again, so flakiness shows. */
async function runAll(url: string, cwd: string): Promise<Suite> {
  const output = await runSuite(['server', '--url', url, '--suite', 'all'], cwd, SUITE_TIMEOUT_MS);
  return { results: parseSummary(output), output };
}

/** One line per scenario with failed checks, then the suite's own output. */
function report(name: string, suite: Suite, scenarios: readonly string[]): string {
  const lines = scenarios.map((scenario) => {
    const result = suite.results.get(scenario);
    return result
      ? `  ${scenario}: ${result.passed} passed, ${result.failed} failed`
      : `  ${scenario}: missing from the summary`;
  });
  return `${name}, failing scenarios:\n${lines.join('\n')}\n--- ${name} suite output ---\n${suite.output}`;
}

function summary(results: Map<string, ScenarioResult>): { passed: number; failed: number } {
  let passed = 0;
  let failed = 0;
  for (const result of results.values()) {
    passed += result.passed;
    failed += result.failed;
  }
  return { passed, failed };
}

describe('official MCP conformance suite', () => {
  let upstream: Running;
  let gateway: Running;
  let cwd: string;

  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
    [upstream, gateway] = await Promise.all([
      startListening([FIXTURE, '--http', '0']),
      startProxyHttp(['--dialect', 'passthrough']),
    ]);
  });

  afterAll(async () => {
    await Promise.all([upstream?.stop(), gateway?.stop()]);
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('passes through the gateway every scenario the server passes directly', {
    timeout: 240_000,
  }, async () => {
    const [direct, proxied] = await Promise.all([runAll(upstream.url, cwd), runAll(gateway.url, cwd)]);
    const scenarios = [...direct.results.keys()];
    expect(scenarios.length, direct.output).toBeGreaterThanOrEqual(30);
    const directTotals = summary(direct.results);
    const gatewayTotals = summary(proxied.results);
    process.stderr.write(
      `conformance: server ${directTotals.passed} passed / ${directTotals.failed} failed; ` +
        `gateway ${gatewayTotals.passed} passed / ${gatewayTotals.failed} failed\n`,
    );
    // The fixture server is built to pass the whole suite, at the first try.
    const directFailures = scenarios.filter((scenario) => direct.results.get(scenario)?.failed !== 0);
    expect(directFailures, report('server', direct, directFailures)).toEqual([]);
    // The gateway must match it check for check, at the first try too.
    const regressions = scenarios.filter((scenario) => {
      const before = direct.results.get(scenario);
      const after = proxied.results.get(scenario);
      return !after || after.failed > 0 || after.passed < (before?.passed ?? 0);
    });
    expect(regressions, report('gateway', proxied, regressions)).toEqual([]);
    expect(gatewayTotals.passed).toBe(directTotals.passed);
  });
});
