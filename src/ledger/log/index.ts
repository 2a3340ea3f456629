/**
 * The ledger's transparency log: RFC 9162 Merkle tree hashing (hashing.ts),
 * its storage in the ledger file (tree.ts), the leaf bytes (leaf.ts),
 * inclusion and consistency proofs (proofs.ts), C2SP signed checkpoints
 * (checkpoint.ts), the audit of rows against the log (audit.ts) and the proof
 * files the CLI prints (proof-file.ts).
 */
export { auditEntries, auditLog, type CheckpointCheck, type LogAudit, type LogProblem } from './audit.ts';
export {
  type Checkpoint,
  checkpointSignedBy,
  defaultOrigin,
  ledgerId,
  noteKeyId,
  parseCheckpoint,
  signCheckpoint,
  storedCheckpoints,
  writeCheckpoint,
} from './checkpoint.ts';
export { emptyRoot, leafHash, MemoryTree, nodeHash, treeRoot } from './hashing.ts';
export { LEAF_TYPE, leafBytes, leafObject } from './leaf.ts';
export {
  type ConsistencyProofFile,
  type InclusionProofFile,
  latestCheckpoint,
  proveConsistency,
  proveInclusion,
} from './proof-file.ts';
export { consistencyProof, inclusionProof, verifyConsistency, verifyInclusion } from './proofs.ts';
export { TreeStore } from './tree.ts';
