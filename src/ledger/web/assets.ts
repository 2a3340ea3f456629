import type { ServerResponse } from 'node:http';

/**
 * The viewer's script assets (the in-browser verifier and the modules it
 * imports), by URL name under /ledger/assets/. None yet: every name is
 * answered 404 by the caller.
 */
export function serveLedgerAsset(_res: ServerResponse, _name: string): boolean {
  return false;
}
