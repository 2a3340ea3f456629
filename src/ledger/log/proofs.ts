/**
 * Inclusion and consistency proofs per RFC 9162 §2.1.3 and §2.1.4: the
 * producers read O(log n) perfect-subtree hashes from a tree store, the
 * verifiers are pure functions of the proof, the leaf (or old root) and the
 * root(s) a checkpoint vouches for. Paths are ordered from the leaves up.
 */
import { nodeHash, type PerfectNodes, rangeHash, splitPoint } from './hashing.ts';

function checkSizes(what: string, m: number, n: number, strict: boolean): void {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || (strict ? m >= n : m > n)) {
    throw new RangeError(`${what}: ${m} is not ${strict ? 'below' : 'at most'} tree size ${n}`);
  }
}

/** PATH(m, D[0:n]): the audit path of leaf index m in a tree of n leaves. */
export function inclusionProof(nodes: PerfectNodes, m: number, n: number): Uint8Array[] {
  checkSizes('leaf index', m, n, true);
  const path: Uint8Array[] = [];
  const walk = (index: number, start: number, end: number): void => {
    const size = end - start;
    if (size === 1) return;
    const k = splitPoint(size);
    if (index < k) {
      walk(index, start, start + k);
      path.push(rangeHash(nodes, start + k, end));
    } else {
      walk(index - k, start + k, end);
      path.push(rangeHash(nodes, start, start + k));
    }
  };
  walk(m, 0, n);
  return path;
}

/** PROOF(m, D[0:n]): that the tree of m leaves is a prefix of the tree of n. Empty when m is 0 or n. */
export function consistencyProof(nodes: PerfectNodes, m: number, n: number): Uint8Array[] {
  checkSizes('old tree size', m, n, false);
  if (m === 0 || m === n) return [];
  const proof: Uint8Array[] = [];
  const sub = (size: number, start: number, end: number, whole: boolean): void => {
    if (size === end - start) {
      if (!whole) proof.push(rangeHash(nodes, start, end));
      return;
    }
    const k = splitPoint(end - start);
    if (size <= k) {
      sub(size, start, start + k, whole);
      proof.push(rangeHash(nodes, start + k, end));
    } else {
      sub(size - k, start + k, end, false);
      proof.push(rangeHash(nodes, start, start + k));
    }
  };
  sub(m, 0, n, true);
  return proof;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

/** RFC 9162 §2.1.3.2: whether `leafHashValue` is leaf `index` of the tree of `size` leaves with root `root`. */
export function verifyInclusion(
  leafHashValue: Uint8Array,
  index: number,
  size: number,
  path: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leafHashValue;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && same(r, root);
}

/** RFC 9162 §2.1.4.2: whether the tree of `oldSize` leaves with `oldRoot` is a prefix of the one of `newSize` with `newRoot`. */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  proof: readonly Uint8Array[],
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
): boolean {
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(newSize) || oldSize < 0 || oldSize > newSize) {
    return false;
  }
  if (oldSize === 0) return proof.length === 0;
  if (oldSize === newSize) return proof.length === 0 && same(oldRoot, newRoot);
  if (proof.length === 0) return false;
  const path = (oldSize & (oldSize - 1)) === 0 ? [oldRoot, ...proof] : [...proof];
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0] as Uint8Array;
  let sr = path[0] as Uint8Array;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && same(fr, oldRoot) && same(sr, newRoot);
}
