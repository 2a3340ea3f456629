/**
 * A ledger changed behind its log's back: each kind of tampering is caught by
 * `ledger verify` (exit 1), and the message names what and where.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJsonLossless } from '../../src/canonical/index.ts';
import { Ledger, writeCheckpoint } from '../../src/ledger/index.ts';
import { leafBytes } from '../../src/ledger/log/leaf.ts';
import { TreeStore } from '../../src/ledger/log/tree.ts';
import type { StoredRow } from '../../src/ledger/store.ts';
import { signRecord } from '../../src/provenance/index.ts';
import type { ProvRecord } from '../../src/provenance/record.ts';
import { runBin, runCli } from '../helpers/cli.ts';
import { callRecord } from '../unit/ledger/fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'ledger-tamper-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const keys = generateKeyPairSync('ed25519');
const intruder = generateKeyPairSync('ed25519');
const pem = (key: KeyObject, type: 'pkcs8' | 'spki') => key.export({ type, format: 'pem' }).toString();
const run = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

let counter = 0;
/** A signed ledger of `n` entries with checkpoints at 3 and at n, the latter also kept apart as cp.txt. */
function ledger(n = 5): { dir: string; db: string } {
  const dir = join(root, `case-${counter++}`);
  const db = join(dir, 'l.sqlite');
  const store = Ledger.open(db);
  for (let i = 1; i <= n; i++) {
    const record = signRecord(callRecord(run(i), i % 2 ? 'echo' : 'stats').record, keys.privateKey);
    store.insert(record, { upstream: 'up' });
    if (i === 3) writeFileSync(join(dir, 'cp3.txt'), writeCheckpoint(store, keys.privateKey).text);
  }
  writeFileSync(join(dir, 'cp.txt'), writeCheckpoint(store, keys.privateKey).text);
  store.close();
  writeFileSync(join(dir, 'public.pem'), pem(keys.publicKey, 'spki'));
  return { dir, db };
}

function sql(db: string, text: string): void {
  const handle = new DatabaseSync(db);
  handle.exec(text);
  handle.close();
}

async function verify(dir: string, ...extra: string[]) {
  return runCli(['ledger', 'verify', '--db', 'l.sqlite', '--public-key', 'public.pem', ...extra], {
    cwd: dir,
  });
}

describe('ledger verify catches tampering', () => {
  it('passes an untouched ledger, against its own checkpoints and one kept apart', async () => {
    const { dir } = ledger();
    const result = await verify(dir, '--checkpoint', 'cp3.txt');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^given checkpoint mcp-envelope\/[0-9a-f]{32} at size 3: consistent, signed by the given key$/m,
    );
    expect(result.stdout).toMatch(/^log: 5 entries, root /m);
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe('5 of 5 records verified (5 partially)');
  });

  it('a deleted row', async () => {
    const { dir, db } = ledger();
    sql(db, 'DELETE FROM records WHERE seq = 3');
    const result = await verify(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      'TAMPERED leaf 2 (seq 3): row seq 3 was deleted from records, its leaf with it',
    );
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe(
      'LEDGER TAMPERED: 1 problem in the transparency log (TAMPERED lines above)',
    );
  });

  it('one byte of one leaf changed', async () => {
    const { dir, db } = ledger();
    // "created_at":"2026-…" becomes "created_at":"2027-…" in leaf 1's bytes only.
    sql(
      db,
      `UPDATE records SET leaf = CAST(replace(CAST(leaf AS TEXT), '"created_at":"20', '"created_at":"30') AS BLOB) WHERE seq = 2`,
    );
    const result = await verify(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /TAMPERED leaf 1 \(seq 2\): column created_at differs from the log: logged "30/,
    );
    expect(result.stdout).toMatch(
      /TAMPERED stored checkpoint \S+ at size 5: the first 5 entries of the log do not have its root hash/,
    );
    expect(result.stdout).toContain('TAMPERED the stored subtree hashes do not match the leaves');
  });

  for (const [column, value] of [
    ['tool', "'other'"],
    ['upstream', 'NULL'],
    ['created_at', "'2020-01-01T00:00:00.000Z'"],
  ] as const) {
    it(`the ${column} column changed`, async () => {
      const { dir, db } = ledger();
      sql(db, `UPDATE records SET ${column} = ${value} WHERE seq = 4`);
      const result = await verify(dir, '--json');
      expect(result.code).toBe(1);
      const report = JSON.parse(result.stdout);
      expect(report.ok).toBe(false);
      expect(report.log.problems).toEqual([
        expect.objectContaining({ code: 'LEDGER_TAMPERED', seq: 4, index: 3, column }),
      ]);
      expect(report.log.problems[0].message).toMatch(
        new RegExp(`^leaf 3 \\(seq 4\\): column ${column} differs from the log: logged `),
      );
    });
  }

  // The viewer's columns are only an index: each is recomputed from the leaf and the row.
  for (const [column, value] of [
    ['principal', "'someone-else'"],
    ['outcome', "'error'"],
    ['error_code', "'INTERNAL_ERROR'"],
  ] as const) {
    it(`the viewer's ${column} column changed`, async () => {
      const { dir, db } = ledger();
      sql(db, `UPDATE records SET ${column} = ${value} WHERE seq = 4`);
      const result = await verify(dir, '--json');
      expect(result.code).toBe(1);
      const report = JSON.parse(result.stdout);
      expect(report.log.problems).toEqual([
        expect.objectContaining({ code: 'LEDGER_TAMPERED', seq: 4, index: 3, column }),
      ]);
      expect(report.log.problems[0].message).toMatch(
        new RegExp(`^leaf 3 \\(seq 4\\): column ${column} differs from the log: the log gives .*, row has "`),
      );
    });
  }

  it("the viewer's record_parents index changed", async () => {
    const { dir, db } = ledger();
    sql(db, "INSERT INTO record_parents (parent, seq) VALUES ('smuggled-parent', 4), ('ghost', 99)");
    const result = await verify(dir, '--json');
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report.log.problems).toEqual([
      expect.objectContaining({ seq: 4, index: 3, column: 'record_parents' }),
      expect.objectContaining({ seq: 99, column: 'record_parents' }),
    ]);
    expect(report.log.problems[0].message).toBe(
      'leaf 3 (seq 4): record_parents differs from the log: the log gives [], the table has ["smuggled-parent"]',
    );
  });

  it('two rows reordered', async () => {
    const { dir, db } = ledger();
    sql(
      db,
      'UPDATE records SET seq = 100 WHERE seq = 2; UPDATE records SET seq = 2 WHERE seq = 3; UPDATE records SET seq = 3 WHERE seq = 100',
    );
    const result = await verify(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      'TAMPERED leaf 1 (seq 2): row seq 2 holds the entry logged at leaf 2: rows were reordered',
    );
    expect(result.stdout).toContain(
      'TAMPERED leaf 2 (seq 3): row seq 3 holds the entry logged at leaf 1: rows were reordered',
    );
  });

  it('the tail truncated, leaves with it', async () => {
    const { dir, db } = ledger();
    sql(db, 'DELETE FROM records WHERE seq > 3');
    const result = await verify(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /TAMPERED stored checkpoint \S+ at size 5: the log holds only 3 entries \(truncated: leaves 3\.\.4 are gone\)/,
    );
    // And with the ledger's own checkpoints deleted too, the one kept apart still catches it.
    sql(db, 'DELETE FROM log_checkpoints');
    const apart = await verify(dir, '--checkpoint', 'cp.txt');
    expect(apart.code).toBe(1);
    expect(apart.stdout).toMatch(/TAMPERED the given checkpoint \S+ at size 5: the log holds only 3 entries/);
  });

  it('every row and leaf wiped', async () => {
    const { dir, db } = ledger();
    sql(db, 'DELETE FROM records');
    const result = await verify(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /TAMPERED stored checkpoint \S+ at size 5: the ledger's log is empty \(wiped\)/,
    );
    expect(result.stdout).not.toMatch(/^5 of 5/m);
  });

  it('the file wiped (a real process: exit 1 and the code)', async () => {
    const { dir, db } = ledger();
    writeFileSync(db, '');
    rmSync(`${db}-wal`, { force: true });
    rmSync(`${db}-shm`, { force: true });
    const result = await runBin(
      ['ledger', 'verify', '--db', 'l.sqlite', '--public-key', 'public.pem', '--checkpoint', 'cp.txt'],
      { cwd: dir },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^error\[LEDGER_TAMPERED\]: The checkpoint \S+ says the ledger held 5 entries, but .* is not a ledger: it is empty .*: the ledger was wiped or replaced/m,
    );
    // Without a checkpoint kept apart, an empty file is (as before) no ledger at all.
    expect((await runBin(['ledger', 'verify', '--db', 'l.sqlite'], { cwd: dir })).code).not.toBe(0);
  });

  it('history rewritten, log rebuilt and checkpoint re-signed with another key', async () => {
    const { dir, db } = ledger();
    const handle = new DatabaseSync(db);
    const rows = handle.prepare('SELECT * FROM records ORDER BY seq').all() as unknown as StoredRow[];
    handle.exec('DELETE FROM records; DELETE FROM log_checkpoints');
    // Every row written again, one upstream changed, each with a leaf and nodes as the store writes them.
    const tree = new TreeStore(handle);
    const insert = handle.prepare(
      `INSERT INTO records (seq, run_id, tool, upstream, record_digest, created_at, envelope, leaf, nodes)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const row of rows) {
      const upstream = row.seq === 2 ? 'elsewhere' : row.upstream;
      const logged = parseJsonLossless(Buffer.from(row.leaf as Uint8Array).toString('utf8'))
        .lossless as unknown as {
        record: ProvRecord;
      };
      const leaf = leafBytes({
        index: row.seq - 1,
        run_id: row.run_id,
        tool: row.tool,
        upstream,
        principal: null,
        created_at: row.created_at,
        record_digest: row.record_digest,
        record: logged.record,
        envelope: null,
      });
      const { nodes } = tree.edge().next(leaf);
      insert.run(
        row.seq,
        row.run_id,
        row.tool,
        upstream,
        row.record_digest,
        row.created_at,
        null,
        leaf,
        nodes,
      );
    }
    handle.close();
    const store = Ledger.open(db);
    writeCheckpoint(store, intruder.privateKey);
    store.close();
    const result = await verify(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /TAMPERED stored checkpoint \S+ at size 5 is not signed by the given public key/,
    );
    const apart = await verify(dir, '--checkpoint', 'cp.txt');
    expect(apart.stdout).toMatch(
      /TAMPERED the given checkpoint \S+ at size 5: the first 5 entries of the log do not have its root hash/,
    );
  });

  it('a checkpoint from a forked log', async () => {
    const { dir, db } = ledger(3);
    // The fork: a copy of the ledger that then went its own way, signed by the same key.
    const fork = join(dir, 'fork.sqlite');
    copyFileSync(db, fork);
    const forked = Ledger.open(fork);
    forked.insert(callRecord(run(99)).record);
    writeFileSync(join(dir, 'fork.txt'), writeCheckpoint(forked, keys.privateKey).text);
    forked.close();
    const original = Ledger.open(db);
    original.insert(callRecord(run(4)).record);
    writeFileSync(join(dir, 'cp4.txt'), writeCheckpoint(original, keys.privateKey).text);
    original.close();
    const result = await verify(dir, '--checkpoint', 'fork.txt');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /TAMPERED the given checkpoint \S+ at size 4: the first 4 entries of the log do not have its root hash \(history rewritten, or a checkpoint of another log\)/,
    );
    const consistency = await runCli(['ledger', 'consistency', 'cp3.txt', 'fork.txt', '--db', 'l.sqlite'], {
      cwd: dir,
    });
    expect(consistency.code).toBe(1);
    expect(consistency.stderr).toMatch(
      /error\[LEDGER_TAMPERED\]: The log does not have the root of the checkpoint at size 4/,
    );
    const honest = await runCli(
      [
        'ledger',
        'consistency',
        'cp3.txt',
        'cp4.txt',
        '--db',
        'l.sqlite',
        '--public-key',
        'public.pem',
        '--json',
      ],
      { cwd: dir },
    );
    expect(honest.code).toBe(0);
    expect(JSON.parse(honest.stdout)).toMatchObject({ old_size: 3, new_size: 4 });
  });

  it('a stored checkpoint edited', async () => {
    const { dir, db } = ledger();
    sql(db, 'UPDATE log_checkpoints SET note = replace(note, char(10) || char(10), char(10)) WHERE id = 1');
    const result = await verify(dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      'TAMPERED stored checkpoint 1 was changed: Not a checkpoint: no blank line between the body and the signatures',
    );
  });

  it('one record verified by its run id: its row against its leaf, and its leaf in the newest checkpoint', async () => {
    const { dir, db } = ledger();
    const one = (key: string, ...extra: string[]) => verify(dir, key, ...extra);
    const clean = await one(run(4));
    expect(clean.code, clean.stdout).toBe(0);
    expect(clean.stdout).toMatch(/^stored checkpoint \S+ at size 5: consistent, signed by the given key$/m);
    // Another row's change is not this record's: it still verifies, and the whole ledger does not.
    sql(db, "UPDATE records SET tool = 'other' WHERE seq = 2");
    expect((await one(run(4))).code).toBe(0);
    const changed = await one(run(2));
    expect(changed.code).toBe(1);
    expect(changed.stdout).toMatch(
      /^TAMPERED leaf 1 \(seq 2\): column tool differs from the log: logged "stats", row has "other" \[column tool\]$/m,
    );
    // A leaf rewritten with its stored hash: the row agrees with it, the checkpoint does not.
    const forged = await one(run(3));
    expect(forged.code).toBe(0);
    sql(
      db,
      `UPDATE records SET leaf = CAST(replace(CAST(leaf AS TEXT), '"principal":null', '"principal":"x"') AS BLOB) WHERE seq = 3`,
    );
    const rewritten = await one(run(3));
    expect(rewritten.code).toBe(1);
    expect(rewritten.stdout).toContain(
      'TAMPERED leaf 2 (seq 3): the leaf bytes are not those the log hashed for it (the leaf was rewritten)',
    );
  });

  it('keeps an empty ledger with no checkpoint at NOTHING VERIFIED', async () => {
    const dir = join(root, 'empty');
    Ledger.open(join(dir, 'l.sqlite')).close();
    const result = await runCli(['ledger', 'verify', '--db', 'l.sqlite'], { cwd: dir });
    expect(result).toMatchObject({ code: 1, stdout: 'NOTHING VERIFIED: the ledger holds no records\n' });
  });
});
