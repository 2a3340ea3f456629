/**
 * mcp-envelope/ledger: the SQLite store of provenance records (node:sqlite,
 * so it is kept off the package root) and its verification. Migrations are
 * applied when a file is opened for writing, never called from outside.
 */

export { type BundleReport, buildBundle, type ResultBundle, verifyBundle } from './bundle.ts';
export {
  auditEntries,
  auditLog,
  type Checkpoint,
  type ConsistencyProofFile,
  checkpointSignedBy,
  type InclusionProofFile,
  type LogAudit,
  latestCheckpoint,
  leafHash,
  parseCheckpoint,
  proveConsistency,
  proveInclusion,
  verifyConsistency,
  verifyInclusion,
  writeCheckpoint,
} from './log/index.ts';
export {
  type InsertMeta,
  type InsertResult,
  LEDGER_SCHEMA_VERSION,
  Ledger,
  type LedgerEntry,
  type ListFilter,
  type OpenOptions,
} from './store.ts';
export { type LedgerEntryReport, type LedgerVerifyReport, verifyEntry, verifyLedger } from './verify.ts';
