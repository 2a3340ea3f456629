import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../../src/canonical/canonicalize.ts';
import { wrapLegacy } from '../../../src/envelope/index.ts';
import { ArtifactFolder } from '../../../src/provenance/artifact-folder.ts';
import {
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
import { describeCoverage, verdictLine } from '../../../src/provenance/verify.ts';

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

describe('verify coverage: what the record carries and what was checked', () => {
  const pair = generateSigningKeyPair();
  const privateKey = loadPrivateKey(pair.privateKeyPem);
  const publicKey = loadPublicKey(pair.publicKeyPem);
  const bare = (runId = 'run-m') =>
    new RecordBuilder({ runId, tool: { name: 't', version: '1' } })
      .input({ id: 'in', mediaType: 'application/json' })
      .output({ id: 'out', mediaType: 'application/json' })
      .build();

  it('a signed record with its key and artifacts is VERIFIED, naming each item checked', async () => {
    const report = await verify(signRecord(recordWith(), privateKey), { artifactsDir: folder, publicKey });
    expect(report.coverage).toEqual({
      verdict: 'verified',
      record_digest: { present: true, status: 'verified', detail: 'record_digest matches (sha256)' },
      signature: {
        present: true,
        status: 'verified',
        detail: expect.stringMatching(/^ed25519 signature by ed25519:[0-9a-f]{32} verifies$/),
      },
      artifact_digests: { artifacts: 2, present: 2, verified: 2, failed: 0, not_checked: 0, reasons: [] },
      evidence_anchors: { present: 2, verified: 2, failed: 0, not_checked: 0, reasons: [] },
      lineage: { present: 0, verified: 0, failed: 0, not_checked: 0, reasons: [] },
    });
    expect(verdictLine(report)).toMatch(
      /^VERIFIED: record digest, signature, 2\/2 artifact digests, 2\/2 evidence anchors \(\d+ passed, 0 failed, 0 skipped, 0 warnings\)$/,
    );
    expect(describeCoverage(report.coverage)).toContain('  evidence anchors  2 of 2 resolved');
  });

  it('a minimal record is NOTHING TO VERIFY, never a bare VERIFIED', async () => {
    const report = await verify(bare());
    expect(report.ok).toBe(true);
    expect(report.coverage).toMatchObject({
      verdict: 'nothing_to_verify',
      record_digest: { present: false, status: 'absent' },
      signature: { present: false, status: 'absent' },
      artifact_digests: { artifacts: 2, present: 0 },
    });
    expect(verdictLine(report)).toMatch(/^NOTHING TO VERIFY: the record carries no record digest/);
    expect(describeCoverage(report.coverage)).toContain(
      '  artifact digests  absent: no artifact carries a digest (2 artifacts without)',
    );
  });

  it('digests it cannot check are NOTHING VERIFIED, with the reason', async () => {
    const report = await verify(recordWith());
    expect(report.ok).toBe(true);
    expect(report.coverage.verdict).toBe('nothing_verified');
    expect(report.coverage.artifact_digests).toMatchObject({
      present: 2,
      verified: 0,
      not_checked: 2,
      reasons: ['content not obtainable: no artifacts folder given'],
    });
    expect(verdictLine(report)).toMatch(
      /^NOTHING VERIFIED: not checked: 2\/2 artifact digests, 2\/2 evidence anchors; absent: record digest, signature;/,
    );
  });

  it('a signature without its key is PARTIALLY VERIFIED', async () => {
    const report = await verify(signRecord(recordWith(), privateKey), { artifactsDir: folder });
    expect(report.coverage.verdict).toBe('partially_verified');
    expect(report.coverage.signature).toMatchObject({ present: true, status: 'not_checked' });
    expect(verdictLine(report)).toMatch(
      /^PARTIALLY VERIFIED: record digest, 2\/2 artifact digests.*; not checked: signature \(/,
    );
  });

  it('a signed record whose artifacts carry no digest says they are absent', async () => {
    const report = await verify(signRecord(bare(), privateKey), { publicKey });
    expect(report.coverage).toMatchObject({
      verdict: 'verified',
      artifact_digests: { artifacts: 2, present: 0, verified: 0 },
    });
    expect(verdictLine(report)).toMatch(/^VERIFIED: record digest, signature; absent: artifact digests \(/);
  });

  it('an unsigned record fails when a public key is given', async () => {
    for (const record of [bare(), recordWith()]) {
      const report = await verify(record, { publicKey, artifactsDir: folder });
      expect(report.ok).toBe(false);
      expect(failed(report)).toEqual([
        {
          check: 'signature',
          status: 'fail',
          code: 'SIGNATURE_INVALID',
          message: 'a public key was given, but the record is not signed (no integrity.signature)',
        },
      ]);
      expect(report.coverage).toMatchObject({
        verdict: 'failed',
        signature: { present: false, status: 'failed' },
      });
      expect(verdictLine(report)).toMatch(
        /^NOT VERIFIED: failed: signature absent though a public key was given/,
      );
    }
  });

  it('a removed record digest is absent, and the signature over it fails', async () => {
    const signed = signRecord(recordWith(), privateKey);
    delete signed.integrity?.record_digest;
    const report = await verify(signed, { publicKey, artifactsDir: folder });
    expect(report.coverage).toMatchObject({
      verdict: 'failed',
      record_digest: { present: false, status: 'absent' },
      signature: { present: true, status: 'failed' },
    });
  });

  it('checks parents against the other records given', async () => {
    const parent = bare('parent');
    const child = new RecordBuilder({ runId: 'child', tool: { name: 't', version: '1' } })
      .parent('parent')
      .parent('elsewhere')
      .build();
    const alone = await verify(child);
    expect(alone.coverage.lineage).toMatchObject({
      present: 2,
      not_checked: 2,
      reasons: ['no other records given'],
    });
    const partial = await verify(child, { lineage: new LineageGraph([parent, child]) });
    expect(partial.coverage.lineage).toMatchObject({ present: 2, not_checked: 1 });
    expect(partial.checks.find((check) => check.check === 'lineage')?.message).toMatch(
      /1 of 2 parents found; not among the records given: elsewhere/,
    );
    const whole = new RecordBuilder({ runId: 'child', tool: { name: 't', version: '1' } })
      .parent('parent')
      .build();
    const found = await verify(whole, { lineage: new LineageGraph([parent, whole]) });
    expect(found.coverage.lineage).toMatchObject({ present: 1, verified: 1, not_checked: 0 });
    const loop = new RecordBuilder({ runId: 'parent', tool: { name: 't', version: '1' } })
      .parent('child')
      .build();
    const cycle = await verify(whole, { lineage: new LineageGraph([loop, whole]) });
    expect(failed(cycle)).toEqual([expect.objectContaining({ check: 'lineage', code: 'LINEAGE_CYCLE' })]);
    expect(cycle.coverage.verdict).toBe('failed');
  });

  it('a record too broken to read marks what it carries as not checked', async () => {
    const signed = signRecord(recordWith(), privateKey) as unknown as Record<string, unknown>;
    delete signed.methods;
    const report = await verify(signed, { publicKey, artifactsDir: folder });
    expect(report.coverage).toMatchObject({
      verdict: 'failed',
      record_digest: {
        present: true,
        status: 'not_checked',
        detail: 'the record is not a valid prov.record.v0.1',
      },
      signature: { present: true, status: 'not_checked' },
      artifact_digests: { present: 2, verified: 0, not_checked: 2 },
    });
    expect(verdictLine(report)).toMatch(/^NOT VERIFIED: failed: schema:record \(/);
  });

  it('an envelope without provenance reports everything absent and fails', async () => {
    const report = await verify(wrapLegacy(1));
    expect(report.coverage).toMatchObject({
      verdict: 'failed',
      record_digest: { present: false, status: 'absent' },
      signature: { present: false, status: 'absent' },
      artifact_digests: { artifacts: 0, present: 0 },
    });
    expect(verdictLine(report)).toMatch(/^NOT VERIFIED: failed: provenance \(/);
  });
});
