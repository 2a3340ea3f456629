import type { DatabaseSync } from 'node:sqlite';
import { parseJsonLossless } from '../canonical/index.ts';
import type { ProvRecord } from '../provenance/record.ts';
import { indexColumns } from './index-columns.ts';
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
  // 4: the viewer's index columns (below).
  viewerColumns(),
  // 5: the gateway's pins of upstream definitions (see definitionPinsMigration).
  definitionPinsMigration(),
  // 6: the principal index holds only rows that name one: the viewer finds rows by a principal's
  // name, never by its absence, so an append that names none (a record filed by the library
  // alone) writes one index page fewer.
  `DROP INDEX records_principal;
   CREATE INDEX records_principal ON records (principal, seq) WHERE principal IS NOT NULL;`,
];

/**
 * 4: columns the viewer filters on (index-columns.ts): who called, the outcome and the error
 * code, so a filtered page newest first is a range of one index read. Failed calls and error
 * codes are indexed partially (only the rows that failed), so the common append, a call that
 * went well, writes one index page more than before rather than three; a time range is found
 * by seq (web/runs.ts), created_at growing with it. `record_parents` holds each row's parents,
 * so a run's children are found without reading every record. Only an index: the log's audit
 * checks them against the leaf.
 */
function viewerColumns(): string {
  return `ALTER TABLE records ADD COLUMN principal TEXT;
   ALTER TABLE records ADD COLUMN outcome TEXT;
   ALTER TABLE records ADD COLUMN error_code TEXT;
   CREATE INDEX records_principal ON records (principal, seq);
   CREATE INDEX records_failed ON records (seq) WHERE outcome = 'error';
   CREATE INDEX records_error_code ON records (error_code, seq) WHERE error_code IS NOT NULL;
   CREATE TABLE record_parents (
     parent TEXT NOT NULL,
     seq INTEGER NOT NULL,
     PRIMARY KEY (parent, seq)
   ) STRICT, WITHOUT ROWID;`;
}

/** Fills migration 4's columns for the rows an older ledger holds, from each row's leaf (which holds the record). */
function backfillViewerColumns(db: DatabaseSync): void {
  const update = db.prepare('UPDATE records SET principal = ?, outcome = ?, error_code = ? WHERE seq = ?');
  for (const row of db.prepare('SELECT seq, leaf, envelope FROM records WHERE leaf IS NOT NULL').iterate()) {
    const r = row as { seq: number; leaf: Uint8Array; envelope: string | null };
    const leaf = parseJsonLossless(Buffer.from(r.leaf).toString('utf8')).lossless as unknown as {
      record: ProvRecord;
      principal?: unknown;
    };
    const columns = indexColumns(
      leaf.record,
      r.envelope === null ? null : (parseJsonLossless(r.envelope).lossless as Record<string, unknown>),
      typeof leaf.principal === 'string' ? leaf.principal : null,
    );
    update.run(columns.principal, columns.outcome, columns.error_code, r.seq);
  }
  db.exec(
    `INSERT OR IGNORE INTO record_parents (parent, seq)
     SELECT parent.value, records.seq FROM records,
       json_each(CAST(records.leaf AS TEXT), '$.record.parents') AS parent
     WHERE records.leaf IS NOT NULL`,
  );
}

/**
 * The tables of the gateway's definition pins (src/gateway/pinning/): each
 * upstream definition's accepted digest, the definitions seen that differ from
 * it until an operator accepts one, and a counter every write bumps, so a
 * gateway notices another process's acceptance without reading the pins
 * again. A function of its own, and `IF NOT EXISTS`, because the same tables
 * are made in a pins file of their own when the ledger is off, and so that
 * its place in the sequence can move without its text changing.
 */
export function definitionPinsMigration(): string {
  return `CREATE TABLE IF NOT EXISTS definition_pins (
     upstream TEXT NOT NULL,
     server TEXT NOT NULL,
     kind TEXT NOT NULL,
     name TEXT NOT NULL,
     digest TEXT NOT NULL,
     content_digest TEXT NOT NULL,
     shape_digest TEXT NOT NULL,
     definition TEXT NOT NULL,
     pinned_at TEXT NOT NULL,
     accepted_at TEXT,
     PRIMARY KEY (upstream, server, kind, name)
   ) STRICT;
   CREATE TABLE IF NOT EXISTS definition_pending (
     upstream TEXT NOT NULL,
     server TEXT NOT NULL,
     kind TEXT NOT NULL,
     name TEXT NOT NULL,
     digest TEXT NOT NULL,
     pinned_digest TEXT,
     reason TEXT NOT NULL,
     renamed_from TEXT,
     definition TEXT NOT NULL,
     first_seen TEXT NOT NULL,
     PRIMARY KEY (upstream, server, kind, name, digest)
   ) STRICT;
   CREATE TABLE IF NOT EXISTS definition_pin_state (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL) STRICT;
   INSERT OR IGNORE INTO definition_pin_state (id, version) VALUES (1, 0);`;
}

/**
 * Steps SQL cannot take, run after migration N's script in its transaction:
 * 2 builds the leaves of the rows a version-1 ledger holds, in seq order (the
 * subtree hashes are left to 3, which computes them from the leaves); 3 moves
 * each leaf into its row with the subtree hashes it completes, then drops the
 * log's old tables and the record column (the leaf holds the record); 4 fills
 * the viewer's columns of the rows an older ledger holds.
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
  4: backfillViewerColumns,
};
