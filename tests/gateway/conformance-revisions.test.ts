import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  failures,
  type RequirementsRun,
  regressions,
  requiredServerScenarios,
  runRequirements,
  scoreLine,
} from '../support/conformance-suite.ts';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { FIXTURE, NODE, ROOT, type Running, startListening } from './processes.ts';

/**
 * The official conformance suite's requirement set of each protocol revision
 * (`server --requirements REVISION`, run at that revision's wire: 2025-11-25
 * connections opened with initialize, stateless 2026-07-28 requests after
 * server/discover) against the fixture server directly over HTTP, and through
 * the gateway in passthrough with the fixture as a URL upstream and as a stdio
 * upstream. The fixture, with --conformance, passes every required scenario;
 * through the gateway no check may fail that passes directly. Every run has
 * processes of its own: the suite leaves some flows unfinished, and what one
 * run leaves must not decide another's.
 */

const REVISIONS = ['2025-11-25', '2026-07-28'] as const;
type Revision = (typeof REVISIONS)[number];
type Target = 'fixture' | 'gateway, URL upstream' | 'gateway, stdio upstream';
const TARGETS: readonly Target[] = ['fixture', 'gateway, stdio upstream', 'gateway, URL upstream'];

// A run takes seconds (the longest, up to a minute on a busy machine); the bounds only stop one that hangs.
const SCENARIO_TIMEOUT_MS = 15_000;
const RUN_TIMEOUT_MS = 150_000;
const FIXTURE_ARGS = [FIXTURE, '--conformance'];

/** A passthrough gateway with one upstream, configured as an operator would (no ledger, logs or artifacts). */
function gatewayConfig(upstream: Record<string, unknown>): string {
  const { config } = gatewayDir();
  const settings = {
    upstreams: [{ name: 'everything', dialect: 'passthrough', ...upstream }],
    listen: { stdio: false },
    ledger: { enabled: false },
    logs: { enabled: false },
    artifacts: { enabled: false },
  };
  writeFileSync(config, JSON.stringify(settings, null, 2));
  return config;
}

interface Deployment {
  url: string;
  processes: Running[];
}

async function deploy(target: Target): Promise<Deployment> {
  if (target === 'fixture') {
    const fixture = await startListening([...FIXTURE_ARGS, '--http', '0']);
    return { url: fixture.url, processes: [fixture] };
  }
  if (target === 'gateway, URL upstream') {
    const fixture = await startListening([...FIXTURE_ARGS, '--http', '0']);
    const gateway = await startGatewayHttp(['--config', gatewayConfig({ url: { url: fixture.url } })]);
    return { url: gateway.url, processes: [gateway, fixture] };
  }
  const gateway = await startGatewayHttp([
    '--config',
    gatewayConfig({ stdio: { command: NODE, args: FIXTURE_ARGS, cwd: ROOT } }),
  ]);
  return { url: gateway.url, processes: [gateway] };
}

const key = (revision: Revision, target: Target) => `${revision} / ${target}`;

describe('official MCP conformance suite, per protocol revision', () => {
  const deployments = new Map<string, Deployment>();
  const runs = new Map<string, RequirementsRun>();

  beforeAll(
    async () => {
      const cells = REVISIONS.flatMap((revision) => TARGETS.map((target) => ({ revision, target })));
      await Promise.all(
        cells.map(async ({ revision, target }) => {
          deployments.set(key(revision, target), await deploy(target));
        }),
      );
      const required = new Map(
        await Promise.all(
          REVISIONS.map(async (revision) => [revision, await requiredServerScenarios(revision)] as const),
        ),
      );
      const run = async ({ revision, target }: { revision: Revision; target: Target }) => {
        const url = deployments.get(key(revision, target))?.url as string;
        runs.set(
          key(revision, target),
          await runRequirements(revision, url, {
            required: required.get(revision) as string[],
            scenarioTimeoutMs: SCENARIO_TIMEOUT_MS,
            runTimeoutMs: RUN_TIMEOUT_MS,
          }),
        );
      };
      // The fixture's runs first, by themselves; then the gateway's, two at a time. The suite's windows
      // are short (some checks read a stream for 500 ms), and more runs at once on two cores only slow
      // each one down until such a window closes early.
      await Promise.all(cells.filter((cell) => cell.target === 'fixture').map(run));
      const queue = cells.filter((cell) => cell.target !== 'fixture').reverse();
      const worker = async () => {
        for (let cell = queue.pop(); cell; cell = queue.pop()) await run(cell);
      };
      await Promise.all([worker(), worker()]);
      // The scores, to be quoted: one line per run, then what failed directly (nothing, when all is
      // well) and what passes directly but not through the gateway.
      const lines = cells.map(({ revision, target }) =>
        scoreLine(`conformance ${key(revision, target)}`, runs.get(key(revision, target)) as RequirementsRun),
      );
      for (const { revision, target } of cells) {
        const run = runs.get(key(revision, target)) as RequirementsRun;
        const direct = runs.get(key(revision, 'fixture')) as RequirementsRun;
        const lost = target === 'fixture' ? failures(run) : regressions(direct, run);
        if (lost.length > 0) {
          lines.push(`not passed, ${key(revision, target)}:`, ...lost.map((line) => `  ${line}`));
        }
      }
      process.stderr.write(`${lines.join('\n')}\n`);
    },
    3 * RUN_TIMEOUT_MS + 60_000,
  );

  afterAll(async () => {
    await Promise.all(
      [...deployments.values()].flatMap((deployment) => deployment.processes.map((p) => p.stop())),
    );
    removeGatewayDirs();
  });

  for (const revision of REVISIONS) {
    describe(revision, () => {
      it('the fixture passes every required scenario directly, at the first try', () => {
        const run = runs.get(key(revision, 'fixture')) as RequirementsRun;
        // The requirement sets are frozen: 30 server scenarios for 2025-11-25, 37 for 2026-07-28.
        expect(run.required.length).toBeGreaterThanOrEqual(30);
        const missingOrFailed = failures(run);
        expect(missingOrFailed, `${missingOrFailed.join('\n')}\n--- suite output ---\n${run.output}`).toEqual(
          [],
        );
        for (const scenario of run.required) {
          expect(run.scenarios.get(scenario)?.passed, scenario).toBeGreaterThan(0);
        }
        expect(run.code, run.output).toBe(0);
      });

      for (const target of TARGETS.filter((each) => each !== 'fixture')) {
        it(`${target}: no check fails that passes directly`, () => {
          const direct = runs.get(key(revision, 'fixture')) as RequirementsRun;
          const through = runs.get(key(revision, target)) as RequirementsRun;
          const lost = regressions(direct, through);
          const gateway = deployments.get(key(revision, target))?.processes[0];
          expect(
            lost,
            `${key(revision, target)}, checks that pass directly:\n${lost.join('\n')}\n` +
              `--- gateway stderr (end) ---\n${gateway?.stderr().slice(-3000) ?? ''}`,
          ).toEqual([]);
        });
      }
    });
  }
});
