import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUNDLED_VECTORS_DIR,
  buildConformanceReport,
  listVectorFolders,
  loadVectorFolder,
  runVectors,
  type VectorRun,
} from '../../src/conformance/index.ts';

const MANIFEST_PATH = new URL('../../prov-capabilities.json', import.meta.url);
const folders = await listVectorFolders(BUNDLED_VECTORS_DIR);
const cases = (
  await Promise.all(folders.map((folder) => loadVectorFolder(BUNDLED_VECTORS_DIR, folder)))
).flat();

describe('the bundled prov-spec vectors', () => {
  it('are all present', () => {
    expect(folders).toEqual([
      'adapter.wrap.envelope_v0_1',
      'engine.extract.evidence.json_pointer',
      'engine.prov.artifact.register_output',
      'integrity.digest.sha256',
      'lineage.parent.link',
      'method_id_syntax',
    ]);
    expect(cases.length).toBeGreaterThanOrEqual(20);
    expect(cases.some((vectorCase) => vectorCase.kind === 'negative')).toBe(true);
  });

  let run: VectorRun;
  beforeAll(async () => {
    run = await runVectors(BUNDLED_VECTORS_DIR);
  });

  it.each(cases.map((vectorCase) => [vectorCase.id, vectorCase.expect] as const))(
    '%s behaves as expected (%s)',
    (id, expected) => {
      const result = run.cases.find((candidate) => candidate.id === id);
      expect(result, id).toBeDefined();
      expect(result?.expect).toBe(expected);
      expect(result?.passed, result?.detail).toBe(true);
    },
  );

  it('the sha256 vector agrees with an independent computation', async () => {
    const dir = join(BUNDLED_VECTORS_DIR, 'integrity.digest.sha256');
    const expected = JSON.parse(await readFile(join(dir, 'expected.json'), 'utf8'));
    const hex = createHash('sha256').update(expected.canonical_form, 'utf8').digest('hex');
    expect(hex).toBe(expected.digest.value);
  });

  it('prov-capabilities.json reaches L3', async () => {
    const manifest = JSON.parse(await readFile(MANIFEST_PATH, 'utf8'));
    const report = buildConformanceReport(manifest, run);
    expect(report.level.level).toBe(3);
    expect(report.level.name).toBe('L3-lineage');
    expect(report.ok).toBe(true);
    expect(report.manifest.valid).toBe(true);
    expect(report.vectors.failed).toBe(0);
  });

  it('a manifest that does not claim lineage stays at L2', async () => {
    const manifest = JSON.parse(await readFile(MANIFEST_PATH, 'utf8'));
    manifest.implements = manifest.implements.filter((id: string) => !id.startsWith('lineage.'));
    expect(buildConformanceReport(manifest, run).level.level).toBe(2);
  });
});

describe('broken vectors are reported as failing', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mcp-envelope-vectors-'));
    await cp(BUNDLED_VECTORS_DIR, dir, { recursive: true });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a main case whose expected digest is wrong fails', async () => {
    const path = join(dir, 'integrity.digest.sha256', 'expected.json');
    const expected = JSON.parse(await readFile(path, 'utf8'));
    expected.digest.value = `0${expected.digest.value.slice(1)}`;
    await writeFile(path, JSON.stringify(expected));
    const run = await runVectors(dir, ['integrity.digest.sha256']);
    const main = run.cases.find((result) => result.id === 'integrity.digest.sha256');
    expect(main?.passed).toBe(false);
    expect(run.failed).toBeGreaterThan(0);
  });

  it('a must-fail case that the engine accepts fails', async () => {
    const path = join(dir, 'integrity.digest.sha256', 'negative', 'uppercase_hex.json');
    const document = JSON.parse(await readFile(path, 'utf8'));
    document.artifact.digest.value = document.artifact.digest.value.toLowerCase();
    await writeFile(path, JSON.stringify(document));
    const run = await runVectors(dir, ['integrity.digest.sha256']);
    expect(run.cases.find((result) => result.id.endsWith('/uppercase_hex'))?.passed).toBe(false);
  });

  it('a case file that is not JSON fails instead of being skipped', async () => {
    await writeFile(join(dir, 'lineage.parent.link', 'negative', 'cycle.json'), '{ not json');
    const run = await runVectors(dir, ['lineage.parent.link']);
    expect(run.cases.find((result) => result.id.endsWith('/cycle'))?.passed).toBe(false);
    const manifest = JSON.parse(await readFile(MANIFEST_PATH, 'utf8'));
    const report = buildConformanceReport(manifest, await runVectors(dir));
    expect(report.ok).toBe(false);
    expect(report.level.level).toBeLessThan(3);
  });

  it('an unknown vector id is VECTOR_NOT_FOUND', async () => {
    await expect(loadVectorFolder(dir, 'no.such.vector')).rejects.toMatchObject({ code: 'VECTOR_NOT_FOUND' });
    await expect(loadVectorFolder(dir, '..')).rejects.toMatchObject({ code: 'VECTOR_NOT_FOUND' });
  });
});
