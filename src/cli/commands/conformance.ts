import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { CaseResult } from '../../conformance/evaluate.ts';
import { validateManifest } from '../../conformance/manifest.ts';
import { buildConformanceReport, runVectors } from '../../conformance/report.ts';
import { BUNDLED_VECTORS_DIR, listVectorFolders, loadVectorFolder } from '../../conformance/vector-layout.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { type Registrar, runs } from '../command.ts';
import { readJsonInput } from '../input.ts';
import { EXIT } from '../output.ts';

function caseLines(cases: readonly CaseResult[]): string[] {
  return cases.map(
    (result) => `${result.passed ? 'PASS' : 'FAIL'}: ${result.id} (expect ${result.expect}) ${result.detail}`,
  );
}

export const registerCheckVector: Registrar = (program, invocation) => {
  program
    .command('check-vector')
    .description(
      'run conformance vectors: one method id folder, or --all (a must-fail vector that passes is a failure)',
    )
    .argument('[id]', 'vector folder name, e.g. integrity.digest.sha256')
    .option('--all', 'run every vector folder')
    .option('--dir <dir>', 'vectors root laid out like prov-spec spec/vectors (default: the bundled vectors)')
    .action(
      runs(invocation, async ({ io }, id: string | undefined, options: { all?: boolean; dir?: string }) => {
        if ((id === undefined) === (options.all !== true)) {
          throw new EnvelopeError('USAGE_ERROR', 'Give a vector id or --all (not both)');
        }
        const root = options.dir === undefined ? BUNDLED_VECTORS_DIR : resolve(io.cwd, options.dir);
        const run = await runVectors(root, id === undefined ? undefined : [id]);
        const summary = `${run.passed} passed, ${run.failed} failed`;
        return {
          exitCode: run.failed === 0 ? EXIT.ok : EXIT.checkFailed,
          human: [...caseLines(run.cases), summary].join('\n'),
          json: {
            ok: run.failed === 0,
            root: run.root,
            passed: run.passed,
            failed: run.failed,
            cases: run.cases,
          },
        };
      }),
    );
};

export const registerValidateManifest: Registrar = (program, invocation) => {
  program
    .command('validate-manifest')
    .description('validate a prov-capabilities@v0.1 manifest (schema and method ids)')
    .argument('<file>', 'manifest JSON file, or - for stdin')
    .action(
      runs(invocation, async ({ io }, file: string) => {
        const findings = validateManifest(await readJsonInput(file, io));
        const errors = findings.filter((finding) => finding.level === 'error').length;
        const lines = findings.map(
          (finding) => `${finding.level.toUpperCase()}: ${finding.pointer || '/'} ${finding.message}`,
        );
        lines.push(
          errors === 0 ? 'OK: manifest is valid' : `FAILED: ${errors} error${errors === 1 ? '' : 's'}`,
        );
        return {
          exitCode: errors === 0 ? EXIT.ok : EXIT.checkFailed,
          human: lines.join('\n'),
          json: { valid: errors === 0, findings },
        };
      }),
    );
};

export const registerConformanceReport: Registrar = (program, invocation) => {
  program
    .command('conformance-report')
    .description(
      'validate a capability manifest, run the vectors, and report the conformance level actually met',
    )
    .argument('<manifest>', 'prov-capabilities@v0.1 manifest file')
    .option('-o, --output <file>', 'write the JSON report to a file')
    .option('--dir <dir>', 'vectors root (default: the bundled vectors)')
    .action(
      runs(invocation, async ({ io }, file: string, options: { output?: string; dir?: string }) => {
        const manifest = await readJsonInput(file, io);
        const run = await runVectors(
          options.dir === undefined ? BUNDLED_VECTORS_DIR : resolve(io.cwd, options.dir),
        );
        const report = buildConformanceReport(manifest, run);
        const text = `${JSON.stringify(report, null, 2)}\n`;
        if (options.output !== undefined) await writeFile(resolve(io.cwd, options.output), text);
        const lines = [
          `engine under test: ${report.engine.name} ${report.engine.version}`,
          `manifest: ${report.manifest.valid ? 'valid' : 'INVALID'}${report.manifest.declared_level ? ` (declares ${report.manifest.declared_level})` : ''}`,
          ...report.manifest.findings.map(
            (finding) => `  ${finding.level.toUpperCase()}: ${finding.message}`,
          ),
          `vectors: ${report.vectors.passed} passed, ${report.vectors.failed} failed`,
          ...caseLines(report.vectors.cases.filter((result) => !result.passed)).map((line) => `  ${line}`),
          ...report.level.assessments.map(
            (level) => `${level.name}: ${level.met ? 'met' : `not met (${level.reasons.join('; ')})`}`,
          ),
          `level met: ${report.level.name ?? 'none'}`,
        ];
        if (report.claims.not_implemented_by_engine.length > 0) {
          lines.push(`claimed but not implemented: ${report.claims.not_implemented_by_engine.join(', ')}`);
        }
        if (report.claims.vectors_listed_but_not_passing.length > 0) {
          lines.push(
            `listed as validated but not passing: ${report.claims.vectors_listed_but_not_passing.join(', ')}`,
          );
        }
        if (options.output !== undefined) lines.push(`report written to ${options.output}`);
        return {
          exitCode: report.ok ? EXIT.ok : EXIT.checkFailed,
          human: lines.join('\n'),
          json: report,
        };
      }),
    );
};

export const registerListVectors: Registrar = (program, invocation) => {
  program
    .command('list-vectors')
    .description('list the vector folders and their cases (main, positive, negative)')
    .option('--dir <dir>', 'vectors root (default: the bundled vectors)')
    .action(
      runs(invocation, async ({ io }, options: { dir?: string }) => {
        const root = options.dir === undefined ? BUNDLED_VECTORS_DIR : resolve(io.cwd, options.dir);
        const folders = [];
        for (const folder of await listVectorFolders(root)) {
          const cases = await loadVectorFolder(root, folder);
          folders.push({
            folder,
            kinds: [...new Set(cases.map((vectorCase) => vectorCase.kind))],
            cases: cases.map((vectorCase) => ({
              id: vectorCase.id,
              kind: vectorCase.kind,
              expect: vectorCase.expect,
            })),
          });
        }
        const human = folders
          .map((entry) => `${entry.folder} (${entry.kinds.join(', ')}; ${entry.cases.length} cases)`)
          .join('\n');
        return { exitCode: EXIT.ok, human, json: { root, folders } };
      }),
    );
};
