import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { verifyMerkleInclusion } from '@sigstore/verify/dist/tlog/merkle.js';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../src/ledger/index.ts';
import { leafHash, MemoryTree, nodeHash } from '../../../src/ledger/log/hashing.ts';
import {
  consistencyProof,
  inclusionProof,
  verifyConsistency,
  verifyInclusion,
} from '../../../src/ledger/log/proofs.ts';
import type { TreeStore } from '../../../src/ledger/log/tree.ts';

/** RFC 9162 §2.1.1's MTH, §2.1.3.1's PATH and §2.1.4.1's PROOF, written as the RFC states them. */
const sha = (...parts: Uint8Array[]) => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};
const split = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1);
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha();
  if (leaves.length === 1) return sha(Buffer.from([0]), leaves[0] as Buffer);
  const k = split(leaves.length);
  return sha(Buffer.from([1]), mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}
function path(m: number, leaves: Buffer[]): Buffer[] {
  if (leaves.length === 1) return [];
  const k = split(leaves.length);
  return m < k
    ? [...path(m, leaves.slice(0, k)), mth(leaves.slice(k))]
    : [...path(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}
function subproof(m: number, leaves: Buffer[], whole: boolean): Buffer[] {
  const n = leaves.length;
  if (m === n) return whole ? [] : [mth(leaves)];
  const k = split(n);
  return m <= k
    ? [...subproof(m, leaves.slice(0, k), whole), mth(leaves.slice(k))]
    : [...subproof(m - k, leaves.slice(k), false), mth(leaves.slice(0, k))];
}

const hex = (values: readonly Uint8Array[]) => values.map((value) => Buffer.from(value).toString('hex'));

/** Stores a leaf as the ledger does: in the next row, with the subtree hashes it completes. */
function appendLeaf(db: DatabaseSync, store: TreeStore, leaf: Uint8Array): void {
  // The edge read afresh from the stored rows each time: one append's nodes come from the rows before.
  const { index, nodes } = store.edge().next(leaf);
  db.prepare(
    `INSERT INTO records (seq, run_id, tool, record_digest, created_at, leaf, nodes)
     VALUES (?, 'run', 'tool', ?, 'now', ?, ?)`,
  ).run(index + 1, String(index), leaf, nodes);
}

function random(n: number): number {
  return Math.floor(Math.random() * n);
}

describe('RFC 9162 Merkle tree', () => {
  const leaves = Array.from({ length: 300 }, (_, i) => randomBytes(1 + (i % 40)));
  const memory = new MemoryTree(leaves.map(leafHash));
  const dir = mkdtempSync(join(tmpdir(), 'log-tree-'));
  const ledger = Ledger.open(join(dir, 'l.sqlite'));
  afterAll(() => {
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const db = ledger.database();
  const store = ledger.log();
  for (const leaf of leaves) appendLeaf(db, store, leaf);

  it('hashes leaves and nodes with the RFC prefixes', () => {
    expect(leafHash(Buffer.from('a'))).toEqual(sha(Buffer.from([0]), Buffer.from('a')));
    expect(nodeHash(Buffer.from('l'), Buffer.from('r'))).toEqual(sha(Buffer.from('\x01lr', 'latin1')));
  });

  it('has the naive MTH as its root for every size 0..300, in memory and stored', () => {
    expect(store.size()).toBe(300);
    for (let n = 0; n <= 300; n++) {
      const expected = mth(leaves.slice(0, n)).toString('hex');
      expect(Buffer.from(memory.root(n)).toString('hex')).toBe(expected);
      expect(Buffer.from(store.root(n)).toString('hex')).toBe(expected);
    }
  });

  it('stores O(n) nodes: every perfect subtree once', () => {
    const nodes = Number(
      (db.prepare('SELECT sum(length(nodes)) / 32 AS n FROM records').get() as { n: number }).n,
    );
    expect(nodes).toBe(2 * 300 - [...(300).toString(2)].filter((bit) => bit === '1').length);
  });

  it('produces the RFC inclusion proofs, which verify (and fail for any other leaf, index or root)', () => {
    for (let trial = 0; trial < 400; trial++) {
      const n = 1 + random(300);
      const m = random(n);
      const proof = inclusionProof(store, m, n);
      expect(hex(proof)).toEqual(hex(path(m, leaves.slice(0, n))));
      const root = store.root(n);
      expect(verifyInclusion(leafHash(leaves[m] as Buffer), m, n, proof, root)).toBe(true);
      expect(verifyInclusion(leafHash(Buffer.from('other')), m, n, proof, root)).toBe(false);
      if (n > 1)
        expect(verifyInclusion(leafHash(leaves[m] as Buffer), (m + 1) % n, n, proof, root)).toBe(false);
      expect(verifyInclusion(leafHash(leaves[m] as Buffer), m, n, proof, sha(Buffer.from('x')))).toBe(false);
    }
  });

  it('agrees with @sigstore/verify’s RFC 6962 inclusion verifier', () => {
    for (let trial = 0; trial < 200; trial++) {
      const n = 1 + random(300);
      const m = random(n);
      const entry = {
        canonicalizedBody: leaves[m],
        inclusionProof: {
          logIndex: String(m),
          hashes: inclusionProof(store, m, n).map((h) => Buffer.from(h)),
        },
      };
      const checkpoint = { logSize: BigInt(n), logHash: Buffer.from(store.root(n)) };
      // biome-ignore lint/suspicious/noExplicitAny: the verifier's own entry type is a protobuf shape
      expect(() => verifyMerkleInclusion(entry as any, checkpoint as any)).not.toThrow();
      const wrong = { ...entry, canonicalizedBody: Buffer.from('not the leaf') };
      // biome-ignore lint/suspicious/noExplicitAny: as above
      expect(() => verifyMerkleInclusion(wrong as any, checkpoint as any)).toThrow(/root hash/);
    }
  });

  it('produces the RFC consistency proofs, which verify (and fail for a forked or altered old tree)', () => {
    for (let trial = 0; trial < 400; trial++) {
      const n = 1 + random(300);
      const m = 1 + random(n);
      const proof = consistencyProof(store, m, n);
      expect(hex(proof)).toEqual(hex(m === n ? [] : subproof(m, leaves.slice(0, n), true)));
      const oldRoot = store.root(m);
      const newRoot = store.root(n);
      expect(verifyConsistency(m, n, proof, oldRoot, newRoot)).toBe(true);
      const forked = new MemoryTree([...leaves.slice(0, m - 1).map(leafHash), leafHash(Buffer.from('fork'))]);
      expect(verifyConsistency(m, n, proof, forked.root(), newRoot)).toBe(false);
      if (m < n) {
        expect(verifyConsistency(m, n, proof, oldRoot, sha(Buffer.from('y')))).toBe(false);
        expect(verifyConsistency(m, n, proof.slice(1), oldRoot, newRoot)).toBe(false);
      }
    }
  });
});
