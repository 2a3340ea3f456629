export { type CaseResult, evaluateCase, MAIN_CASE_FOLDERS } from './evaluate.ts';
export { assessLevels, LEVELS, type LevelAssessment, type LevelResult, type LevelSpec } from './levels.ts';
export { type Manifest, type ManifestFinding, validateManifest } from './manifest.ts';
export {
  buildConformanceReport,
  type ConformanceReport,
  ENGINE,
  ENGINE_IMPLEMENTS,
  runVectors,
  type VectorRun,
} from './report.ts';
export {
  BUNDLED_VECTORS_DIR,
  listVectorFolders,
  loadVectorFolder,
  type VectorCase,
} from './vector-layout.ts';
