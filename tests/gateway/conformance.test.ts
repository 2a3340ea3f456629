import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSummary, runSuite, type ScenarioResult, SUITE, totals } from '../support/conformance-suite.ts';
import { FIXTURE, type Running, startListening, startProxyHttp } from './processes.ts';

// The official suite's 0.1 release, run as its own CLI against a URL
// (conformance-revisions.test.ts runs the 0.2 release, per protocol revision).
const SUITE_TIMEOUT_MS = 120_000;

interface Suite {
  results: Map<string, ScenarioResult>;
  output: string;
}

/** The whole suite against a URL, once: a scenario that fails is not run again, so flakiness shows. */
async function runAll(url: string, cwd: string): Promise<Suite> {
  const { output } = await runSuite(SUITE, ['server', '--url', url, '--suite', 'all'], cwd, SUITE_TIMEOUT_MS);
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
    const directTotals = totals(direct.results.values());
    const gatewayTotals = totals(proxied.results.values());
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
