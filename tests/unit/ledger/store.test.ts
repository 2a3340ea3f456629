import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { auditLog, LEDGER_SCHEMA_VERSION, Ledger, verifyLedger } from '../../../src/ledger/index.ts';
import { checkLedgerSchema } from '../../../src/ledger/store.ts';
import { computeRecordDigest } from '../../../src/provenance/integrity.ts';
import { callRecord } from './fixtures.ts';

let dir: string;
let ledger: Ledger | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ledger-'));
});
afterEach(() => {
  ledger?.close();
  ledger = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function failure(run: () => unknown): EnvelopeError {
  try {
    run();
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
  throw new Error('expected an EnvelopeError');
}

const runA = '11111111-1111-4111-8111-111111111111';
const runB = '22222222-2222-4222-8222-222222222222';
const runC = '33333333-3333-4333-8333-333333333333';

describe('Ledger', () => {
  it('creates the file and its folder, in WAL mode, at the current schema version', () => {
    const file = join(dir, 'nested', 'ledger.sqlite');
    ledger = Ledger.open(file);
    expect(existsSync(file)).toBe(true);
    expect(ledger.version()).toBe(LEDGER_SCHEMA_VERSION);
    const raw = new DatabaseSync(file);
    expect(raw.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    raw.close();
    // Only its owner reads or writes the records.
    if (process.platform !== 'win32') expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('stores records in order, once each, and lists newest first with filters', () => {
    ledger = Ledger.open(join(dir, 'l.sqlite'), { now: () => new Date('2026-01-02T03:04:05Z') });
    const a = callRecord(runA, 'echo');
    const first = ledger.insert(a.envelope, { upstream: 'legacy' });
    expect(first.inserted).toBe(true);
    expect(first.entry).toMatchObject({
      seq: 1,
      run_id: runA,
      tool: 'echo',
      upstream: 'legacy',
      record_digest: computeRecordDigest(a.record).value,
      created_at: '2026-01-02T03:04:05.000Z',
    });
    expect(first.entry.record).toEqual(a.record);
    expect(first.entry.envelope).toEqual(a.envelope);

    const again = ledger.insert(a.envelope, { upstream: 'legacy' });
    expect(again).toEqual({ inserted: false, entry: first.entry });

    ledger.insert(callRecord(runB, 'stats').record, { upstream: 'legacy' });
    ledger.insert(callRecord(runC, 'echo').record, { tool: 'echo', upstream: 'python' });
    expect(ledger.count()).toBe(3);
    expect(ledger.list().map((entry) => entry.seq)).toEqual([3, 2, 1]);
    expect(ledger.list({ tool: 'echo' }).map((entry) => entry.run_id)).toEqual([runC, runA]);
    expect(ledger.list({ upstream: 'legacy', limit: 1 }).map((entry) => entry.run_id)).toEqual([runB]);
    expect(failure(() => ledger?.list({ limit: 0 })).code).toBe('USAGE_ERROR');
  });

  it('finds entries by run id or record digest', () => {
    ledger = Ledger.open(join(dir, 'l.sqlite'));
    const { entry } = ledger.insert(callRecord(runA).envelope);
    expect(ledger.show(runA)).toEqual([entry]);
    expect(ledger.show(entry.record_digest)).toEqual([entry]);
    expect(ledger.show(`sha256:${entry.record_digest.toUpperCase()}`)).toEqual([entry]);
    expect(failure(() => ledger?.show(runB)).code).toBe('LEDGER_RECORD_NOT_FOUND');
  });

  it('rejects what is not a record with LEDGER_RECORD_INVALID and a pointer', () => {
    ledger = Ledger.open(join(dir, 'l.sqlite'));
    expect(
      failure(() => ledger?.insert({ schema_version: 'mcp.envelope.v0.1', result: 1 })).details?.pointer,
    ).toBe('/provenance');
    const { record } = callRecord(runA);
    const bad = failure(() => ledger?.insert({ ...record, run_id: 7 }));
    expect(bad.code).toBe('LEDGER_RECORD_INVALID');
    expect(bad.details?.pointer).toBe('/run_id');
    expect(failure(() => ledger?.insert('text')).code).toBe('LEDGER_RECORD_INVALID');
    expect(ledger.count()).toBe(0);
  });

  it('reopens a file and keeps its rows; two handles on one file see each other', () => {
    const file = join(dir, 'l.sqlite');
    ledger = Ledger.open(file);
    ledger.insert(callRecord(runA).record);
    const reader = Ledger.open(file, { create: false });
    try {
      expect(reader.count()).toBe(1);
      ledger.insert(callRecord(runB).record);
      expect(reader.count()).toBe(2);
    } finally {
      reader.close();
    }
  });

  it('two writers on one file take turns without a gap or a lost leaf, and the log stays whole', () => {
    // Each writer keeps the log's right edge between appends; the other's rows make its next seq
    // collide, and it reads the edge again. 37 appends cross several levels of the tree.
    const file = join(dir, 'l.sqlite');
    ledger = Ledger.open(file);
    const other = Ledger.open(file);
    try {
      const stored: number[] = [];
      for (let i = 0; i < 37; i++) {
        const writer = i % 3 === 0 ? other : ledger;
        const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
        stored.push(writer.insert(callRecord(id).record).entry.seq);
      }
      expect(stored).toEqual(Array.from({ length: 37 }, (_, i) => i + 1));
      const audit = auditLog(ledger);
      expect(audit.problems).toEqual([]);
      expect(audit.size).toBe(37);
      // The root the writers built leaf by leaf is the one computed afresh from the stored leaves.
      expect(Buffer.from(ledger.log().root()).toString('base64')).toBe(audit.root);
    } finally {
      other.close();
    }
  });

  it('a batch that fails leaves no row behind and the next append takes its place', () => {
    const file = join(dir, 'l.sqlite');
    ledger = Ledger.open(file);
    ledger.insert(callRecord(runA).record);
    // A storage failure inside the batch's transaction (a trigger standing in for a full disk)
    // rolls back the rows stored before it in the same transaction.
    ledger.database().exec(`CREATE TRIGGER refuse BEFORE INSERT ON records WHEN NEW.run_id = '${runC}'
      BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
    expect(() =>
      ledger?.insertMany([{ subject: callRecord(runB).record }, { subject: callRecord(runC).record }]),
    ).toThrow(/disk full/);
    expect(ledger.count()).toBe(1);
    ledger.database().exec('DROP TRIGGER refuse');
    expect(ledger.insert(callRecord(runB).record).entry.seq).toBe(2);
    expect(auditLog(ledger).problems).toEqual([]);
  });

  it('reports a missing file with LEDGER_NOT_FOUND when not asked to create it', () => {
    const file = join(dir, 'absent.sqlite');
    expect(failure(() => Ledger.open(file, { create: false })).code).toBe('LEDGER_NOT_FOUND');
    expect(existsSync(file)).toBe(false);
  });

  it('reports a file that is not SQLite with LEDGER_CORRUPT', () => {
    const file = join(dir, 'corrupt.sqlite');
    writeFileSync(file, 'this is not a database, just some text that is long enough to look like a header');
    const error = failure(() => Ledger.open(file));
    expect(error.code).toBe('LEDGER_CORRUPT');
    expect(error.message).toContain(file);
  });

  it('refuses a file from a newer version of the program', () => {
    const file = join(dir, 'future.sqlite');
    const raw = new DatabaseSync(file);
    raw.exec(`PRAGMA user_version = ${LEDGER_SCHEMA_VERSION + 1}`);
    raw.close();
    expect(failure(() => Ledger.open(file)).code).toBe('LEDGER_VERSION_UNSUPPORTED');
  });
});

describe('Ledger principals', () => {
  it('files a record whose principal holds a lone surrogate, with U+FFFD in its place, and it verifies', async () => {
    ledger = Ledger.open(join(dir, 'l.sqlite'));
    const { entry } = ledger.insert(callRecord(runA).record, { principal: 'oauth:https://as#al\ud800ice' });
    const [row] = ledger.database().prepare('SELECT principal FROM records WHERE seq = ?').all(entry.seq);
    expect(row).toEqual({ principal: 'oauth:https://as#al\ufffdice' });
    expect(await verifyLedger(ledger)).toMatchObject({ ok: true, total: 1, failed: 0 });
  });
});

describe('verifyLedger', () => {
  it('passes untouched records and catches a row edited after storage', async () => {
    const file = join(dir, 'l.sqlite');
    ledger = Ledger.open(file);
    ledger.insert(callRecord(runA).envelope);
    ledger.insert(callRecord(runB).record);
    const clean = await verifyLedger(ledger);
    expect(clean).toMatchObject({ ok: true, total: 2, failed: 0 });
    expect(clean.entries[0]?.checks.find((check) => check.check === 'ledger:record_digest')?.status).toBe(
      'pass',
    );
    expect(clean.entries[0]?.checks.find((check) => check.check === 'record_digest')?.status).toBe('pass');

    // Tamper with the stored record behind the ledger's back.
    const raw = new DatabaseSync(file);
    raw
      .prepare(
        'UPDATE records SET leaf = CAST(replace(CAST(leaf AS TEXT), \'"version":"1.0.0"\', \'"version":"6.6.6"\') AS BLOB) WHERE run_id = ?',
      )
      .run(runB);
    raw.close();
    const tampered = await verifyLedger(ledger);
    expect(tampered).toMatchObject({ ok: false, total: 2, failed: 1 });
    const bad = tampered.entries.find((entry) => entry.run_id === runB);
    expect(bad?.checks.filter((check) => check.status === 'fail').map((check) => check.check)).toEqual([
      'ledger:record_digest',
      'contract:integrity.record_digest.compute',
      'record_digest',
    ]);
    expect((await verifyLedger(ledger, runA)).ok).toBe(true);
  });
});

describe('Ledger opened read-only', () => {
  it('refuses an empty file as not a ledger and leaves it empty', () => {
    const file = join(dir, 'empty.sqlite');
    writeFileSync(file, '');
    const error = failure(() => Ledger.open(file, { readOnly: true }));
    expect(error.code).toBe('LEDGER_NOT_A_LEDGER');
    expect(error.message).toContain(file);
    expect(statSync(file).size).toBe(0);
  });

  it('refuses a database of another program, with or without a schema version, and changes nothing', () => {
    for (const version of [0, LEDGER_SCHEMA_VERSION]) {
      const file = join(dir, `other-${version}.sqlite`);
      const raw = new DatabaseSync(file);
      raw.exec(`CREATE TABLE things (id INTEGER); PRAGMA user_version = ${version}`);
      raw.close();
      const before = readFileSync(file);
      expect(failure(() => Ledger.open(file, { readOnly: true })).code, String(version)).toBe(
        'LEDGER_NOT_A_LEDGER',
      );
      expect(readFileSync(file).equals(before), String(version)).toBe(true);
    }
  });

  it("a writer refuses another program's database too, rather than adding its table to it", () => {
    const file = join(dir, 'other.sqlite');
    const raw = new DatabaseSync(file);
    raw.exec('CREATE TABLE things (id INTEGER)');
    raw.close();
    const before = readFileSync(file);
    expect(failure(() => Ledger.open(file)).code).toBe('LEDGER_NOT_A_LEDGER');
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('reads a ledger, refuses to store into it, and does not migrate an older one', () => {
    const file = join(dir, 'l.sqlite');
    const writer = Ledger.open(file);
    writer.insert(callRecord(runA).record);
    writer.close();
    ledger = Ledger.open(file, { readOnly: true });
    expect(ledger.count()).toBe(1);
    expect(failure(() => ledger?.insert(callRecord(runB).record)).code).toBe('USAGE_ERROR');
    // A program that knows a newer schema than the file's says so instead of migrating on read.
    const raw = new DatabaseSync(file, { readOnly: true });
    try {
      const old = failure(() => checkLedgerSchema(raw, file, 'read', LEDGER_SCHEMA_VERSION + 1));
      expect(old.code).toBe('LEDGER_MIGRATION_REQUIRED');
      expect(old.details).toMatchObject({
        version: LEDGER_SCHEMA_VERSION,
        supported: LEDGER_SCHEMA_VERSION + 1,
      });
      expect(() => checkLedgerSchema(raw, file, 'write', LEDGER_SCHEMA_VERSION + 1)).not.toThrow();
    } finally {
      raw.close();
    }
  });

  it('refuses a file from a newer program, and a missing file', () => {
    const file = join(dir, 'future.sqlite');
    const raw = new DatabaseSync(file);
    raw.exec(`PRAGMA user_version = ${LEDGER_SCHEMA_VERSION + 1}`);
    raw.close();
    expect(failure(() => Ledger.open(file, { readOnly: true })).code).toBe('LEDGER_VERSION_UNSUPPORTED');
    const absent = join(dir, 'absent.sqlite');
    expect(failure(() => Ledger.open(absent, { readOnly: true, create: true })).code).toBe(
      'LEDGER_NOT_FOUND',
    );
    expect(existsSync(absent)).toBe(false);
  });
});

describe('verifyLedger with malformed rows', () => {
  it('fails each bad row on its own, naming it, and verifies the rest', async () => {
    const file = join(dir, 'l.sqlite');
    const writer = Ledger.open(file);
    for (const run of [runA, runB, runC]) writer.insert(callRecord(run).envelope);
    writer.close();
    const raw = new DatabaseSync(file);
    raw.prepare("UPDATE records SET envelope = 'not json' WHERE run_id = ?").run(runA);
    raw
      .prepare('UPDATE records SET leaf = CAST(\'"a string"\' AS BLOB), envelope = NULL WHERE run_id = ?')
      .run(runB);
    raw.close();
    ledger = Ledger.open(file, { readOnly: true });
    const report = await verifyLedger(ledger);
    expect(report).toMatchObject({ ok: false, total: 3, failed: 2 });
    expect(report.entries.map((entry) => [entry.run_id, entry.ok])).toEqual([
      [runA, false],
      [runB, false],
      [runC, true],
    ]);
    const [first, second] = report.entries;
    expect(first?.checks).toEqual([
      expect.objectContaining({ check: 'ledger:row', status: 'fail', code: 'LEDGER_CORRUPT' }),
    ]);
    expect(first?.checks[0]?.message).toContain(`row 1 (run ${runA}, sha256:${first?.record_digest})`);
    expect(second?.checks[0]?.message).toContain(`row 2 (run ${runB}, sha256:${second?.record_digest})`);
    expect(first?.coverage).toMatchObject({
      verdict: 'failed',
      record_digest: { status: 'not_checked' },
      signature: { status: 'not_checked' },
    });
    // Listing (newest first) still names the first bad row it meets instead of a bare failure.
    expect(failure(() => ledger?.list()).message).toContain(`row 2 (run ${runB}`);
  });
});
