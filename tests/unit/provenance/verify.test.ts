import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../../src/canonical/canonicalize.ts';
import { wrapLegacy } from '../../../src/envelope/index.ts';
import {
  ArtifactFolder,
  attachRecord,
  buildArtifact,
  generateSigningKeyPair,
  LineageGraph,
  loadPrivateKey,
  loadPublicKey,
  METHODS,
  type ProvRecord,
  RecordBuilder,
  signRecord,
  verify,
} from '../../../src/provenance/index.ts';

let root: string;
let folder: string;
const REPORT = { findings: [{ rule: 'R1', line: 2 }] };
const SOURCE = 'line one\nline two\nline three\n';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcp-envelope-verify-'));
  folder = join(root, 'artifacts');
  await mkdir(join(folder, 'sub'), { recursive: true });
  await writeFile(join(folder, 'report.json'), JSON.stringify(REPORT, null, 2));
  await writeFile(join(folder, 'sub', 'source.txt'), SOURCE);
  await writeFile(join(root, 'secret.txt'), 'outside the folder');
  await symlink(join(root, 'secret.txt'), join(folder, 'escape.txt'));
  await symlink(join(folder, 'sub', 'source.txt'), join(folder, 'inside-link.txt'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function recordWith(locators: { report?: string; source?: string } = {}): ProvRecord {
  return new RecordBuilder({ runId: 'run-v', tool: { name: 'scan', version: '1', adapter: 'cli' } })
    .input({
      id: 'source.txt',
      mediaType: 'text/plain',
      locator: locators.source ?? 'file:sub/source.txt',
      content: { text: SOURCE },
      digest: 'sha256',
    })
    .output({
      id: 'report',
      mediaType: 'application/json',
      locator: locators.report ?? 'report.json',
      content: { json: REPORT },
      digest: 'sha256',
    })
    .evidence('rule', 'artifact:report#json:/findings/0/rule')
    .evidence('line', 'artifact:source.txt#text:line:2')
    .build();
}

const failed = (report: Awaited<ReturnType<typeof verify>>) =>
  report.checks.filter((check) => check.status === 'fail');

describe('verify with an artifacts folder', () => {
  it('recomputes digests (canonical for JSON) and resolves evidence', async () => {
    const report = await verify(recordWith(), { artifactsDir: folder });
    expect(failed(report)).toEqual([]);
    expect(report.ok).toBe(true);
    const passed = report.checks.filter((check) => check.status === 'pass').map((check) => check.check);
    expect(passed).toEqual(
      expect.arrayContaining([
        'artifact:inputs[0]:source.txt',
        'artifact:outputs[0]:report',
        'evidence[0]:rule',
        'evidence[1]:line',
      ]),
    );
  });

  it('skips what it cannot obtain without a folder', async () => {
    const report = await verify(recordWith());
    expect(report.ok).toBe(true);
    expect(report.counts.skip).toBeGreaterThanOrEqual(2);
  });

  it('detects changed content', async () => {
    const record = recordWith();
    (record.outputs[0] as { digest: { value: string } }).digest.value = 'a'.repeat(64);
    const report = await verify(record, { artifactsDir: folder });
    expect(failed(report).map((check) => check.code)).toContain('DIGEST_MISMATCH');
  });

  it('says when a JSON digest was taken over the raw bytes instead of the canonical form', async () => {
    const record = recordWith();
    const raw = buildArtifact({
      id: 'x',
      mediaType: 'application/json',
      content: { text: JSON.stringify(REPORT, null, 2) },
      digest: 'sha256',
    });
    (record.outputs[0] as { digest: unknown }).digest = raw.digest;
    const [mismatch] = failed(await verify(record, { artifactsDir: folder }));
    expect(mismatch?.message).toMatch(/raw file bytes/);
  });

  it.each([
    ['a .. segment', '../secret.txt'],
    ['a .. segment after a folder', 'sub/../../secret.txt'],
    ['an encoded .. segment', 'file:sub/%2e%2e/%2e%2e/secret.txt'],
    ['a backslash .. segment', 'sub\\..\\..\\secret.txt'],
    ['a symlink out of the folder', 'escape.txt'],
  ])('rejects a locator with %s as LOCATOR_UNSAFE', async (_name, locator) => {
    const report = await verify(recordWith({ source: locator }), { artifactsDir: folder });
    expect(report.ok).toBe(false);
    const codes = failed(report).map((check) => check.code);
    expect(codes).toContain('LOCATOR_UNSAFE');
    expect(JSON.stringify(report)).not.toContain('outside the folder');
  });

  it('re-roots absolute paths at the folder instead of reading them', async () => {
    const absolute = join(root, 'secret.txt');
    const lookup = await new ArtifactFolder(folder).locate({ artifact_id: 'zz/none', locator: absolute });
    expect(lookup.found).toBe(false);
    const report = await verify(recordWith({ source: `file://${absolute}` }), { artifactsDir: folder });
    expect(failed(report)).toEqual([]);
    expect(report.checks.find((check) => check.check === 'artifact:inputs[0]:source.txt')?.status).toBe(
      'skip',
    );
  });

  it('follows links that stay inside the folder', async () => {
    const report = await verify(recordWith({ source: 'inside-link.txt' }), { artifactsDir: folder });
    expect(failed(report)).toEqual([]);
  });

  it('never fetches remote locators', async () => {
    const lookup = await new ArtifactFolder(folder).locate({
      artifact_id: 'r/x',
      locator: 'https://example.invalid/x.json',
    });
    expect(lookup).toMatchObject({ found: false, reason: /no network/ });
    const host = await new ArtifactFolder(folder).locate({ artifact_id: 'r/x', locator: 'file://host/x' });
    expect(host).toMatchObject({ found: false });
  });

  it('rejects a NUL byte and malformed percent-encoding as unsafe', async () => {
    const folderLookup = new ArtifactFolder(folder);
    expect(await folderLookup.locate({ artifact_id: 'a/b', locator: 'x\0y' })).toMatchObject({
      unsafe: true,
    });
    expect(await folderLookup.locate({ artifact_id: 'a/b', locator: 'file:%zz' })).toMatchObject({
      unsafe: true,
    });
  });

  it('fails with INPUT_UNREADABLE for a missing folder', async () => {
    await expect(
      new ArtifactFolder(join(root, 'missing')).locate({ artifact_id: 'x' }),
    ).rejects.toMatchObject({
      code: 'INPUT_UNREADABLE',
    });
  });

  it('reports evidence that names an unknown artifact or does not resolve', async () => {
    const record = recordWith();
    record.evidence.push({ schema_version: 'evidence.v0.1', field: 'f', source: 'artifact:nope#json:/a' });
    record.evidence.push({
      schema_version: 'evidence.v0.1',
      field: 'g',
      source: 'artifact:source.txt#text:line:9',
    });
    record.evidence.push({ schema_version: 'evidence.v0.1', field: 'h', source: 'bogus' });
    const codes = failed(await verify(record, { artifactsDir: folder })).map((check) => check.code);
    expect(codes).toEqual(expect.arrayContaining(['ANCHOR_UNRESOLVED', 'ANCHOR_INVALID']));
  });
});

describe('verify envelopes and signed records', () => {
  const pair = generateSigningKeyPair();

  function envelope() {
    const result = { answer: 1 };
    const record = new RecordBuilder({ runId: 'run-e', tool: { name: 't', version: '1', adapter: 'cli' } })
      .claim(METHODS.wrap)
      .claim(METHODS.attachRecord)
      .output({
        id: 'result',
        mediaType: 'application/json',
        content: { json: result },
        digest: 'sha256',
        labels: { role: 'result' },
      })
      .build();
    return attachRecord(wrapLegacy(result), signRecord(record, loadPrivateKey(pair.privateKeyPem)));
  }

  it('verifies an envelope: the result stands for the result artifact', async () => {
    const report = await verify(envelope(), { publicKey: loadPublicKey(pair.publicKeyPem) });
    expect(failed(report)).toEqual([]);
    expect(report.subject).toBe('envelope');
    expect(report.checks.find((check) => check.check === 'signature')?.status).toBe('pass');
  });

  it('fails when the result was changed after signing', async () => {
    const changed = { ...envelope(), result: { answer: 2 } };
    const report = await verify(changed, { publicKey: loadPublicKey(pair.publicKeyPem) });
    expect(report.ok).toBe(false);
    expect(failed(report).map((check) => check.check)).toEqual(
      expect.arrayContaining(['contract:adapter.wrap.envelope_v0_1', 'artifact:outputs[0]:result']),
    );
  });

  it('fails an envelope without provenance and rejects non-records', async () => {
    expect((await verify(wrapLegacy(1))).ok).toBe(false);
    await expect(verify('text')).rejects.toMatchObject({ code: 'SCHEMA_INVALID' });
  });

  it('checks lineage contracts against the records given', async () => {
    const child = new RecordBuilder({ runId: 'child', tool: { name: 't', version: '1' } })
      .parent('child')
      .build();
    const report = await verify(child, { lineage: new LineageGraph([child]) });
    expect(failed(report).map((check) => check.check)).toContain('contract:lineage.parent.link');
    expect(canonicalize(report)).toBe(
      canonicalize(await verify(child, { lineage: new LineageGraph([child]) })),
    );
  });
});
