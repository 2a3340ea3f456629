import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../src/ledger/index.ts';
import { leafHash, MemoryTree } from '../../../src/ledger/log/hashing.ts';
import { callRecord } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'ledger-log-migration-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('migration 2: the transparency log', () => {
  it('appends a leaf with each stored row, and builds the leaves of a version-1 ledger in seq order', () => {
    const file = join(dir, 'l.sqlite');
    const ledger = Ledger.open(file);
    for (let i = 0; i < 5; i++) {
      ledger.insert(callRecord(`00000000-0000-4000-8000-00000000000${i}`).envelope, { upstream: 'u' });
    }
    ledger.insert(callRecord('00000000-0000-4000-8000-000000000000').envelope);
    const log = ledger.log();
    expect(log.size()).toBe(5);
    const before = [...log.leaves()];
    const root = Buffer.from(log.root()).toString('hex');
    expect(root).toBe(
      Buffer.from(new MemoryTree(before.map((l) => leafHash(l.leaf))).root()).toString('hex'),
    );
    ledger.close();

    // Back to version 1, as a file written by the previous release.
    const db = new DatabaseSync(file);
    db.exec(
      'DROP TABLE log_leaves; DROP TABLE log_nodes; DROP TABLE log_checkpoints; DROP TABLE log_meta; PRAGMA user_version = 1',
    );
    db.close();
    expect(() => Ledger.open(file, { readOnly: true })).toThrow(/needs migrating/);
    const migrated = Ledger.open(file);
    expect(migrated.version()).toBe(2);
    expect([...migrated.log().leaves()].map((l) => Buffer.from(l.leaf).toString())).toEqual(
      before.map((l) => Buffer.from(l.leaf).toString()),
    );
    expect(Buffer.from(migrated.log().root()).toString('hex')).toBe(root);
    migrated.close();
  });
});
