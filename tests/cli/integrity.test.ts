import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
