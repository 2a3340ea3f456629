/**
 * The log's storage in the ledger file: `log_leaves(idx, seq, leaf)` holds
 * each entry's leaf bytes in log order, `log_nodes(pos, hash)` the hash of
 * every perfect subtree as it completes (leaf hashes included), numbered in
 * post-order: appending leaf j first stores its hash at 2j - popcount(j), then
 * the l-th subtree it completes at the next positions, so node (level l,
 * index k), completed by leaf j = (k + 1) * 2^l - 1, is at 2j - popcount(j) + l.
 * Both tables grow only at their end, so an append writes to the last page of
 * each: the leaf, its hash and the subtrees it completes (one on average,
 * log2 n at most), reading one left sibling per completed level; a root or a
 * proof reads O(log n) nodes. Callers append inside the transaction that
 * stores the row the leaf stands for.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { leafHash, nodeHash, type PerfectNodes, treeRoot } from './hashing.ts';

function popcount(n: number): number {
  let count = 0;
  for (let rest = n; rest > 0; rest = Math.floor(rest / 2)) count += rest % 2;
  return count;
}

/** Where node (level, index) is in log_nodes. */
export function nodePosition(level: number, index: number): number {
  const last = (index + 1) * 2 ** level - 1;
  return 2 * last - popcount(last) + level;
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

  /** The number of leaves. */
  size(): number {
    const row = this.statement('SELECT max(idx) AS last FROM log_leaves').get() as { last: number | null };
    return row.last === null ? 0 : Number(row.last) + 1;
  }

  /** Appends one leaf (for the row `seq`); returns its index. */
  append(seq: number, leaf: Uint8Array): number {
    const index = this.size();
    this.statement('INSERT INTO log_leaves (idx, seq, leaf) VALUES (?, ?, ?)').run(index, seq, leaf);
    const insertNode = this.statement('INSERT INTO log_nodes (pos, hash) VALUES (?, ?)');
    let pos = nodePosition(0, index);
    let hash: Uint8Array = leafHash(leaf);
    insertNode.run(pos, hash);
    let level = 0;
    let at = index;
    while (at % 2 === 1) {
      hash = nodeHash(this.node(level, at - 1), hash);
      level++;
      at = (at - 1) / 2;
      pos++;
      insertNode.run(pos, hash);
    }
    return index;
  }

  node(level: number, index: number): Uint8Array {
    const row = this.statement('SELECT hash FROM log_nodes WHERE pos = ?').get(nodePosition(level, index)) as
      | { hash: Uint8Array }
      | undefined;
    if (row === undefined) throw new RangeError(`log node (level ${level}, index ${index}) is missing`);
    return row.hash;
  }

  root(size: number = this.size()): Uint8Array {
    return treeRoot(this, size);
  }

  /** The leaf at `index`, with the row it stands for. */
  leaf(index: number): { seq: number; leaf: Uint8Array } | undefined {
    const row = this.statement('SELECT seq, leaf FROM log_leaves WHERE idx = ?').get(index) as
      | { seq: number; leaf: Uint8Array }
      | undefined;
    return row === undefined ? undefined : { seq: Number(row.seq), leaf: row.leaf };
  }

  /** The leaf index of row `seq`. */
  indexOf(seq: number): number | undefined {
    // Rows are never deleted, so leaf idx is seq - 1; a ledger where that fails is searched.
    const likely = this.statement('SELECT idx FROM log_leaves WHERE idx = ? AND seq = ?').get(seq - 1, seq) as
      | { idx: number }
      | undefined;
    const row =
      likely ??
      (this.statement('SELECT idx FROM log_leaves WHERE seq = ?').get(seq) as { idx: number } | undefined);
    return row === undefined ? undefined : Number(row.idx);
  }

  /** Every leaf in log order. */
  *leaves(): Generator<{ index: number; seq: number; leaf: Uint8Array }> {
    for (const row of this.db.prepare('SELECT idx, seq, leaf FROM log_leaves ORDER BY idx').iterate()) {
      const { idx, seq, leaf } = row as { idx: number; seq: number; leaf: Uint8Array };
      yield { index: Number(idx), seq: Number(seq), leaf };
    }
  }
}
