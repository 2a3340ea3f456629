import { isJsonObject } from '../canonical/json-value.ts';
import { METHOD_CATALOG } from '../provenance/catalog.ts';
import { CONTRACT_METHODS } from '../provenance/contracts.ts';
import { type CaseResult, evaluateCase } from './evaluate.ts';
import { assessLevels, type LevelResult } from './levels.ts';
import { type ManifestFinding, validateManifest } from './manifest.ts';
import { listVectorFolders, loadVectorFolder } from './vector-layout.ts';

export const ENGINE = { name: 'mcp-envelope', version: '0.1.0' } as const;

/**
 * What this engine implements: every catalog method has a contract check here
 * and a producing or verifying code path (see docs/ARCHITECTURE.md).
 */
export const ENGINE_IMPLEMENTS: ReadonlySet<string> = new Set(
  METHOD_CATALOG.methods.map((method) => method.id).filter((id) => CONTRACT_METHODS.includes(id)),
);

export interface VectorRun {
  root: string;
  folders: string[];
  cases: CaseResult[];
  passed: number;
  failed: number;
}

/** Runs the named vector folders (all when none are named) under `root`. */
export async function runVectors(root: string, folders?: readonly string[]): Promise<VectorRun> {
  const names = folders ?? (await listVectorFolders(root));
  const cases: CaseResult[] = [];
  for (const folder of names) {
    for (const vectorCase of await loadVectorFolder(root, folder)) cases.push(evaluateCase(vectorCase));
  }
  const passed = cases.filter((result) => result.passed).length;
  return { root, folders: [...names], cases, passed, failed: cases.length - passed };
}

export interface ConformanceReport {
  report: 'mcp-envelope.conformance-report@v0.1';
  spec_version: string;
  engine: typeof ENGINE;
  manifest: {
    engine: unknown;
    valid: boolean;
    findings: ManifestFinding[];
    declared_level: string | null;
  };
  claims: {
    implemented: string[];
    not_implemented_by_engine: string[];
    without_vectors: string[];
    vectors_listed_but_not_passing: string[];
  };
  vectors: { total: number; passed: number; failed: number; cases: CaseResult[] };
  level: LevelResult;
  ok: boolean;
}

/**
 * The conformance report for a capability manifest: validates it, runs the
 * vectors with this engine, and computes the level actually met. `ok` requires a
 * valid manifest, every vector case passing, every claimed method implemented,
 * and every vector the manifest lists as validated actually passing.
 */
export function buildConformanceReport(manifest: unknown, run: VectorRun): ConformanceReport {
  const findings = validateManifest(manifest);
  const object = isJsonObject(manifest) ? manifest : {};
  const claimed = new Set(
    [object.implements, object.optional].flatMap((list) =>
      Array.isArray(list) ? list.filter((id): id is string => typeof id === 'string') : [],
    ),
  );
  const foldersWithCases = new Set(run.cases.map((result) => result.folder));
  const passingIds = new Set(run.cases.filter((result) => result.passed).map((result) => result.id));
  const listed = Array.isArray(object.test_vectors_validated)
    ? object.test_vectors_validated.filter((id): id is string => typeof id === 'string')
    : [];
  const level = assessLevels(claimed, ENGINE_IMPLEMENTS, run.cases);
  const notImplemented = [...claimed].filter((id) => !ENGINE_IMPLEMENTS.has(id)).sort();
  const overclaimed = listed.filter((id) => !passingIds.has(id)).sort();
  const valid = !findings.some((finding) => finding.level === 'error');
  return {
    report: 'mcp-envelope.conformance-report@v0.1',
    spec_version: METHOD_CATALOG.spec_version,
    engine: ENGINE,
    manifest: {
      engine: object.engine ?? null,
      valid,
      findings,
      declared_level: typeof object.conformance_level === 'string' ? object.conformance_level : null,
    },
    claims: {
      implemented: [...claimed].filter((id) => ENGINE_IMPLEMENTS.has(id)).sort(),
      not_implemented_by_engine: notImplemented,
      without_vectors: [...claimed].filter((id) => !foldersWithCases.has(id)).sort(),
      vectors_listed_but_not_passing: overclaimed,
    },
    vectors: { total: run.cases.length, passed: run.passed, failed: run.failed, cases: run.cases },
    level,
    ok: valid && run.failed === 0 && notImplemented.length === 0 && overclaimed.length === 0,
  };
}
