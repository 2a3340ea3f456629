export { MIGRATIONS } from './migrations.ts';
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
