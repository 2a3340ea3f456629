import { cp, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, REPO_ROOT, runCli, type TempDir, tempDir } from '../helpers/cli.ts';

let dir: TempDir;
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

function record(methods: string[], extra: object = {}) {
  return {
    schema_version: 'prov.record.v0.1',
    run_id: 'run-1',
    tool: { name: 't', version: '1' },
    inputs: [],
    outputs: [],
    methods,
    evidence: [],
    parents: [],
    ...extra,
  };
}

describe('method commands', () => {
  it('list-methods lists the catalog, in both modes', async () => {
    const json = await runCli(['--json', 'list-methods']);
    expect(json.code).toBe(0);
    const catalog = JSON.parse(json.stdout);
    expect(catalog.methods.map((method: { id: string }) => method.id)).toContain('lineage.parent.link');
    const human = await runCli(['list-methods']);
    expect(human.stdout).toContain('integrity.digest.sha256');
  });

  it('validate-methods accepts a record whose claims hold', async () => {
    const file = await dir.file('ok.json', record(['engine.prov.record_v0_1.build']));
    expect((await runCli(['validate-methods', file])).code).toBe(0);
  });

  it('validate-methods fails a claimed method whose contract does not hold', async () => {
    const file = await dir.file('claims.json', record(['lineage.parent.link']));
    const run = await runCli(['--json', 'validate-methods', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('lineage.parent.link');
  });

  it('validate-methods rejects bad syntax and reserved namespaces', async () => {
    for (const id of ['Bad.Method', 'policy.retention.apply']) {
      const file = await dir.file('bad.json', record([id]));
      expect((await runCli(['validate-methods', file])).code, id).toBe(1);
    }
  });

  it('validate-methods warns about unknown methods, and --strict fails them', async () => {
    const file = await dir.file('unknown.json', record(['vendor.custom.step']));
    expect((await runCli(['validate-methods', file])).code).toBe(0);
    expect((await runCli(['validate-methods', '--strict', file])).code).toBe(1);
  });

  it('validate-manifest checks the manifest', async () => {
    expect((await runCli(['validate-manifest', 'prov-capabilities.json'])).code).toBe(0);
    const manifest = JSON.parse(await readFile(join(REPO_ROOT, 'prov-capabilities.json'), 'utf8'));
    manifest.implements.push('policy.retention.apply');
    const file = await dir.file('manifest.json', manifest);
    const run = await runCli(['--json', 'validate-manifest', file]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).valid).toBe(false);
  });
});

describe('vector commands', () => {
  it('check-vector ID runs one folder', async () => {
    const run = await runCli(['--json', 'check-vector', 'integrity.digest.sha256']);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ ok: true, failed: 0 });
    expect(report.passed).toBeGreaterThan(1);
  });

  it('check-vector --all runs every folder', async () => {
    const run = await runCli(['--json', 'check-vector', '--all']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).passed).toBeGreaterThanOrEqual(20);
  });

  it('check-vector --dir fails on a broken copy', async () => {
    const vectors = join(dir.path, 'vectors');
    await cp(join(REPO_ROOT, 'vectors'), vectors, { recursive: true });
    const path = join(vectors, 'integrity.digest.sha256', 'negative', 'wrong_length.json');
    const document = JSON.parse(await readFile(path, 'utf8'));
    document.artifact.digest.value = 'a'.repeat(64);
    await writeFile(path, JSON.stringify(document));
    const one = await runCli(['check-vector', '--dir', vectors, 'integrity.digest.sha256']);
    expect(one.code).toBe(1);
    expect((await runCli(['check-vector', '--all', '--dir', vectors])).code).toBe(1);
    expect((await runCli(['check-vector', '--dir', vectors, 'lineage.parent.link'])).code).toBe(0);
  });

  it('check-vector of an unknown id or without an id is a usage error', async () => {
    const unknown = await runCli(['check-vector', 'no.such.vector']);
    expect(unknown.code).toBe(2);
    expect(errorCode(unknown)).toBe('VECTOR_NOT_FOUND');
    expect((await runCli(['check-vector', '../etc'])).code).toBe(2);
    expect((await runCli(['check-vector'])).code).toBe(2);
  });

  it('list-vectors lists folders and cases', async () => {
    const run = await runCli(['--json', 'list-vectors']);
    expect(run.code).toBe(0);
    const folders = JSON.parse(run.stdout).folders.map((entry: { folder: string }) => entry.folder);
    expect(folders).toContain('lineage.parent.link');
    expect((await runCli(['list-vectors', '--dir', join(dir.path, 'missing')])).code).toBe(2);
  });

  it('validate-schemas checks the bundled schemas and a folder', async () => {
    const run = await runCli(['--json', 'validate-schemas']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).ok).toBe(true);
    const bad = await dir.file('bad-schemas/broken.schema.json', '{"type": 5}');
    const failing = await runCli(['validate-schemas', dirname(bad)]);
    expect(failing.code).toBe(1);
  });

  it('self-test passes', async () => {
    const run = await runCli(['--json', 'self-test']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).ok).toBe(true);
  });

  it('conformance-report -o writes the report, with level L3', async () => {
    const out = join(dir.path, 'report.json');
    const run = await runCli(['conformance-report', 'prov-capabilities.json', '-o', out]);
    expect(run.code).toBe(0);
    const report = JSON.parse(await readFile(out, 'utf8'));
    expect(report.level).toMatchObject({ level: 3, name: 'L3-lineage' });
    expect(report.ok).toBe(true);
  });

  it('conformance-report fails an invalid manifest with exit 1, and a missing one with exit 2', async () => {
    const empty = await dir.file('empty-manifest.json', {});
    const run = await runCli(['--json', 'conformance-report', empty]);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ ok: false, manifest: { valid: false }, level: { level: 0 } });
    const missing = await runCli(['conformance-report', join(dir.path, 'none.json')]);
    expect(missing.code).toBe(2);
    expect(errorCode(missing)).toBe('INPUT_UNREADABLE');
  });
});
