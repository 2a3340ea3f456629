/**
 * mcp-envelope/conformance: run prov-spec vectors, check capability manifests,
 * assess levels, build the conformance report. The engine's own identity and
 * method set stay internal: `buildConformanceReport` applies them.
 */
export { type CaseResult, evaluateCase } from './evaluate.ts';
export { assessLevels, LEVELS, type LevelAssessment, type LevelResult, type LevelSpec } from './levels.ts';
export { type Manifest, type ManifestFinding, validateManifest } from './manifest.ts';
export { buildConformanceReport, type ConformanceReport, runVectors, type VectorRun } from './report.ts';
export {
  BUNDLED_VECTORS_DIR,
  listVectorFolders,
  loadVectorFolder,
  type VectorCase,
} from './vector-layout.ts';
