/**
 * Ledgers written by earlier releases, built here as those releases left them
 * (schema version 1: rows only; version 2: rows beside `log_leaves` and
 * `log_nodes`), opened by this one: the leaves, the root and the audit.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalize, digestBytes } from '../../../src/canonical/index.ts';
import { auditLog, Ledger } from '../../../src/ledger/index.ts';
import { leafHash, MemoryTree } from '../../../src/ledger/log/hashing.ts';
import { LEAF_TYPE_V1 } from '../../../src/ledger/log/leaf.ts';
import { MIGRATIONS } from '../../../src/ledger/migrations.ts';
import { computeRecordDigest } from '../../../src/provenance/index.ts';
import { callRecord } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'ledger-log-migration-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const runs = Array.from({ length: 5 }, (_, i) => `00000000-0000-4000-8000-00000000000${i}`);
const CREATED = '2026-01-02T03:04:05.000Z';

/** A version-1 ledger as that release wrote it: the record as canonical text in its own column. */
function versionOne(file: string): DatabaseSync {
  const db = new DatabaseSync(file);
  db.exec(`${MIGRATIONS[0]}; PRAGMA user_version = 1`);
  const insert = db.prepare(
    'INSERT INTO records (run_id, tool, upstream, record_digest, created_at, record, envelope) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  for (const run of runs) {
    const { record, envelope } = callRecord(run);
    insert.run(
      run,
      'echo',
      'u',
      computeRecordDigest(record).value,
      CREATED,
      canonicalize(record),
      canonicalize(envelope),
    );
  }
  return db;
}

/** The leaf a version-2 ledger wrote for a row: the v1 leaf, without an index. */
function leafV1(row: { run_id: string; record_digest: string; record: string; envelope: string }): Buffer {
  const record = JSON.parse(row.record);
  return Buffer.from(
    canonicalize({
      type: LEAF_TYPE_V1,
      run_id: row.run_id,
      tool: 'echo',
      upstream: 'u',
      principal: null,
      created_at: CREATED,
      record_digest: `sha256:${row.record_digest}`,
      output_digests: (record.outputs ?? []).map(
        (o: { artifact_id: string; digest?: { alg: string; value: string } }) => ({
          artifact_id: o.artifact_id,
          digest: o.digest ? `${o.digest.alg}:${o.digest.value}` : null,
        }),
      ),
      envelope_digest: `sha256:${digestBytes(row.envelope, 'sha256').value}`,
      record,
    }),
  );
}

describe('ledger migrations', () => {
  it('builds a version-1 ledger’s leaves in seq order, the same a new ledger writes', () => {
    const file = join(dir, 'v1.sqlite');
    versionOne(file).close();
    expect(() => Ledger.open(file, { readOnly: true })).toThrow(/needs migrating/);
    const migrated = Ledger.open(file);
    expect(migrated.version()).toBe(MIGRATIONS.length);

    const fresh = Ledger.open(join(dir, 'fresh.sqlite'), { now: () => new Date(CREATED) });
    for (const run of runs) fresh.insert(callRecord(run).envelope, { upstream: 'u' });
    const leaves = (ledger: Ledger) => [...ledger.log().leaves()].map((l) => Buffer.from(l.leaf).toString());
    expect(leaves(migrated)).toEqual(leaves(fresh));
    expect(Buffer.from(migrated.log().root()).equals(Buffer.from(fresh.log().root()))).toBe(true);
    expect(migrated.list({ limit: 10 }).map((entry) => entry.record)).toEqual(
      fresh.list({ limit: 10 }).map((entry) => entry.record),
    );
    expect(auditLog(migrated).problems).toEqual([]);
    fresh.close();
    migrated.close();
  });

  it('keeps a version-2 ledger’s leaves byte for byte, so its checkpoints still hold', () => {
    const file = join(dir, 'v2.sqlite');
    const db = versionOne(file);
    db.exec(`${MIGRATIONS[1]}; PRAGMA user_version = 2`);
    const rows = db
      .prepare('SELECT seq, run_id, record_digest, record, envelope FROM records ORDER BY seq')
      .all() as Array<{
      seq: number;
      run_id: string;
      record_digest: string;
      record: string;
      envelope: string;
    }>;
    const leaves = rows.map(leafV1);
    // log_nodes as version 2 kept them is recomputed by the migration: only the leaves matter.
    const insert = db.prepare('INSERT INTO log_leaves (idx, seq, leaf) VALUES (?, ?, ?)');
    for (const [index, row] of rows.entries()) insert.run(index, row.seq, leaves[index] as Buffer);
    db.close();

    const migrated = Ledger.open(file);
    expect([...migrated.log().leaves()].map((l) => Buffer.from(l.leaf))).toEqual(leaves);
    expect(
      Buffer.from(migrated.log().root()).equals(Buffer.from(new MemoryTree(leaves.map(leafHash)).root())),
    ).toBe(true);
    expect(migrated.show(runs[2] as string)[0]?.record).toEqual(JSON.parse(rows[2]?.record as string));
    expect(auditLog(migrated).problems).toEqual([]);
    // New entries after the old ones are v2 leaves, indexed.
    migrated.insert(callRecord('00000000-0000-4000-8000-000000000009').envelope);
    const last = [...migrated.log().leaves()].at(-1);
    expect(JSON.parse(Buffer.from(last?.leaf as Uint8Array).toString())).toMatchObject({
      type: 'mcp-envelope.ledger.leaf.v2',
      index: 5,
    });
    expect(auditLog(migrated).problems).toEqual([]);
    migrated.close();
  });
});

/** A version-3 ledger: what migration 4 adds for the viewer, taken away again. */
const DROP_VIEWER_COLUMNS = `DROP INDEX records_principal; DROP INDEX records_failed;
  DROP INDEX records_error_code;
  ALTER TABLE records DROP COLUMN principal; ALTER TABLE records DROP COLUMN outcome;
  ALTER TABLE records DROP COLUMN error_code; DROP TABLE record_parents;`;

describe('migration 4: the viewer columns', () => {
  it("fills principal from each leaf, outcome and error code from the record and envelope, and each record's parents", () => {
    const file = join(dir, 'v4.sqlite');
    const ledger = Ledger.open(file);
    const plain = callRecord('00000000-0000-4000-8000-000000000001');
    const failed = callRecord('00000000-0000-4000-8000-000000000002');
    failed.envelope.provenance = { ...failed.record, parents: [plain.record.run_id, 'elsewhere'] };
    ledger.insert(plain.record, { principal: 'token:alice' });
    ledger.insert(
      { ...failed.envelope, errors: [{ code: 'UPSTREAM_TIMEOUT', message: 'took too long' }] },
      { principal: 'token:bob' },
    );
    const columns = 'SELECT seq, principal, outcome, error_code FROM records ORDER BY seq';
    const stored = ledger.database().prepare(columns).all();
    expect(stored).toEqual([
      { seq: 1, principal: 'token:alice', outcome: 'ok', error_code: null },
      { seq: 2, principal: 'token:bob', outcome: 'error', error_code: 'UPSTREAM_TIMEOUT' },
    ]);
    ledger.close();

    const db = new DatabaseSync(file);
    db.exec(`${DROP_VIEWER_COLUMNS} PRAGMA user_version = 3`);
    db.close();
    expect(() => Ledger.open(file, { readOnly: true })).toThrow(/needs migrating/);
    const migrated = Ledger.open(file);
    expect(migrated.version()).toBe(MIGRATIONS.length);
    expect(migrated.database().prepare(columns).all()).toEqual(stored);
    expect(
      migrated.database().prepare('SELECT parent, seq FROM record_parents ORDER BY parent').all(),
    ).toEqual([
      { parent: plain.record.run_id, seq: 2 },
      { parent: 'elsewhere', seq: 2 },
    ]);
    expect(auditLog(migrated).problems).toEqual([]);
    migrated.close();
  });
});

describe('migration 6: the principal index holds only rows that name one', () => {
  it('replaces the index of every row by one of the rows with a principal, which the runs filter uses', () => {
    const file = join(dir, 'v5.sqlite');
    const ledger = Ledger.open(file);
    ledger.insert(callRecord('00000000-0000-4000-8000-000000000001').record, { principal: 'token:alice' });
    ledger.insert(callRecord('00000000-0000-4000-8000-000000000002').record);
    ledger.close();
    // As version 5 left it: the index of every row.
    const db = new DatabaseSync(file);
    db.exec(`DROP INDEX records_principal;
      CREATE INDEX records_principal ON records (principal, seq); PRAGMA user_version = 5`);
    db.close();

    const migrated = Ledger.open(file);
    const index = migrated.database();
    const entries = (name: string) =>
      (
        index
          .prepare(`SELECT count(*) AS n FROM records INDEXED BY ${name} WHERE principal = ?`)
          .get('token:alice') as {
          n: number;
        }
      ).n;
    expect(migrated.version()).toBe(MIGRATIONS.length);
    expect(index.prepare("SELECT sql FROM sqlite_schema WHERE name = 'records_principal'").get()).toEqual({
      sql: expect.stringMatching(/WHERE principal IS NOT NULL$/),
    });
    expect(entries('records_principal')).toBe(1);
    const plan = index
      .prepare('EXPLAIN QUERY PLAN SELECT seq FROM records WHERE principal = ? ORDER BY seq DESC LIMIT 50')
      .all('token:alice') as Array<{ detail: string }>;
    expect(plan.map((step) => step.detail).join('\n')).toMatch(/USING COVERING INDEX records_principal/);
    expect(auditLog(migrated).problems).toEqual([]);
    migrated.close();
  });
});
