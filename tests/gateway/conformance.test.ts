import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE, NODE, ROOT, type Running, startListening, startProxyHttp } from './processes.ts';

// The official suite, run as its own CLI against a URL.
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SUITE_TIMEOUT_MS = 120_000;
const SCENARIO_TIMEOUT_MS = 20_000;

interface ScenarioResult {
  scenario: string;
  passed: number;
  failed: number;
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
    results.set(scenario, { scenario, passed: Number(match[2]), failed: Number(match[3]), output });
  }
  return results;
}

/** The whole suite against a URL; a scenario that failed gets one more run on its own. */
async function runAll(url: string, cwd: string): Promise<Map<string, ScenarioResult>> {
  const results = parseSummary(
    await runSuite(['server', '--url', url, '--suite', 'all'], cwd, SUITE_TIMEOUT_MS),
  );
  for (const [scenario, result] of results) {
    if (result.failed === 0) continue;
    const retry = parseSummary(
      await runSuite(['server', '--url', url, '--scenario', scenario], cwd, SCENARIO_TIMEOUT_MS),
    ).get(scenario);
    if (retry) results.set(scenario, retry);
  }
  return results;
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
    const scenarios = [...direct.keys()];
    expect(scenarios.length).toBeGreaterThanOrEqual(30);
    const directTotals = summary(direct);
    const gatewayTotals = summary(proxied);
    process.stderr.write(
      `conformance: server ${directTotals.passed} passed / ${directTotals.failed} failed; ` +
        `gateway ${gatewayTotals.passed} passed / ${gatewayTotals.failed} failed\n`,
    );
    const regressions = scenarios.filter((scenario) => {
      const before = direct.get(scenario);
      const after = proxied.get(scenario);
      return before && after && before.failed === 0 && (after.failed > 0 || after.passed < before.passed);
    });
    expect(regressions, regressions.map((s) => proxied.get(s)?.output).join('\n')).toEqual([]);
    // The fixture server is built to pass the whole suite; the gateway must match it check for check.
    expect(directTotals.failed).toBe(0);
    expect(gatewayTotals.passed).toBe(directTotals.passed);
  });
});
