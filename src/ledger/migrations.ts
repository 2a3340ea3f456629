import type { DatabaseSync } from 'node:sqlite';
import { parseJsonLossless } from '../canonical/index.ts';
import type { ProvRecord } from '../provenance/record.ts';
import { leafHash } from './log/hashing.ts';
import { leafBytes } from './log/leaf.ts';
import { completedNodes } from './log/tree.ts';
import type { StoredRow } from './store.ts';

/**
 * The ledger's schema, one SQL script per version: migration N takes a file
 * from user_version N-1 to N. Append only; never edit a released step.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: records in storage order (rowids are never reused: rows are never deleted), unique by record digest.
  `CREATE TABLE records (
     seq INTEGER PRIMARY KEY,
     run_id TEXT NOT NULL,
     tool TEXT NOT NULL,
     upstream TEXT,
     record_digest TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     record TEXT NOT NULL,
     envelope TEXT
   ) STRICT;
   CREATE INDEX records_run_id ON records (run_id);
   CREATE INDEX records_tool ON records (tool, seq);
   CREATE INDEX records_upstream ON records (upstream, seq);`,
  // 2: the transparency log: one leaf per row in log order, the hash of every perfect subtree,
  // the checkpoints written, and the ledger's stable id (the default checkpoint origin's).
  // Both log tables only ever grow at their end (log_nodes in post-order, see log/tree.ts), so an
  // append touches the last page of each; seq is not indexed (it is idx + 1 unless rows were lost).
  `CREATE TABLE log_leaves (
     idx INTEGER PRIMARY KEY,
     seq INTEGER NOT NULL,
     leaf BLOB NOT NULL
   ) STRICT;
   CREATE TABLE log_nodes (
     pos INTEGER PRIMARY KEY,
     hash BLOB NOT NULL
   ) STRICT;
   CREATE TABLE log_checkpoints (
     id INTEGER PRIMARY KEY,
     origin TEXT NOT NULL,
     tree_size INTEGER NOT NULL,
     root_hash BLOB NOT NULL,
     created_at TEXT NOT NULL,
     note TEXT NOT NULL
   ) STRICT;
   CREATE TABLE log_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
   INSERT INTO log_meta (key, value) VALUES ('ledger_id', lower(hex(randomblob(16))));`,
  // 3: each row holds its own leaf and the subtree hashes that leaf completes (log/tree.ts), so an
  // append is one row insert; the record is read from the leaf rather than stored a second time.
  // The code step moves the leaves and computes the nodes; then the old tables and column go.
  `ALTER TABLE records ADD COLUMN leaf BLOB;
   ALTER TABLE records ADD COLUMN nodes BLOB;`,
];

/**
 * Steps SQL cannot take, run after migration N's script in its transaction:
 * 2 builds the leaves of the rows a version-1 ledger holds, in seq order (the
 * subtree hashes are left to 3, which computes them from the leaves); 3 moves
 * each leaf into its row with the subtree hashes it completes, then drops the
 * log's old tables and the record column (the leaf holds the record).
 */
export const MIGRATION_CODE: Readonly<Record<number, (db: DatabaseSync) => void>> = {
  2: (db) => {
    const insert = db.prepare('INSERT INTO log_leaves (idx, seq, leaf) VALUES (?, ?, ?)');
    let index = 0;
    for (const row of db.prepare('SELECT * FROM records ORDER BY seq').iterate()) {
      const r = row as unknown as StoredRow & { record: string };
      const leaf = leafBytes({
        index,
        run_id: r.run_id,
        tool: r.tool,
        upstream: r.upstream,
        principal: null,
        created_at: r.created_at,
        record_digest: r.record_digest,
        record: parseJsonLossless(r.record).lossless as unknown as ProvRecord,
        envelope:
          r.envelope === null
            ? null
            : (parseJsonLossless(r.envelope).lossless as unknown as Record<string, unknown>),
      });
      insert.run(index, Number(r.seq), leaf);
      index++;
    }
  },
  3: (db) => {
    const update = db.prepare('UPDATE records SET leaf = ?, nodes = ? WHERE seq = ?');
    // The left sibling a new leaf joins at each level is the last subtree completed at that level.
    const lastAtLevel: Uint8Array[] = [];
    for (const row of db.prepare('SELECT idx, leaf FROM log_leaves ORDER BY idx').iterate()) {
      const { idx, leaf } = row as { idx: number; leaf: Uint8Array };
      const index = Number(idx);
      const nodes = completedNodes(index, leafHash(leaf), (level) => lastAtLevel[level] as Uint8Array);
      for (let level = 0; level * 32 < nodes.length; level++)
        lastAtLevel[level] = nodes.subarray(level * 32, level * 32 + 32);
      update.run(leaf, nodes, index + 1);
    }
    db.exec('DROP TABLE log_leaves; DROP TABLE log_nodes; ALTER TABLE records DROP COLUMN record;');
  },
};
