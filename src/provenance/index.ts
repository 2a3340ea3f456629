/**
 * mcp-envelope/provenance: build, attach, sign and verify `prov.record.v0.1`
 * records, alone or as DSSE envelopes and in-toto statements; the method catalog and its contracts; lineage. Confined artifact
 * reads are what `verify` does with `artifactsDir`, so that class stays internal.
 */
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
  type MethodCatalog,
  type MethodCheckOptions,
  type MethodEntry,
  type MethodFinding,
} from './catalog.ts';
export { type ContractContext, type ContractFinding, checkContracts } from './contracts.ts';
export {
  DSSE_RECORD_PAYLOAD_TYPE,
  type DsseEnvelope,
  type DsseKeyResult,
  type DsseSignature,
  type DsseSigner,
  type DsseVerification,
  dssePae,
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
  type InTotoStatement,
  type InTotoSubject,
  inTotoStatement,
  inTotoSubjects,
  MAX_DSSE_SIGNATURES,
  PROV_RECORD_PREDICATE_TYPE,
  parseDsseEnvelope,
  recordPayload,
  signDsse,
  signInTotoStatement,
  signRecordDsse,
  verifyDsse,
} from './dsse.ts';
export {
  attachRecordDigest,
  checkRecordDigest,
  checkSignature,
  computeRecordDigest,
  generateSigningKeyPair,
  type KeyPairPem,
  keyIdFor,
  loadPrivateKey,
  loadPublicKey,
  type RecordDigestCheck,
  type SignatureCheck,
  signRecord,
} from './integrity.ts';
export { type LineageEdge, LineageGraph, type LineageReport } from './lineage.ts';
export {
  type Artifact,
  type ArtifactContent,
  type ArtifactSpec,
  buildArtifact,
  type Evidence,
  METHODS,
  type ProvRecord,
  RECORD_V01,
  RecordBuilder,
  type RecordBuilderOptions,
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
