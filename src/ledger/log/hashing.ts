/**
 * RFC 9162 (Certificate Transparency 2.0, §2.1.1) Merkle tree hashing with
 * SHA-256: a leaf's hash is SHA-256(0x00 || leaf bytes), an interior node's
 * SHA-256(0x01 || left || right), and the hash of n leaves (MTH) splits at
 * the largest power of two below n, so a tree whose size is not a power of two
 * is a run of perfect subtrees, largest first, folded from the right.
 */
import { createHash, hash } from 'node:crypto';

export const HASH_SIZE = 32;

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

export function leafHash(leaf: Uint8Array): Buffer {
  return hash('sha256', Buffer.concat([LEAF_PREFIX, leaf]), 'buffer');
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return hash('sha256', Buffer.concat([NODE_PREFIX, left, right]), 'buffer');
}

/** The hash of the empty tree: SHA-256 of nothing. */
export function emptyRoot(): Buffer {
  return createHash('sha256').digest();
}

/** The largest power of two strictly below n (n >= 2). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * Where a tree's hashes come from: the hash of the perfect subtree holding
 * leaves [index * 2^level, (index + 1) * 2^level). Only complete subtrees are
 * asked for.
 */
export interface PerfectNodes {
  node(level: number, index: number): Uint8Array;
}

/**
 * MTH(D[start:end]) for the ranges the RFC's recursion produces (start is a
 * multiple of the largest power of two not above end - start): O(log n) node
 * reads.
 */
export function rangeHash(nodes: PerfectNodes, start: number, end: number): Uint8Array {
  const size = end - start;
  if (size <= 0) throw new RangeError(`empty range [${start}, ${end})`);
  if ((size & (size - 1)) === 0 && start % size === 0) {
    const level = Math.log2(size);
    return nodes.node(level, start / size);
  }
  const k = splitPoint(size);
  return nodeHash(rangeHash(nodes, start, start + k), rangeHash(nodes, start + k, end));
}

/** The root of a tree of `size` leaves (the empty tree's too). */
export function treeRoot(nodes: PerfectNodes, size: number): Uint8Array {
  return size === 0 ? emptyRoot() : rangeHash(nodes, 0, size);
}

/** Perfect subtree hashes over leaf hashes held in memory (every level built once: O(n)). */
export class MemoryTree implements PerfectNodes {
  private readonly levels: Uint8Array[][];

  constructor(leafHashes: readonly Uint8Array[]) {
    this.levels = [[...leafHashes]];
    for (let level = 0; ; level++) {
      const below = this.levels[level] as Uint8Array[];
      if (below.length < 2) break;
      const above: Uint8Array[] = [];
      for (let i = 0; i + 1 < below.length; i += 2) {
        above.push(nodeHash(below[i] as Uint8Array, below[i + 1] as Uint8Array));
      }
      this.levels.push(above);
    }
  }

  get size(): number {
    return (this.levels[0] as Uint8Array[]).length;
  }

  node(level: number, index: number): Uint8Array {
    const hash = this.levels[level]?.[index];
    if (hash === undefined) throw new RangeError(`no complete subtree at level ${level}, index ${index}`);
    return hash;
  }

  root(size: number = this.size): Uint8Array {
    return treeRoot(this, size);
  }
}
