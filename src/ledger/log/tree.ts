/**
 * The log's storage in the ledger file: leaf i (from 0) is the row with
 * seq = i + 1 of `records`, whose `leaf` column holds the leaf's exact bytes
 * and whose `nodes` column the hashes of the perfect subtrees that leaf
 * completes, lowest first: its own leaf hash (level 0), then, while the index
 * below is odd, the node joining the subtree to its left. Node (level l,
 * index k), covering leaves k·2^l … (k+1)·2^l − 1, is completed by leaf
 * j = (k+1)·2^l − 1 and is bytes [32·l, 32·l + 32) of row j + 1's `nodes`.
 *
 * So an append is one row insert (the same page writes as a ledger without a
 * log); its siblings come from the writer's `RightEdge` (read once from the
 * rows, log2 n of them, then kept); a root, or any subtree hash a proof needs,
 * reads O(log n) rows by primary key. Callers compute the next leaf's nodes
 * from the edge and store them with its row in one transaction.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { HASH_SIZE, leafHash, nodeHash, type PerfectNodes, treeRoot } from './hashing.ts';

/** What the next leaf's row stores besides the leaf: where it goes and the subtree hashes it completes. */
export interface NextLeaf {
  /** Its leaf index; its row is seq = index + 1. */
  index: number;
  nodes: Buffer;
}

/** Hashes of the perfect subtrees completed by the leaf at `index` whose hash is `hash`. */
export function completedNodes(
  index: number,
  hash: Uint8Array,
  sibling: (level: number, at: number) => Uint8Array,
): Buffer {
  const hashes: Uint8Array[] = [hash];
  let level = 0;
  let at = index;
  let current = hash;
  while (at % 2 === 1) {
    current = nodeHash(sibling(level, at - 1), current);
    hashes.push(current);
    level++;
    at = (at - 1) / 2;
  }
  return Buffer.concat(hashes);
}

/**
 * The log's right edge, kept by its one writer between appends so an append
 * reads nothing: the size, and at each level the last perfect subtree
 * completed there, which is the left sibling the next leaf joins at that level
 * (the subtree completed most recently at a level is the one just left of
 * where the next one grows).
 */
export class RightEdge {
  size: number;
  readonly #lastAtLevel: Uint8Array[];

  constructor(size: number, lastAtLevel: Uint8Array[]) {
    this.size = size;
    this.#lastAtLevel = lastAtLevel;
  }

  /** Where the next leaf goes and the subtree hashes it completes (the edge is unchanged until `advance`). */
  next(leaf: Uint8Array): NextLeaf {
    const index = this.size;
    const nodes = completedNodes(index, leafHash(leaf), (level) => {
      const sibling = this.#lastAtLevel[level];
      if (sibling === undefined) throw new RangeError(`log node (level ${level}) is missing from the edge`);
      return sibling;
    });
    return { index, nodes };
  }

  /** Takes in a leaf once its row is stored: `next` must have been computed from this edge. */
  advance(next: NextLeaf): void {
    if (next.index !== this.size)
      throw new RangeError(`leaf ${next.index} does not follow a log of ${this.size}`);
    for (let level = 0; level * HASH_SIZE < next.nodes.length; level++)
      this.#lastAtLevel[level] = next.nodes.subarray(level * HASH_SIZE, (level + 1) * HASH_SIZE);
    this.size++;
  }
}

export class TreeStore implements PerfectNodes {
  private readonly db: DatabaseSync;
  private statements: Record<string, StatementSync> = {};

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  private statement(sql: string): StatementSync {
    let statement = this.statements[sql];
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements[sql] = statement;
    }
    return statement;
  }

  /** The number of leaves: the last row's seq (rows are never deleted, so seq runs 1…n). */
  size(): number {
    const row = this.statement('SELECT max(seq) AS last FROM records').get() as { last: number | null };
    return row.last === null ? 0 : Number(row.last);
  }

  /** The right edge as stored: one read per level (log2 of the size), once per writer. */
  edge(): RightEdge {
    const size = this.size();
    const lastAtLevel: Uint8Array[] = [];
    for (let level = 0; 2 ** level <= size; level++)
      lastAtLevel.push(this.node(level, Math.floor(size / 2 ** level) - 1));
    return new RightEdge(size, lastAtLevel);
  }

  node(level: number, index: number): Uint8Array {
    const completedBy = (index + 1) * 2 ** level - 1;
    const row = this.statement('SELECT nodes FROM records WHERE seq = ?').get(completedBy + 1) as
      | { nodes: Uint8Array | null }
      | undefined;
    const start = level * HASH_SIZE;
    if (row?.nodes == null || row.nodes.length < start + HASH_SIZE) {
      throw new RangeError(`log node (level ${level}, index ${index}) is missing`);
    }
    return row.nodes.subarray(start, start + HASH_SIZE);
  }

  root(size: number = this.size()): Uint8Array {
    return treeRoot(this, size);
  }

  /** The leaf at `index`, from the row it is stored in. */
  leaf(index: number): { seq: number; leaf: Uint8Array } | undefined {
    const row = this.statement('SELECT leaf FROM records WHERE seq = ?').get(index + 1) as
      | { leaf: Uint8Array | null }
      | undefined;
    return row?.leaf == null ? undefined : { seq: index + 1, leaf: row.leaf };
  }

  /** The leaf index of row `seq`. */
  indexOf(seq: number): number {
    return seq - 1;
  }

  /** Every stored leaf in log order (a row without one is skipped: the audit names the gap). */
  *leaves(): Generator<{ index: number; seq: number; leaf: Uint8Array }> {
    for (const row of this.db
      .prepare('SELECT seq, leaf FROM records WHERE leaf IS NOT NULL ORDER BY seq')
      .iterate()) {
      const { seq, leaf } = row as { seq: number; leaf: Uint8Array };
      yield { index: Number(seq) - 1, seq: Number(seq), leaf };
    }
  }
}
