/**
 * The run proof the record page verifies, as GET /ledger/api/runs/<run_id>
 * answers it (src/ledger/web/proof.ts), straight from a ledger file, for
 * tests of the browser checks that need no server.
 */
import type { KeyObject } from 'node:crypto';
import type { Ledger } from '../../src/ledger/index.ts';
import type { RunProof } from '../../src/ledger/web/browser/checks.ts';
import { proofData } from '../../src/ledger/web/proof.ts';

/** The proof of `runId`, naming `publicKey` as the server's key (none: no keys). */
export function runProof(ledger: Ledger, runId: string, publicKey?: KeyObject): RunProof {
  return proofData(ledger, runId, publicKey);
}
