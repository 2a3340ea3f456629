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
];
