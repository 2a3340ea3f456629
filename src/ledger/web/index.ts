/**
 * The ledger viewer: server-rendered pages over a Ledger (runs, a record,
 * its lineage) and the proof data a browser verifies a record with, behind
 * one request handler that the gateway and `ledger serve` both mount.
 */
export {
  createLedgerWeb,
  isLedgerPath,
  LEDGER_PREFIX,
  type LedgerWeb,
  type LedgerWebAuth,
  type LedgerWebOptions,
} from './handler.ts';
export { escapeHtml, SECURITY_HEADERS, STYLESHEET_PATH } from './html.ts';
export { type RunRow, recentRuns } from './runs.ts';
export { sendStylesheet } from './stylesheet.ts';
