import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LEDGER_DB } from '../../src/cli/commands/ledger.ts';
import { resolveGatewayConfig } from '../../src/gateway/operations/config.ts';
import { Ledger } from '../../src/ledger/index.ts';
import { buildCallRecord, DEFAULT_CONTROLS } from '../../src/provenance/index.ts';
import { runCli } from '../helpers/cli.ts';
import { callRecord } from '../unit/ledger/fixtures.ts';

const cli = (cwd: string, ...args: string[]) => runCli(args, { cwd });

const runA = '11111111-1111-4111-8111-111111111111';
const runB = '22222222-2222-4222-8222-222222222222';

describe('mcp-envelope ledger', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ledger-cli-'));
    writeFileSync(join(dir, 'a.json'), JSON.stringify(callRecord(runA, 'echo').envelope));
    writeFileSync(join(dir, 'b.json'), JSON.stringify(callRecord(runB, 'stats').record));
    writeFileSync(join(dir, 'not-a-record.json'), JSON.stringify({ hello: 'world' }));
    writeFileSync(join(dir, 'corrupt.sqlite'), 'plain text, not SQLite at all; long enough for a header\n');
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('adds records, idempotently', async () => {
    const first = await cli(dir, 'ledger', 'add', 'a.json', '--db', 'l.sqlite', '--upstream', 'legacy');
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toMatch(/^stored: +1 /);
    const again = await cli(dir, 'ledger', 'add', 'a.json', '--db', 'l.sqlite', '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ inserted: false, entry: { seq: 1, run_id: runA } });
    expect((await cli(dir, 'ledger', 'add', 'b.json', '--db', 'l.sqlite')).code).toBe(0);
  });

  it('lists newest first, filters by tool, and prints JSON', async () => {
    const human = await cli(dir, 'ledger', 'list', '--db', 'l.sqlite');
    expect(human.code).toBe(0);
    const [header, ...rows] = human.stdout.trim().split('\n');
    expect(header?.trim().split(/\s+/)).toEqual([
      'seq',
      'created_at',
      'run_id',
      'upstream/tool',
      'record',
      'digest',
    ]);
    expect(rows.map((row) => row.trim().split(/\s+/)[2])).toEqual([runB, runA]);
    const json = await cli(dir, 'ledger', 'list', '--db', 'l.sqlite', '--tool', 'echo', '--json');
    expect(JSON.parse(json.stdout).entries).toEqual([
      expect.objectContaining({ seq: 1, run_id: runA, tool: 'echo', upstream: 'legacy' }),
    ]);
    const limited = await cli(dir, 'ledger', 'list', '--db', 'l.sqlite', '--limit', '1', '--json');
    expect(JSON.parse(limited.stdout).entries.map((entry: { seq: number }) => entry.seq)).toEqual([2]);
  });

  it('shows a record by run id and by digest', async () => {
    const byRun = await cli(dir, 'ledger', 'show', runA, '--db', 'l.sqlite', '--json');
    expect(byRun.code).toBe(0);
    const [entry] = JSON.parse(byRun.stdout).entries;
    expect(entry.record.run_id).toBe(runA);
    expect(entry.envelope.schema_version).toBe('mcp.envelope.v0.1');
    const byDigest = await cli(dir, 'ledger', 'show', entry.record_digest, '--db', 'l.sqlite', '--json');
    expect(JSON.parse(byDigest.stdout).entries[0].run_id).toBe(runA);
  });

  it('verifies: exit 0 when intact, exit 1 after tampering', async () => {
    const intact = await cli(dir, 'ledger', 'verify', '--db', 'l.sqlite');
    expect(intact.code).toBe(0);
    expect(intact.stdout).toContain('2 of 2 records verified');
    // Each line says what was checked, so a record without digests is not taken for a checked one.
    expect(intact.stdout).toMatch(/^ok +\d+ \S+ \S+ \((?:verified|nothing to verify|partially verified)\)$/m);
    // Given a public key, the gateway's unsigned records fail: a key asks for signatures.
    const { publicKey } = generateKeyPairSync('ed25519');
    writeFileSync(join(dir, 'ledger.pub.pem'), publicKey.export({ type: 'spki', format: 'pem' }));
    const keyed = await cli(dir, 'ledger', 'verify', '--db', 'l.sqlite', '--public-key', 'ledger.pub.pem');
    expect(keyed.code).toBe(1);
    expect(keyed.stdout).toContain('not signed');
    // Without a folder, artifact content is not obtainable; either spelling of the flag gives one.
    const bare = await cli(dir, 'ledger', 'verify', '--db', 'l.sqlite', '--json');
    expect(bare.stdout).toContain('no artifacts folder given');
    for (const flag of ['--artifacts', '--artifacts-dir']) {
      const folder = await cli(dir, 'ledger', 'verify', '--db', 'l.sqlite', flag, '.', '--json');
      expect(folder.code, flag).toBe(0);
      expect(folder.stdout, flag).not.toContain('no artifacts folder given');
    }

    const raw = new DatabaseSync(join(dir, 'l.sqlite'));
    raw
      .prepare(
        'UPDATE records SET leaf = CAST(replace(CAST(leaf AS TEXT), \'"name":"stats"\', \'"name":"other"\') AS BLOB) WHERE run_id = ?',
      )
      .run(runB);
    raw.close();
    const tampered = await cli(dir, 'ledger', 'verify', '--db', 'l.sqlite', '--json');
    expect(tampered.code).toBe(1);
    const report = JSON.parse(tampered.stdout);
    expect(report).toMatchObject({ ok: false, total: 2, failed: 1 });
    expect((await cli(dir, 'ledger', 'verify', runA, '--db', 'l.sqlite')).code).toBe(0);
  });

  it('fails clearly on bad input, with exit 2 and a stable code', async () => {
    const cases: Array<[string[], string]> = [
      [['ledger', 'list', '--db', 'missing.sqlite'], 'LEDGER_NOT_FOUND'],
      [['ledger', 'verify', '--db', 'corrupt.sqlite'], 'LEDGER_CORRUPT'],
      [['ledger', 'show', 'no-such-run', '--db', 'l.sqlite'], 'LEDGER_RECORD_NOT_FOUND'],
      [['ledger', 'add', 'not-a-record.json', '--db', 'l.sqlite'], 'LEDGER_RECORD_INVALID'],
      [['ledger', 'list', '--db', 'l.sqlite', '--limit', 'many'], 'USAGE_ERROR'],
      [['ledger'], 'USAGE_ERROR'],
    ];
    for (const [args, code] of cases) {
      const run = await cli(dir, ...args, '--json');
      expect(run.code, args.join(' ')).toBe(2);
      expect(JSON.parse(run.stderr).error.code, args.join(' ')).toBe(code);
      expect(run.stdout).toBe('');
    }
  });
});

describe('mcp-envelope ledger without --db', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ledger-default-'));
    writeFileSync(join(dir, 'a.json'), JSON.stringify(callRecord(runA, 'echo').envelope));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('uses the file the gateway writes by default', () => {
    const config = resolveGatewayConfig({ upstreams: [{ name: 'u', stdio: { command: 'node' } }] }, dir, {
      env: {},
    });
    expect(config.ledger.path).toBe(resolve(dir, DEFAULT_LEDGER_DB));
  });

  it('says where it looked, and how to point elsewhere, when there is none', async () => {
    const run = await cli(dir, 'ledger', 'list');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^error\[LEDGER_NOT_FOUND\]: No ledger at data\/ledger\.sqlite, .*--db FILE\n$/,
    );
  });

  it('adds to, lists, shows and verifies that file', async () => {
    const added = await cli(dir, 'ledger', 'add', 'a.json', '--upstream', 'legacy');
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const listed = await cli(dir, 'ledger', 'list', '--json');
    expect(JSON.parse(listed.stdout).entries).toEqual([expect.objectContaining({ run_id: runA })]);
    // The same file as an explicit --db names.
    const explicit = await cli(dir, 'ledger', 'list', '--db', DEFAULT_LEDGER_DB, '--json');
    expect(explicit.stdout).toBe(listed.stdout);
    expect((await cli(dir, 'ledger', 'show', runA)).code).toBe(0);
    expect((await cli(dir, 'ledger', 'verify')).code).toBe(0);
  });
});

describe('mcp-envelope ledger reads without writing', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ledger-read-'));
    writeFileSync(join(dir, 'a.json'), JSON.stringify(callRecord(runA, 'echo').envelope));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const readers = (db: string): string[][] => [
    ['ledger', 'verify', '--db', db],
    ['ledger', 'list', '--db', db],
    ['ledger', 'show', runA, '--db', db],
  ];

  it('refuses an empty file with LEDGER_NOT_A_LEDGER and leaves it empty', async () => {
    writeFileSync(join(dir, 'empty.sqlite'), '');
    for (const args of readers('empty.sqlite')) {
      const run = await cli(dir, ...args, '--json');
      expect(run.code, args.join(' ')).toBe(2);
      expect(JSON.parse(run.stderr).error.code, args.join(' ')).toBe('LEDGER_NOT_A_LEDGER');
      expect(run.stdout).toBe('');
    }
    const human = await cli(dir, 'ledger', 'verify', '--db', 'empty.sqlite');
    expect(human.stderr).toMatch(
      /^error\[LEDGER_NOT_A_LEDGER\]: .*empty\.sqlite is not a ledger: it is empty/,
    );
    expect(statSync(join(dir, 'empty.sqlite')).size).toBe(0);
    expect(existsSync(join(dir, 'empty.sqlite-wal'))).toBe(false);
  });

  it("refuses another program's SQLite database and changes nothing in it", async () => {
    const file = join(dir, 'notes.sqlite');
    const raw = new DatabaseSync(file);
    raw.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')");
    raw.close();
    const before = readFileSync(file);
    for (const args of [...readers('notes.sqlite'), ['ledger', 'add', 'a.json', '--db', 'notes.sqlite']]) {
      const run = await cli(dir, ...args, '--json');
      expect(run.code, args.join(' ')).toBe(2);
      expect(JSON.parse(run.stderr).error.code, args.join(' ')).toBe('LEDGER_NOT_A_LEDGER');
    }
    expect(readFileSync(file).equals(before)).toBe(true);
    const after = new DatabaseSync(file, { readOnly: true });
    expect(after.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'delete' });
    expect(after.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all()).toEqual([
      { name: 'notes' },
    ]);
    after.close();
  });

  it('a ledger is read as it is: readers leave its bytes and journal mode alone', async () => {
    expect((await cli(dir, 'ledger', 'add', 'a.json', '--db', 'l.sqlite')).code).toBe(0);
    // A copy handed to an auditor is typically in rollback mode (WAL side files do not travel with it).
    const raw = new DatabaseSync(join(dir, 'l.sqlite'));
    raw.exec('PRAGMA journal_mode = DELETE');
    raw.close();
    const before = readFileSync(join(dir, 'l.sqlite'));
    for (const args of readers('l.sqlite')) expect((await cli(dir, ...args)).code, args.join(' ')).toBe(0);
    expect(readFileSync(join(dir, 'l.sqlite')).equals(before)).toBe(true);
  });

  it('verifies every row when some are malformed, naming each bad one', async () => {
    const db = 'rows.sqlite';
    const runs = [runA, runB, '33333333-3333-4333-8333-333333333333', '44444444-4444-4444-8444-444444444444'];
    for (const [index, run] of runs.entries()) {
      writeFileSync(join(dir, `r${index}.json`), JSON.stringify(callRecord(run, 'echo').record));
      expect((await cli(dir, 'ledger', 'add', `r${index}.json`, '--db', db)).code).toBe(0);
    }
    const raw = new DatabaseSync(join(dir, db));
    raw.prepare('UPDATE records SET leaf = CAST(\'{"truncated":\' AS BLOB) WHERE run_id = ?').run(runB);
    raw.prepare("UPDATE records SET leaf = CAST('[1,2,3]' AS BLOB) WHERE run_id = ?").run(runs[2] as string);
    const digests = raw.prepare('SELECT seq, record_digest FROM records ORDER BY seq').all() as Array<{
      seq: number;
      record_digest: string;
    }>;
    raw.close();

    const json = await cli(dir, 'ledger', 'verify', '--db', db, '--json');
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ ok: false, total: 4, failed: 2 });
    expect(report.entries.map((entry: { seq: number; ok: boolean }) => [entry.seq, entry.ok])).toEqual([
      [1, true],
      [2, false],
      [3, false],
      [4, true],
    ]);
    for (const seq of [2, 3]) {
      const entry = report.entries[seq - 1];
      expect(entry).toMatchObject({ run_id: runs[seq - 1], record_digest: digests[seq - 1]?.record_digest });
      expect(entry.coverage.verdict).toBe('failed');
      const [check] = entry.checks;
      expect(check).toMatchObject({ check: 'ledger:row', status: 'fail' });
      expect(check.message).toContain(
        `row ${seq} (run ${runs[seq - 1]}, sha256:${digests[seq - 1]?.record_digest})`,
      );
    }
    expect(report.entries[1].checks[0].code).toBe('LEDGER_CORRUPT');

    const human = await cli(dir, 'ledger', 'verify', '--db', db);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(new RegExp(`^FAIL +2 ${runB} echo \\(failed\\)$`, 'm'));
    expect(human.stdout).toContain(
      `row 2 (run ${runB}, sha256:${digests[1]?.record_digest}) does not hold JSON`,
    );
    expect(human.stdout).toContain('2 of 4 records verified');
    // One run id still selects its row, malformed or not.
    expect((await cli(dir, 'ledger', 'verify', runB, '--db', db, '--json')).code).toBe(1);
  });

  it('says in its help what a clean verify does not prove', async () => {
    const help = await cli(dir, 'ledger', 'verify', '--help');
    expect(help.stdout).toMatch(/transparency log/);
    expect(help.stdout).toMatch(/a deleted, reordered or smuggled row fails/);
    expect(help.stdout).toMatch(/a ledger rewritten wholly, log and checkpoints\nincluded, passes unless/);
    expect(help.stdout).toMatch(/Without records signed by the gateway/);
  });

  it('shows a record filed with its envelope once: the envelope points at it, --json keeps both', async () => {
    const db = 'show-once.sqlite';
    const { envelope } = callRecord('55555555-5555-4555-8555-555555555555');
    writeFileSync(join(dir, 'e.json'), JSON.stringify(envelope));
    expect((await cli(dir, 'ledger', 'add', 'e.json', '--db', db)).code).toBe(0);
    const shown = await cli(dir, 'ledger', 'show', '55555555-5555-4555-8555-555555555555', '--db', db);
    expect(shown.stdout.match(/"run_id": "55555555/g)).toHaveLength(2); // the entry's and the record's own
    expect(JSON.parse(shown.stdout).envelope.provenance).toBe('(the record above)');
    const json = await cli(
      dir,
      '--json',
      'ledger',
      'show',
      '55555555-5555-4555-8555-555555555555',
      '--db',
      db,
    );
    const [entry] = JSON.parse(json.stdout).entries;
    expect(entry.envelope.provenance).toEqual(entry.record);
  });
});

describe('mcp-envelope ledger verify counts what it verified', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ledger-count-'));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A minimal-mode record: with `digests`, its artifacts carry sha256 digests but the record has no digest of its own. */
  function minimalRecord(runId: string, digests: boolean) {
    return buildCallRecord({
      runId,
      tool: { name: 'echo', version: '1.0.0', adapter: 'mcp' },
      action: 'wrapped',
      inputs: [{ id: 'arguments', mediaType: 'application/json', content: { json: { text: runId } } }],
      result: { text: runId },
      attached: true,
      controls: { ...DEFAULT_CONTROLS, captureProvenance: true, captureArtifacts: digests },
    });
  }

  it('counts a record with nothing verified or nothing to verify apart from the verified ones', async () => {
    const records = [
      callRecord('a1111111-1111-4111-8111-111111111111').envelope,
      callRecord('a2222222-2222-4222-8222-222222222222').envelope,
      // Digests of its arguments and result, neither of which is at hand: nothing could be checked.
      minimalRecord('a3333333-3333-4333-8333-333333333333', true),
      minimalRecord('a4444444-4444-4444-8444-444444444444', false),
      minimalRecord('a5555555-5555-4555-8555-555555555555', false),
    ];
    for (const [index, value] of records.entries()) {
      writeFileSync(join(dir, `c${index}.json`), JSON.stringify(value));
      expect((await cli(dir, 'ledger', 'add', `c${index}.json`, '--db', 'count.sqlite')).code).toBe(0);
    }
    const human = await cli(dir, 'ledger', 'verify', '--db', 'count.sqlite');
    expect(human.code, human.stdout).toBe(0);
    expect(human.stdout).toMatch(/^ok +3 \S+ echo \(nothing verified\)$/m);
    expect(human.stdout.trimEnd().split('\n').at(-1)).toBe(
      '2 of 5 records verified (2 partially), 1 with nothing verified, 2 with nothing to verify',
    );
    const json = await cli(dir, 'ledger', 'verify', '--db', 'count.sqlite', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: true,
      total: 5,
      failed: 0,
      verified: 2,
      counts: {
        verified: 0,
        partially_verified: 2,
        nothing_verified: 1,
        nothing_to_verify: 2,
        failed: 0,
      },
    });
  });

  it('says so when none of the records could be verified', async () => {
    writeFileSync(
      join(dir, 'bare.json'),
      JSON.stringify(minimalRecord('b1111111-1111-4111-8111-111111111111', false)),
    );
    expect((await cli(dir, 'ledger', 'add', 'bare.json', '--db', 'bare.sqlite')).code).toBe(0);
    const run = await cli(dir, 'ledger', 'verify', '--db', 'bare.sqlite');
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(
      'NOTHING VERIFIED: 0 of 1 records verified, 1 with nothing to verify',
    );
  });

  it('does not pass an empty ledger: exit 1, saying it holds no records', async () => {
    Ledger.open(join(dir, 'empty.sqlite'), { create: true }).close();
    const human = await cli(dir, 'ledger', 'verify', '--db', 'empty.sqlite');
    expect(human).toMatchObject({ code: 1, stdout: 'NOTHING VERIFIED: the ledger holds no records\n' });
    const json = await cli(dir, 'ledger', 'verify', '--db', 'empty.sqlite', '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, total: 0, verified: 0, entries: [] });
  });
});
