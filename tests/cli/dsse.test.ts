import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/canonical/canonical-bytes.ts';
import { signDsse } from '../../src/provenance/dsse.ts';
import { keyIdFor, loadPrivateKey, loadPublicKey } from '../../src/provenance/integrity.ts';
import { errorCode, runCli, type TempDir, tempDir } from '../helpers/cli.ts';

let dir: TempDir;
let enveloped: string;
let keyA: string;
let keyB: string;
beforeAll(async () => {
  dir = await tempDir();
  for (const name of ['a', 'b'])
    expect((await runCli(['keygen', '--out', join(dir.path, name)])).code).toBe(0);
  keyA = keyIdFor(loadPublicKey(await readFile(join(dir.path, 'a.public.pem'))));
  keyB = keyIdFor(loadPublicKey(await readFile(join(dir.path, 'b.public.pem'))));
  const wrapped = await runCli(
    ['wrap', '--capture-provenance', '--provenance-mode', 'full', '--deterministic-ids', 'seed'],
    { input: '{"x":1}' },
  );
  enveloped = await dir.file('envelope.json', wrapped.stdout);
});
afterAll(async () => {
  await dir.remove();
});

const priv = (name: string) => join(dir.path, `${name}.private.pem`);
const pub = (name: string) => join(dir.path, `${name}.public.pem`);

async function signed(format: '--dsse' | '--in-toto', ...keys: string[]): Promise<string> {
  const run = await runCli([
    'sign',
    format,
    enveloped,
    ...keys.flatMap((key) => ['--private-key', priv(key)]),
  ]);
  expect(run.code, run.stderr).toBe(0);
  return dir.file(`${format.slice(2)}-${keys.join('')}.json`, run.stdout);
}

describe('sign --dsse and verify --dsse', () => {
  it('signs the record in the envelope, as its canonical bytes, with one signature per key', async () => {
    const file = await signed('--dsse', 'a', 'b');
    const envelope = JSON.parse(await readFile(file, 'utf8'));
    const record = JSON.parse(await readFile(enveloped, 'utf8')).provenance;
    expect(envelope.payloadType).toBe('application/vnd.mcp-envelope.prov-record+json');
    expect(Buffer.from(envelope.payload, 'base64').equals(canonicalBytes(record))).toBe(true);
    expect(envelope.signatures.map((signature: { keyid: string }) => signature.keyid)).toEqual([keyA, keyB]);

    const run = await runCli(['verify', '--dsse', file, '--public-key', pub('a'), '--public-key', pub('b')]);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain(`PASS signature: ${keyA} verifies signature 1 of 2`);
    expect(run.stdout).toContain(`PASS signature: ${keyB} verifies signature 2 of 2`);
    expect(run.stdout).toContain(`VERIFIED: DSSE envelope signed by ${keyA}, ${keyB}`);
  });

  it('--json reports each key and each check', async () => {
    const file = await signed('--dsse', 'a');
    const run = await runCli(['--json', 'verify', '--dsse', file, '--public-key', pub('a')]);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({
      ok: true,
      payload_type: 'application/vnd.mcp-envelope.prov-record+json',
      signatures: 1,
      keys: [{ key_id: keyA, verified: true, signatures: [0] }],
    });
    const checks = report.checks as Array<{ check: string; status: string }>;
    expect(checks.slice(0, 2).map((check) => [check.check, check.status])).toEqual([
      ['signature', 'pass'],
      ['payload', 'pass'],
    ]);
    // Then the record the payload carries, verified as verify verifies one.
    expect(checks.find((check) => check.check === 'record:record_digest')).toMatchObject({ status: 'pass' });
    expect(checks.every((check) => check.status !== 'fail')).toBe(true);
  });

  it('a validly signed payload whose record does not hold (its digest stale) fails on the record', async () => {
    const envelope = JSON.parse(await readFile(enveloped, 'utf8'));
    const edited = {
      ...envelope,
      provenance: { ...envelope.provenance, tool: { ...envelope.provenance.tool, version: '6.6.6' } },
    };
    const file = await dir.file('edited.json', JSON.stringify(edited));
    const sign = await runCli(['sign', '--dsse', file, '--private-key', priv('a')]);
    expect(sign.code, sign.stderr).toBe(0);
    const run = await runCli([
      'verify',
      '--dsse',
      await dir.file('edited.dsse.json', sign.stdout),
      '--public-key',
      pub('a'),
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`PASS signature: ${keyA} verifies signature 1 of 1`);
    expect(run.stdout).toMatch(/^FAIL record:record_digest: /m);
  });

  it('a key that did not sign fails with exit 1 and SIGNATURE_INVALID', async () => {
    const file = await signed('--dsse', 'a');
    const run = await runCli([
      '--json',
      'verify',
      '--dsse',
      file,
      '--public-key',
      pub('a'),
      '--public-key',
      pub('b'),
    ]);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.ok).toBe(false);
    expect(report.checks.find((check: { status: string }) => check.status === 'fail')).toMatchObject({
      check: 'signature',
      code: 'SIGNATURE_INVALID',
    });
    expect((await runCli(['verify', '--dsse', file, '--public-key', pub('b')])).code).toBe(1);
  });

  it('a flipped payload byte or a changed payloadType fails', async () => {
    const file = await signed('--dsse', 'a');
    const envelope = JSON.parse(await readFile(file, 'utf8'));
    const payload = Buffer.from(envelope.payload, 'base64');
    payload[40] = (payload[40] as number) ^ 0x20;
    const flipped = await dir.file('flipped.json', { ...envelope, payload: payload.toString('base64') });
    expect((await runCli(['verify', '--dsse', flipped, '--public-key', pub('a')])).code).toBe(1);
    const retyped = await dir.file('retyped.json', {
      ...envelope,
      payloadType: 'application/vnd.in-toto+json',
    });
    expect((await runCli(['verify', '--dsse', retyped, '--public-key', pub('a')])).code).toBe(1);
  });

  it('what is not a DSSE envelope fails with DSSE_INVALID (exit 1)', async () => {
    const run = await runCli(['verify', '--dsse', enveloped, '--public-key', pub('a')]);
    expect(run.code).toBe(1);
    expect(errorCode(run)).toBe('DSSE_INVALID');
  });

  it('usage errors: no key, options of record verification, two formats, several keys on a record', async () => {
    const file = await signed('--dsse', 'a');
    const cases: string[][] = [
      ['verify', '--dsse', file],
      ['verify', '--dsse', file, '--public-key', pub('a'), '--strict'],
      ['verify', enveloped, '--public-key', pub('a'), '--public-key', pub('b')],
      ['sign', '--dsse', '--in-toto', enveloped, '--private-key', priv('a')],
      ['sign', enveloped, '--private-key', priv('a'), '--private-key', priv('b')],
      ['sign', '--dsse', enveloped, '--key-id', 'k', '--private-key', priv('a'), '--private-key', priv('b')],
    ];
    for (const args of cases) {
      const run = await runCli(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(errorCode(run), args.join(' ')).toBe('USAGE_ERROR');
    }
    const notAKey = await dir.file('not-a-key.pem', 'hello');
    expect(errorCode(await runCli(['verify', '--dsse', file, '--public-key', notAKey]))).toBe('KEY_INVALID');
  });
});

describe('sign --in-toto', () => {
  it("signs an in-toto statement whose subjects are the record's output digests", async () => {
    const file = await signed('--in-toto', 'a');
    const envelope = JSON.parse(await readFile(file, 'utf8'));
    expect(envelope.payloadType).toBe('application/vnd.in-toto+json');
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
    const record = JSON.parse(await readFile(enveloped, 'utf8')).provenance;
    expect(statement._type).toBe('https://in-toto.io/Statement/v1');
    expect(statement.predicateType).toBe('https://mcp-envelope.dev/attestation/prov.record/v0.1');
    expect(statement.predicate).toEqual(record);
    expect(statement.subject).toEqual(
      record.outputs.map((artifact: { artifact_id: string; digest: { alg: string; value: string } }) => ({
        name: artifact.artifact_id,
        digest: { [artifact.digest.alg]: artifact.digest.value },
      })),
    );
    const run = await runCli(['verify', '--dsse', file, '--public-key', pub('a')]);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain("PASS subjects: subjects are the record's 1 output artifact with a digest");
  });

  it('a statement whose subjects are not its record outputs fails, though its signature holds', async () => {
    const envelope = JSON.parse(await readFile(await signed('--in-toto', 'a'), 'utf8'));
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
    statement.subject[0].digest.sha256 = '0'.repeat(64);
    const forged = signDsse(canonicalBytes(statement), envelope.payloadType, [
      loadPrivateKey(await readFile(priv('a'))),
    ]);
    const file = await dir.file('forged-subjects.json', forged);
    const run = await runCli(['--json', 'verify', '--dsse', file, '--public-key', pub('a')]);
    expect(run.code).toBe(1);
    expect(
      JSON.parse(run.stdout).checks.find((check: { check: string }) => check.check === 'subjects'),
    ).toMatchObject({
      status: 'fail',
      code: 'DIGEST_MISMATCH',
    });
  });
});
