/**
 * The proof data a browser verifies a record with, needing nothing else from
 * the server: the exact leaf bytes the log hashed, the envelope text whose
 * digest the leaf names, the latest signed checkpoint, the inclusion path of
 * the leaf in it, and the public keys the server believes in (which the
 * browser may replace with one the person trusts).
 */
import type { KeyObject } from 'node:crypto';
import { canonicalize } from '../../canonical/index.ts';
import { keyIdFor } from '../../provenance/integrity.ts';
import { noteKeyId, rawPublicKey } from '../log/checkpoint.ts';
import type { Ledger } from '../store.ts';
import { inclusionOf, latestCheckpoint } from './checks.ts';
import { entriesFor } from './record-page.ts';

export interface ProofKey {
  purpose: 'record' | 'checkpoint';
  /** Records: the signature's key id (`ed25519:…`); checkpoints: the signed note's 4-byte key id, hex. */
  key_id: string;
  /** The raw 32-byte Ed25519 public key, base64. */
  public_key: string;
}

export interface ProofData {
  run_id: string;
  leaf_index: number | null;
  leaf: string | null;
  envelope_text: string | null;
  checkpoint: string | null;
  inclusion: { tree_size: number; hashes: string[] } | null;
  keys: ProofKey[];
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

export function proofData(ledger: Ledger, key: string, publicKey: KeyObject | undefined): ProofData {
  const entry = entriesFor(ledger, key).at(-1);
  if (entry === undefined) throw new Error('unreachable: entriesFor returns at least one entry');
  const latest = latestCheckpoint(ledger, publicKey);
  const inclusion = inclusionOf(ledger, entry, latest);
  const keys: ProofKey[] = [];
  if (publicKey) {
    const raw = b64(rawPublicKey(publicKey));
    keys.push({ purpose: 'record', key_id: keyIdFor(publicKey), public_key: raw });
    if (latest) {
      keys.push({
        purpose: 'checkpoint',
        key_id: noteKeyId(latest.checkpoint.origin, publicKey).toString('hex'),
        public_key: raw,
      });
    }
  }
  return {
    run_id: entry.run_id,
    leaf_index: inclusion.index ?? null,
    leaf: inclusion.leaf === undefined ? null : b64(inclusion.leaf),
    // The stored envelope is canonical JSON: its canonical text is the one the leaf's digest covers.
    envelope_text: entry.envelope === null ? null : canonicalize(entry.envelope),
    checkpoint: latest ? latest.checkpoint.text : null,
    inclusion:
      latest && inclusion.path
        ? { tree_size: latest.checkpoint.size, hashes: inclusion.path.map(b64) }
        : null,
    keys,
  };
}
