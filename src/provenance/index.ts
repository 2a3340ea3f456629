export { ArtifactFolder, type ArtifactLookup } from './artifact-folder.ts';
export {
  attachRecord,
  buildCallRecord,
  type CallControls,
  type CallRecordSubject,
  DEFAULT_CONTROLS,
  type InputArtifact,
  readCallControls,
} from './attach.ts';
export {
  checkMethodId,
  checkMethodIds,
  lookupMethod,
  METHOD_CATALOG,
  METHOD_ID_PATTERN,
  type MethodCatalog,
  type MethodEntry,
  type MethodFinding,
} from './catalog.ts';
export { CONTRACT_METHODS, type ContractFinding, checkContracts } from './contracts.ts';
export {
  attachRecordDigest,
  checkRecordDigest,
  checkSignature,
  computeRecordDigest,
  generateSigningKeyPair,
  keyIdFor,
  loadPrivateKey,
  loadPublicKey,
  SIGNATURE_ALG,
  signRecord,
} from './integrity.ts';
export { type LineageEdge, LineageGraph, type LineageReport } from './lineage.ts';
export {
  type Artifact,
  type ArtifactContent,
  type ArtifactSpec,
  buildArtifact,
  digestMethod,
  type Evidence,
  METHODS,
  type ProvRecord,
  RECORD_V01,
  RecordBuilder,
} from './record.ts';
export {
  type CheckStatus,
  type CoverageItem,
  type CoverageStatus,
  type CoverageTally,
  describeCoverage,
  type VerifyCheck,
  type VerifyCoverage,
  type VerifyOptions,
  type VerifyReport,
  type VerifyVerdict,
  verdictLine,
  verify,
} from './verify.ts';
