import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { digestValue } from '../../src/canonical/digest.ts';
import { computeRecordDigest } from '../../src/provenance/integrity.ts';
import type { ProvRecord } from '../../src/provenance/record.ts';
import { errorCode, hasStackTrace, runCli, type TempDir, tempDir } from '../helpers/cli.ts';

let dir: TempDir;
let signed: string;
beforeAll(async () => {
  dir = await tempDir();
  const keygen = await runCli(['keygen', '--out', join(dir.path, 'k')]);
  expect(keygen.code).toBe(0);
  const wrapped = await runCli(
    ['wrap', '--capture-provenance', '--provenance-mode', 'full', '--deterministic-ids', 'seed'],
    { input: '{"x":1}' },
  );
  const envelopeFile = await dir.file('envelope.json', wrapped.stdout);
  const sign = await runCli(['sign', '--private-key', join(dir.path, 'k.private.pem'), envelopeFile]);
  expect(sign.code).toBe(0);
  signed = await dir.file('signed.json', sign.stdout);
});
afterAll(async () => {
  await dir.remove();
});

const publicKey = () => join(dir.path, 'k.public.pem');

function record(runId: string, parents: string[]) {
  return {
    schema_version: 'prov.record.v0.1',
    run_id: runId,
    tool: { name: 't', version: '1' },
    inputs: [],
    outputs: [],
    methods: parents.length > 0 ? ['lineage.parent.link'] : [],
    evidence: [],
    parents,
  };
}

describe('keygen, sign, verify', () => {
  it('keygen writes both PEM files and refuses to overwrite them without --force', async () => {
    expect(existsSync(join(dir.path, 'k.private.pem'))).toBe(true);
    expect(await readFile(publicKey(), 'utf8')).toContain('BEGIN PUBLIC KEY');
    const again = await runCli(['keygen', '--out', join(dir.path, 'k')]);
    expect(again.code).toBe(2);
    expect((await runCli(['keygen', '--force', '--out', join(dir.path, 'k2')])).code).toBe(0);
  });

  it('a signed envelope verifies with the public key', async () => {
    const run = await runCli(['--json', 'verify', '--public-key', publicKey(), signed]);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.ok).toBe(true);
    expect(report.checks.find((check: { check: string }) => check.check === 'signature').status).toBe('pass');
  });

  it('a tampered record fails with exit 1', async () => {
    const envelope = JSON.parse(await readFile(signed, 'utf8'));
    envelope.provenance.tool.name = 'someone-else';
    const file = await dir.file('tampered-record.json', envelope);
    const run = await runCli(['--json', 'verify', '--public-key', publicKey(), file]);
    expect(run.code).toBe(1);
    const failed = JSON.parse(run.stdout).checks.filter(
      (check: { status: string }) => check.status === 'fail',
    );
    expect(failed.map((check: { code: string }) => check.code)).toEqual(
      expect.arrayContaining(['DIGEST_MISMATCH', 'SIGNATURE_INVALID']),
    );
  });

  it('a tampered result fails with exit 1', async () => {
    const envelope = JSON.parse(await readFile(signed, 'utf8'));
    envelope.result = { x: 2 };
    const file = await dir.file('tampered-result.json', envelope);
    expect((await runCli(['verify', '--public-key', publicKey(), file])).code).toBe(1);
  });

  it('a signature from another key fails', async () => {
    const run = await runCli(['verify', '--public-key', join(dir.path, 'k2.public.pem'), signed]);
    expect(run.code).toBe(1);
  });

  it('an unusable key is a usage error with KEY_INVALID', async () => {
    const notAKey = await dir.file('not-a-key.pem', 'hello');
    const run = await runCli(['verify', '--public-key', notAKey, signed]);
    expect(run.code).toBe(2);
    expect(errorCode(run)).toBe('KEY_INVALID');
    expect(hasStackTrace(run.stderr)).toBe(false);
    const sign = await runCli(['sign', '--private-key', notAKey, signed]);
    expect(errorCode(sign)).toBe('KEY_INVALID');
  });

  it('--debug adds the stack trace', async () => {
    const run = await runCli(['--debug', 'verify', '--public-key', join(dir.path, 'missing.pem'), signed]);
    expect(run.code).toBe(2);
    expect(hasStackTrace(run.stderr)).toBe(true);
  });
});

describe('verify with an artifacts folder', () => {
  it('rejects a locator that escapes the folder', async () => {
    const artifacts = join(dir.path, 'artifacts');
    await dir.file('secret.txt', 'secret');
    await dir.file('artifacts/unrelated.txt', 'x');
    const value = record('run-a', []);
    Object.assign(value, {
      inputs: [
        {
          schema_version: 'artifact.v0.1',
          artifact_id: 'in',
          media_type: 'text/plain',
          locator: '../secret.txt',
          digest: { alg: 'sha256', value: 'a'.repeat(64) },
        },
      ],
    });
    const file = await dir.file('escaping.json', value);
    const run = await runCli(['--json', 'verify', '--artifacts', artifacts, file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('LOCATOR_UNSAFE');
    expect(run.stdout).not.toContain('secret"');
  });
});

describe('lineage', () => {
  it('builds the graph of a set of records', async () => {
    const a = await dir.file('lineage/a.json', record('a', []));
    await dir.file('lineage/b.json', record('b', ['a']));
    const run = await runCli(['--json', 'lineage', dirname(a)]);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ ok: true, acyclic: true, order: ['a', 'b'] });
  });

  it('a cycle fails with exit 1', async () => {
    const one = await dir.file('c1.json', record('c1', ['c2']));
    const two = await dir.file('c2.json', record('c2', ['c1']));
    const run = await runCli(['--json', 'lineage', one, two]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).acyclic).toBe(false);
  });
});

describe('verify says what was and was not verified', () => {
  let work: TempDir;
  const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';
  const cli = (args: string[]) => runCli(args, { cwd: work.path });

  beforeAll(async () => {
    work = await tempDir();
    await work.file('result.json', '{"ok":true,"count":3}\n');
    expect((await cli(['keygen', '--out', 'demo'])).code).toBe(0);
    const full = await cli([
      'wrap',
      '--capture-provenance',
      '--capture-artifacts',
      '--deterministic-ids',
      'demo',
      'result.json',
    ]);
    expect(full.code).toBe(0);
    await work.file('enveloped.json', full.stdout);
    const signedRun = await cli(['sign', 'enveloped.json', '--private-key', 'demo.private.pem']);
    expect(signedRun.code).toBe(0);
    await work.file('signed.json', signedRun.stdout);
    const minimal = await cli(['wrap', '--capture-provenance', 'result.json']);
    expect(minimal.code).toBe(0);
    await work.file('minimal.json', minimal.stdout);
  });
  afterAll(async () => {
    await work.remove();
  });

  it('lists what it verified for a signed record with its key and artifacts (the README example)', async () => {
    const run = await cli(['verify', 'signed.json', '--public-key', 'demo.public.pem', '--artifacts', '.']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('  record digest     verified: record_digest matches (sha256)');
    expect(run.stdout).toContain('  artifact digests  2 of 2 verified');
    expect(run.stdout).toContain('  evidence anchors  absent: the record has no evidence');
    expect(lastLine(run.stdout)).toBe(
      'VERIFIED: record digest, signature, 2/2 artifact digests (14 passed, 0 failed, 0 skipped, 0 warnings)',
    );
    const json = await cli([
      '--json',
      'verify',
      'signed.json',
      '--public-key',
      'demo.public.pem',
      '--artifacts',
      '.',
    ]);
    expect(JSON.parse(json.stdout).coverage).toMatchObject({
      verdict: 'verified',
      record_digest: { present: true, status: 'verified' },
      signature: { present: true, status: 'verified' },
      artifact_digests: { artifacts: 2, present: 2, verified: 2, failed: 0, not_checked: 0 },
      evidence_anchors: { present: 0 },
      lineage: { present: 0 },
    });
  });

  it('says what it could not check without the key or the artifacts folder', async () => {
    const run = await cli(['--json', 'verify', 'signed.json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).coverage).toMatchObject({
      verdict: 'partially_verified',
      signature: { present: true, status: 'not_checked', detail: expect.stringMatching(/no public key/) },
      artifact_digests: { present: 2, verified: 1, not_checked: 1 },
    });
    const human = await cli(['verify', 'signed.json']);
    expect(lastLine(human.stdout)).toMatch(
      /^PARTIALLY VERIFIED: record digest, 1\/2 artifact digests; not checked: signature, 1\/2 artifact digests \(/,
    );
  });

  it('never prints a bare VERIFIED for a minimal record with no digests', async () => {
    const run = await cli(['verify', 'minimal.json']);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(/^VERIFIED/m);
    expect(run.stdout).toContain('  record digest     absent: the record has no integrity.record_digest');
    expect(run.stdout).toContain('  signature         absent: the record is not signed');
    expect(run.stdout).toContain(
      '  artifact digests  absent: no artifact carries a digest (2 artifacts without)',
    );
    expect(lastLine(run.stdout)).toMatch(
      /^NOTHING TO VERIFY: the record carries no record digest, signature or artifact digest; only its structure and claimed methods were checked \(\d+ passed, 0 failed/,
    );
    const json = JSON.parse((await cli(['--json', 'verify', 'minimal.json'])).stdout);
    expect(json.ok).toBe(true);
    expect(json.coverage).toMatchObject({
      verdict: 'nothing_to_verify',
      record_digest: { present: false, status: 'absent' },
      signature: { present: false, status: 'absent' },
      artifact_digests: { artifacts: 2, present: 0, verified: 0 },
    });
  });

  it('a signed record without artifact digests verifies, and says the digests are absent', async () => {
    const signedMinimal = await cli(['sign', 'minimal.json', '--private-key', 'demo.private.pem']);
    await work.file('signed-minimal.json', signedMinimal.stdout);
    const run = await cli(['verify', 'signed-minimal.json', '--public-key', 'demo.public.pem']);
    expect(run.code).toBe(0);
    expect(lastLine(run.stdout)).toMatch(/^VERIFIED: record digest, signature; absent: artifact digests \(/);
    const json = JSON.parse(
      (await cli(['--json', 'verify', 'signed-minimal.json', '--public-key', 'demo.public.pem'])).stdout,
    );
    expect(json.coverage.artifact_digests).toMatchObject({ artifacts: 2, present: 0, verified: 0 });
  });

  it('a signed record whose record digest was removed: digest absent, signature fails', async () => {
    const envelope = JSON.parse(await readFile(join(work.path, 'signed.json'), 'utf8'));
    delete envelope.provenance.integrity.record_digest;
    await work.file('no-record-digest.json', envelope);
    const run = await cli(['--json', 'verify', 'no-record-digest.json', '--public-key', 'demo.public.pem']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).coverage).toMatchObject({
      verdict: 'failed',
      record_digest: { present: false, status: 'absent' },
      signature: { present: true, status: 'failed' },
    });
  });

  it('fails an unsigned record when a public key is given, even without --strict', async () => {
    for (const file of ['minimal.json', 'enveloped.json']) {
      const run = await cli(['verify', file, '--public-key', 'demo.public.pem', '--artifacts', '.']);
      expect(run.code, file).toBe(1);
      expect(run.stdout).toContain(
        'FAIL signature: a public key was given, but the record is not signed (no integrity.signature)',
      );
      expect(lastLine(run.stdout)).toMatch(
        /^NOT VERIFIED: failed: signature absent though a public key was given[;(\s]/,
      );
    }
    const json = await cli(['--json', 'verify', 'minimal.json', '--public-key', 'demo.public.pem']);
    const report = JSON.parse(json.stdout);
    expect(report.ok).toBe(false);
    expect(report.coverage.signature).toMatchObject({ present: false, status: 'failed' });
    expect(report.checks).toContainEqual(
      expect.objectContaining({ check: 'signature', status: 'fail', code: 'SIGNATURE_INVALID' }),
    );
  });

  it('a forged result with the signature stripped and every digest recomputed fails under the key, in every mode', async () => {
    // The forger changes the result, recomputes the result and record digests, and removes the signature and its claim.
    const envelope = JSON.parse(await readFile(join(work.path, 'signed.json'), 'utf8'));
    envelope.result = { ok: false, count: 0 };
    const record = envelope.provenance as ProvRecord;
    const output = record.outputs.find((artifact) => artifact.labels?.role === 'result');
    if (!output) throw new Error('the signed record has no result artifact');
    output.digest = digestValue(envelope.result, 'sha256');
    record.methods = record.methods.filter((method) => method !== 'integrity.signature.create');
    delete record.integrity?.signature;
    if (record.integrity) record.integrity.record_digest = computeRecordDigest(record);
    await work.file('forged.json', envelope);
    // Without the key, the forgery is self-consistent: it says it is unsigned, and claims nothing more.
    const keyless = await cli(['verify', 'forged.json', '--artifacts', '.']);
    expect(keyless.code).toBe(0);
    expect(keyless.stdout).toContain('  signature         absent: the record is not signed');

    for (const strict of [[], ['--strict']]) {
      const args = [
        'verify',
        'forged.json',
        '--public-key',
        'demo.public.pem',
        '--artifacts',
        '.',
        ...strict,
      ];
      const human = await cli(args);
      expect(human.code, strict.join(' ')).toBe(1);
      expect(human.stdout).toContain(
        'FAIL signature: a public key was given, but the record is not signed (no integrity.signature)',
      );
      // What the record carries and what was checked, item by item.
      expect(human.stdout).toContain('  record digest     verified: record_digest matches (sha256)');
      expect(human.stdout).toContain(
        '  signature         FAILED: a public key was given, but the record is not signed (no integrity.signature)',
      );
      expect(human.stdout).toContain('  artifact digests  2 of 2 verified');
      // The closing line says the digests that matched prove nothing without the signature.
      expect(lastLine(human.stdout)).toMatch(
        /^NOT VERIFIED: failed: signature absent though a public key was given; matched, but with no valid signature anyone could have recomputed them: record digest, 2\/2 artifact digests \(/,
      );

      const json = await cli(['--json', ...args]);
      expect(json.code, strict.join(' ')).toBe(1);
      const report = JSON.parse(json.stdout);
      expect(report.ok).toBe(false);
      expect(report.coverage).toMatchObject({
        verdict: 'failed',
        record_digest: { present: true, status: 'verified' },
        signature: { present: false, status: 'failed', detail: expect.stringMatching(/not signed/) },
        artifact_digests: { artifacts: 2, present: 2, verified: 2, failed: 0, not_checked: 0 },
      });
      expect(report.checks).toContainEqual(
        expect.objectContaining({ check: 'signature', status: 'fail', code: 'SIGNATURE_INVALID' }),
      );
    }
  });
});
