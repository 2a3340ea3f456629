/**
 * The provenance ledger: prov.record.v0.1 records in an embedded SQLite file
 * (node:sqlite), one row per distinct record, in the order they were stored.
 *
 * WAL mode lets readers (the `ledger` CLI, an auditor) work while the gateway
 * writes; the one writer process serializes its own inserts because
 * DatabaseSync is synchronous, and busy_timeout covers a second process that
 * briefly holds the write lock. The schema is versioned with PRAGMA
 * user_version and migrated forward when a writer opens the file; a reader
 * opens it read-only and never changes it, so auditing a file cannot alter it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { canonicalizeWithAndWithout } from '../canonical/canonicalize.ts';
import { canonicalize, digestBytes, parseJsonLossless } from '../canonical/index.ts';
import { isJsonObject } from '../canonical/json-value.ts';
import { claimsEnvelopeV01 } from '../envelope/prov-v01.ts';
import { EnvelopeError } from '../errors/index.ts';
import type { ProvRecord } from '../provenance/record.ts';
import { defaultRegistry, SCHEMA_IDS } from '../schemas/index.ts';
import { indexColumns } from './index-columns.ts';
import { leafBytes } from './log/leaf.ts';
import { type RightEdge, TreeStore } from './log/tree.ts';
import { MIGRATION_CODE, MIGRATIONS } from './migrations.ts';

export const LEDGER_SCHEMA_VERSION = MIGRATIONS.length;

export interface LedgerEntry {
  /** Position in storage order, from 1. */
  seq: number;
  run_id: string;
  /** The called tool (defaults to the record's tool.name). */
  tool: string;
  upstream: string | null;
  /** SHA-256 (hex) of the record without its integrity block, over RFC 8785 bytes. */
  record_digest: string;
  created_at: string;
  record: ProvRecord;
  /** The mcp.envelope.v0.1 the record arrived in, when it was stored with it. */
  envelope: Record<string, unknown> | null;
}

export interface InsertMeta {
  tool?: string;
  upstream?: string;
  envelope?: Record<string, unknown>;
  /** Who called, when the writer knows (the gateway's principal); kept in the log leaf only. */
  principal?: string;
}

export interface InsertResult {
  /** For a new row, record and envelope are the very values given (not copies). */
  entry: LedgerEntry;
  /** False when an identical record was already stored (inserts are idempotent). */
  inserted: boolean;
}

export interface ListFilter {
  tool?: string;
  upstream?: string;
  /** At most this many, newest first; default 100. */
  limit?: number;
}

export interface OpenOptions {
  /** Create the file (and its folder) when missing; otherwise LEDGER_NOT_FOUND. Default true. */
  create?: boolean;
  /**
   * Open for reading only: nothing is written to the file (no migration, no
   * journal-mode switch), which must exist (LEDGER_NOT_FOUND), be a ledger
   * (LEDGER_NOT_A_LEDGER) and be at the current schema version
   * (LEDGER_MIGRATION_REQUIRED, LEDGER_VERSION_UNSUPPORTED). Default false.
   */
  readOnly?: boolean;
  /** Injectable clock for created_at. */
  now?: () => Date;
}

/** What an insert computed before touching the file. */
interface PreparedInsert {
  record: ProvRecord;
  envelope: Record<string, unknown> | null;
  digest: string;
  createdAt: string;
  tool: string;
  upstream: string | null;
  principal: string | null;
  recordText: string;
  envelopeText: string | null;
}

/** A stored row that could not be read as an entry: what names it, and why. */
export interface UnreadableRow {
  seq: number;
  run_id: string;
  tool: string;
  record_digest: string;
  error: EnvelopeError;
}

/** One row as `rows` yields it. */
export type ScannedRow = { entry: LedgerEntry } | { unreadable: UnreadableRow };

/** A row of `records` as SQLite returns it (schema version 3). */
export interface StoredRow {
  seq: number;
  run_id: string;
  tool: string;
  upstream: string | null;
  record_digest: string;
  created_at: string;
  envelope: string | null;
  /** The log leaf (log/leaf.ts), which holds the record; null only in a damaged file. */
  leaf: Uint8Array | null;
  /** The subtree hashes the leaf completes (log/tree.ts). */
  nodes: Uint8Array | null;
}

const SQLITE_CORRUPT = 11;
/** The extended code of a primary key collision: here, a row another writer stored at the seq expected next. */
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_NOTADB = 26;
const DIGEST_KEY = /^(?:sha256:)?([0-9a-f]{64})$/;

/** The columns `records` has at every schema version (version 3 moved `record` into the leaf). */
const RECORD_COLUMNS = [
  'seq',
  'run_id',
  'tool',
  'upstream',
  'record_digest',
  'created_at',
  'envelope',
] as const;

function userVersion(db: DatabaseSync): number {
  return Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version);
}

/**
 * Refuses, without writing anything, a file this program must not treat as a
 * ledger: some other program's database, one from a newer program, or (when
 * reading) one that would need migrating first. `supported` is the newest
 * schema version known; it is a parameter so that the older-version path can
 * be exercised while only one version exists.
 */
export function checkLedgerSchema(
  db: DatabaseSync,
  path: string,
  mode: 'read' | 'write',
  supported: number = MIGRATIONS.length,
): void {
  const version = userVersion(db);
  if (version > supported) {
    throw new EnvelopeError(
      'LEDGER_VERSION_UNSUPPORTED',
      `Ledger ${path} is at schema version ${version}; this program knows up to ${supported}`,
      { path, version, supported },
    );
  }
  if (version === 0) {
    const objects = Number(
      (
        db
          .prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
          .get() as { n: number }
      ).n,
    );
    // An empty file becomes a ledger only when a writer asks for one.
    if (mode === 'write' && objects === 0) return;
    throw new EnvelopeError(
      'LEDGER_NOT_A_LEDGER',
      objects === 0
        ? `${path} is not a ledger: it is empty (no schema; nothing was ever stored in it)`
        : `${path} is not a ledger: it is an SQLite database with ${objects} other schema object${objects === 1 ? '' : 's'} and no ledger schema version`,
      { path, version, objects },
    );
  }
  const columns = new Set(
    (db.prepare("SELECT name FROM pragma_table_info('records')").all() as Array<{ name: string }>).map(
      (column) => column.name,
    ),
  );
  const missing = RECORD_COLUMNS.filter((column) => !columns.has(column));
  if (missing.length > 0) {
    throw new EnvelopeError(
      'LEDGER_NOT_A_LEDGER',
      `${path} is not a ledger: its schema version is ${version}, but ${columns.size === 0 ? 'it has no records table' : `its records table lacks ${missing.join(', ')}`}`,
      { path, version, missing },
    );
  }
  if (mode === 'read' && version < supported) {
    throw new EnvelopeError(
      'LEDGER_MIGRATION_REQUIRED',
      `Ledger ${path} is at schema version ${version} and needs migrating to ${supported}; reading does not migrate: open it for writing (ledger add, or the gateway) to migrate it`,
      { path, version, supported },
    );
  }
}

/** Turns a SQLite failure into a stable error; anything else passes through. */
/** Whether an insert failed because its seq is taken: another writer appended since the edge was read. */
function seqTaken(error: unknown): boolean {
  return (error as { errcode?: number }).errcode === SQLITE_CONSTRAINT_PRIMARYKEY;
}

function ledgerError(error: unknown, path: string): unknown {
  if (error instanceof EnvelopeError) return error;
  const errcode = (error as { errcode?: number }).errcode;
  if (errcode === SQLITE_CORRUPT || errcode === SQLITE_NOTADB) {
    return new EnvelopeError('LEDGER_CORRUPT', `Ledger ${path} is not a readable SQLite database`, {
      path,
      sqlite: (error as { errstr?: string }).errstr ?? null,
    });
  }
  if ((error as { code?: string }).code === 'ERR_SQLITE_ERROR') {
    return new EnvelopeError(
      'LEDGER_CORRUPT',
      `Ledger ${path} failed: ${(error as Error).message}`,
      { path, sqlite: (error as { errstr?: string }).errstr ?? null },
      { cause: error },
    );
  }
  return error;
}

export class Ledger {
  readonly path: string;
  /** Opened with `readOnly`: inserts are refused. */
  readonly readOnly: boolean;
  private readonly db: DatabaseSync;
  private readonly now: () => Date;
  private tree: TreeStore | undefined;
  /**
   * The log's right edge as this writer left it, so an append reads nothing: read inside the
   * first write transaction, advanced by each row stored, dropped when a transaction rolls back.
   * Another writer's append makes its next row's seq collide: the edge is read again (`store`).
   */
  private edge: RightEdge | undefined;
  private readonly statements = new Map<string, StatementSync>();

  private constructor(path: string, db: DatabaseSync, now: () => Date, readOnly: boolean) {
    this.path = path;
    this.db = db;
    this.now = now;
    this.readOnly = readOnly;
  }

  /**
   * Opens (or creates) a ledger file and brings its schema up to date, or,
   * with `readOnly`, opens an existing ledger without writing to it.
   */
  static open(file: string, options: OpenOptions = {}): Ledger {
    const path = resolve(file);
    const readOnly = options.readOnly === true;
    const create = !readOnly && (options.create ?? true);
    if (!existsSync(path)) {
      if (!create) throw new EnvelopeError('LEDGER_NOT_FOUND', `No ledger at ${path}`, { path });
      mkdirSync(dirname(path), { recursive: true });
      // Only its owner may read or write the records: SQLite gives its journal files the same mode.
      writeFileSync(path, '', { mode: 0o600, flag: 'wx' });
    }
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(path, { readOnly });
      db.exec('PRAGMA busy_timeout = 5000');
      // Before anything that writes (the journal-mode switch, migrations): some other database is left as it is.
      checkLedgerSchema(db, path, readOnly ? 'read' : 'write');
      if (readOnly) return new Ledger(path, db, options.now ?? (() => new Date()), true);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      db.exec('PRAGMA wal_autocheckpoint = 10000');
      db.exec('PRAGMA foreign_keys = ON');
      migrate(db, path);
      return new Ledger(path, db, options.now ?? (() => new Date()), false);
    } catch (error) {
      db?.close();
      throw ledgerError(error, path);
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  /** The schema version the file is at. */
  version(): number {
    return this.run(
      () => (this.db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version,
    );
  }

  /**
   * Stores a record (or the record inside an mcp.envelope.v0.1, keeping the
   * envelope for verification). The same record stored twice is one row.
   */
  insert(subject: unknown, meta: InsertMeta = {}): InsertResult {
    const prepared = this.prepare(subject, meta);
    const edge = this.edge;
    // With the edge known, a record without parents is one row: its insert is its own transaction.
    if (edge !== undefined && !this.db.isTransaction && (prepared.record.parents ?? []).length === 0) {
      try {
        return this.append(prepared, edge);
      } catch (error) {
        if (!seqTaken(error)) throw ledgerError(error, this.path);
        this.edge = undefined;
      }
    }
    return this.transaction(() => this.store(prepared));
  }

  /**
   * Stores several records in one transaction (a group commit: one write of
   * the pages they share instead of one per record). Each item's result is
   * its InsertResult, or the error that refused it (an invalid record refuses
   * only itself); a storage failure fails them all.
   */
  insertMany(
    items: ReadonlyArray<{ subject: unknown; meta?: InsertMeta }>,
  ): Array<InsertResult | EnvelopeError> {
    const prepared = items.map((item) => {
      try {
        return this.prepare(item.subject, item.meta ?? {});
      } catch (error) {
        if (error instanceof EnvelopeError) return error;
        throw error;
      }
    });
    return this.transaction(() =>
      prepared.map((item) => (item instanceof EnvelopeError ? item : this.store(item))),
    );
  }

  /** Everything an insert computes before it touches the file: the checks, the digest and the canonical texts. */
  private prepare(subject: unknown, meta: InsertMeta): PreparedInsert {
    if (this.readOnly) {
      throw new EnvelopeError(
        'USAGE_ERROR',
        `Ledger ${this.path} was opened read-only: cannot store a record`,
        {
          path: this.path,
        },
      );
    }
    let record: unknown = subject;
    let envelope = meta.envelope;
    if (claimsEnvelopeV01(subject)) {
      envelope = subject as Record<string, unknown>;
      record = envelope.provenance;
    }
    if (!isJsonObject(record)) {
      throw new EnvelopeError('LEDGER_RECORD_INVALID', 'Nothing to store: no prov.record.v0.1 given', {
        pointer: envelope ? '/provenance' : '',
      });
    }
    const check = defaultRegistry().validate(SCHEMA_IDS.record, record);
    if (!check.valid) {
      const first = check.issues[0];
      throw new EnvelopeError(
        'LEDGER_RECORD_INVALID',
        `Not a valid prov.record.v0.1: ${first?.pointer || '/'} ${first?.message ?? ''}`.trim(),
        {
          pointer: first?.pointer ?? '',
          issues: check.issues.map(({ pointer, message }) => ({ pointer, message })),
        },
      );
    }
    const provRecord = record as unknown as ProvRecord;
    // The record digest is over the record without `integrity`: both texts from one canonicalization.
    const texts = canonicalizeWithAndWithout(provRecord as unknown as Record<string, unknown>, 'integrity');
    return {
      record: provRecord,
      envelope: envelope ?? null,
      digest: digestBytes(texts.without, 'sha256').value,
      createdAt: this.now().toISOString(),
      tool: meta.tool ?? provRecord.tool.name,
      upstream: meta.upstream ?? null,
      // A caller's name may come from a token's claims: a lone surrogate, which no canonical leaf can
      // hold, is stored as U+FFFD rather than leaving the record unfiled.
      principal: meta.principal?.toWellFormed() ?? null,
      recordText: texts.text,
      envelopeText: envelope === undefined ? null : canonicalize(envelope),
    };
  }

  /** Runs `body` in one write transaction (the write lock taken up front), committed only if it returns. */
  private transaction<T>(body: () => T): T {
    return this.run(() => {
      this.statement('BEGIN IMMEDIATE').run();
      let committed = false;
      try {
        const result = body();
        this.statement('COMMIT').run();
        committed = true;
        return result;
      } finally {
        if (!committed) {
          this.edge = undefined;
          if (this.db.isTransaction) this.db.exec('ROLLBACK');
        }
      }
    });
  }

  /** Stores one prepared record, inside a transaction: the row and its log leaf are one row. */
  private store(item: PreparedInsert): InsertResult {
    this.edge ??= this.log().edge();
    try {
      return this.append(item, this.edge);
    } catch (error) {
      if (!seqTaken(error)) throw error;
      // Another process appended since this edge was read: read it again (the write lock is held).
      this.edge = this.log().edge();
      return this.append(item, this.edge);
    }
  }

  /** Stores one prepared record as leaf `edge.size` of the log, advancing the edge. */
  private append(item: PreparedInsert, edge: RightEdge): InsertResult {
    const index = edge.size;
    const entry: LedgerEntry = {
      seq: index + 1,
      run_id: item.record.run_id,
      tool: item.tool,
      upstream: item.upstream,
      record_digest: item.digest,
      created_at: item.createdAt,
      record: item.record,
      envelope: item.envelope,
    };
    const leaf = leafBytes(
      { ...entry, index, principal: item.principal },
      { record: item.recordText, envelope: item.envelopeText },
    );
    const next = edge.next(leaf);
    // Columns the viewer filters on, derived from what the leaf commits to (index-columns.ts).
    const columns = indexColumns(item.record, item.envelope, item.principal);
    const { changes } = this.statement(
      `INSERT INTO records (seq, run_id, tool, upstream, record_digest, created_at, envelope, leaf, nodes,
         principal, outcome, error_code)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (record_digest) DO NOTHING`,
    ).run(
      entry.seq,
      entry.run_id,
      item.tool,
      item.upstream,
      item.digest,
      item.createdAt,
      item.envelopeText,
      leaf,
      next.nodes,
      columns.principal,
      columns.outcome,
      columns.error_code,
    );
    if (Number(changes) === 0) {
      // Already stored: report the row as it was first stored.
      const row = this.statement('SELECT * FROM records WHERE record_digest = ?').get(item.digest);
      return { entry: this.toEntry(row as unknown as StoredRow), inserted: false };
    }
    edge.advance(next);
    // The parents the viewer looks children up by (an index: the audit checks it against the leaf).
    for (const parent of item.record.parents ?? []) {
      this.statement('INSERT OR IGNORE INTO record_parents (parent, seq) VALUES (?, ?)').run(
        parent,
        entry.seq,
      );
    }
    // The stored texts are the canonical form of these values, so the entry needs no re-read.
    return { entry, inserted: true };
  }

  /** A prepared statement, prepared once per connection (an append is a handful of them). */
  private statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** The transparency log over this ledger's rows (src/ledger/log/). */
  log(): TreeStore {
    this.tree ??= new TreeStore(this.db);
    return this.tree;
  }

  /** The underlying database, for the log's modules (checkpoints, verification). */
  database(): DatabaseSync {
    return this.db;
  }

  /** Entries newest first, optionally only one tool's or one upstream's. */
  list(filter: ListFilter = {}): LedgerEntry[] {
    const limit = filter.limit ?? 100;
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new EnvelopeError('USAGE_ERROR', `limit must be a positive integer, got ${String(filter.limit)}`);
    }
    return this.run(() => {
      const rows = this.db
        .prepare(
          `SELECT * FROM records
           WHERE (:tool IS NULL OR tool = :tool) AND (:upstream IS NULL OR upstream = :upstream)
           ORDER BY seq DESC LIMIT :limit`,
        )
        .all({
          tool: filter.tool ?? null,
          upstream: filter.upstream ?? null,
          limit,
        }) as unknown as StoredRow[];
      return rows.map((row) => this.toEntry(row));
    });
  }

  /** Entries whose run id or record digest (hex, or `sha256:` + hex) is `key`, oldest first. */
  find(key: string): LedgerEntry[] {
    const digest = DIGEST_KEY.exec(key.toLowerCase())?.[1];
    return this.run(() => {
      const rows = this.db
        .prepare('SELECT * FROM records WHERE run_id = ? OR record_digest = ? ORDER BY seq')
        .all(key, digest ?? null) as unknown as StoredRow[];
      return rows.map((row) => this.toEntry(row));
    });
  }

  /** Like find, but LEDGER_RECORD_NOT_FOUND when nothing matches. */
  show(key: string): LedgerEntry[] {
    const entries = this.find(key);
    if (entries.length === 0) {
      throw new EnvelopeError('LEDGER_RECORD_NOT_FOUND', `No record with run id or digest ${key}`, { key });
    }
    return entries;
  }

  count(): number {
    return this.run(() =>
      Number((this.db.prepare('SELECT count(*) AS n FROM records').get() as { n: number }).n),
    );
  }

  /** Every entry, oldest first. */
  *all(): Generator<LedgerEntry> {
    for (const row of this.rows()) {
      if ('unreadable' in row) throw row.unreadable.error;
      yield row.entry;
    }
  }

  /**
   * Every row (or those whose run id or record digest is `key`), oldest first;
   * a row that does not hold JSON is yielded as unreadable rather than thrown,
   * so that one bad row does not hide the others.
   */
  *rows(key?: string): Generator<ScannedRow> {
    const digest = key === undefined ? undefined : DIGEST_KEY.exec(key.toLowerCase())?.[1];
    const statement =
      key === undefined
        ? this.db.prepare('SELECT * FROM records ORDER BY seq')
        : this.db.prepare('SELECT * FROM records WHERE run_id = ? OR record_digest = ? ORDER BY seq');
    const iterator = (key === undefined ? statement.iterate() : statement.iterate(key, digest ?? null))[
      Symbol.iterator
    ]();
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = iterator.next();
      } catch (error) {
        throw ledgerError(error, this.path);
      }
      if (next.done) return;
      const row = next.value as StoredRow;
      let scanned: ScannedRow;
      try {
        scanned = { entry: this.toEntry(row) };
      } catch (error) {
        if (!(error instanceof EnvelopeError) || error.code !== 'LEDGER_CORRUPT') throw error;
        scanned = {
          unreadable: {
            seq: Number(row.seq),
            run_id: String(row.run_id),
            tool: String(row.tool),
            record_digest: String(row.record_digest),
            error,
          },
        };
      }
      yield scanned;
    }
  }

  private toEntry(row: StoredRow): LedgerEntry {
    let record: ProvRecord;
    let envelope: Record<string, unknown> | null;
    try {
      if (row.leaf === null) throw new Error('its log leaf, which holds the record, is gone');
      // Numbers as stored: the record's digests bind an integer beyond 2^53 by its digits.
      const leaf = parseJsonLossless(Buffer.from(row.leaf).toString('utf8')).lossless as { record?: unknown };
      if (!isJsonObject(leaf.record)) throw new Error('its log leaf holds no record');
      record = leaf.record as unknown as ProvRecord;
      envelope =
        row.envelope === null ? null : (parseJsonLossless(row.envelope).lossless as Record<string, unknown>);
    } catch (error) {
      throw new EnvelopeError(
        'LEDGER_CORRUPT',
        `Ledger ${this.path}: row ${row.seq} (run ${row.run_id}, sha256:${row.record_digest}) does not hold JSON: ${(error as Error).message}`,
        { path: this.path, seq: row.seq, run_id: row.run_id, record_digest: row.record_digest },
        { cause: error },
      );
    }
    return {
      seq: Number(row.seq),
      run_id: row.run_id,
      tool: row.tool,
      upstream: row.upstream,
      record_digest: row.record_digest,
      created_at: row.created_at,
      record,
      envelope,
    };
  }

  private run<T>(body: () => T): T {
    try {
      return body();
    } catch (error) {
      throw ledgerError(error, this.path);
    }
  }
}

function migrate(db: DatabaseSync, path: string): void {
  const current = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
  if (current > MIGRATIONS.length) {
    throw new EnvelopeError(
      'LEDGER_VERSION_UNSUPPORTED',
      `Ledger ${path} is at schema version ${current}; this program knows up to ${MIGRATIONS.length}`,
      { path, version: current, supported: MIGRATIONS.length },
    );
  }
  for (let version = current + 1; version <= MIGRATIONS.length; version++) {
    // IMMEDIATE takes the write lock up front, so two openers cannot both migrate.
    db.exec('BEGIN IMMEDIATE');
    try {
      const now = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
      if (now < version) {
        db.exec(MIGRATIONS[version - 1] as string);
        MIGRATION_CODE[version]?.(db);
        db.exec(`PRAGMA user_version = ${version}`);
      }
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
}
