import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LEDGER_DB } from '../../src/cli/commands/ledger.ts';
import { resolveGatewayConfig } from '../../src/gateway/operations/config.ts';
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
        'UPDATE records SET record = replace(record, \'"name":"stats"\', \'"name":"other"\') WHERE run_id = ?',
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
