/**
 * `ledger bundle` and `verify --bundle`: one result checked offline, in a
 * folder with no ledger, and each part of a bundle changed as a forger would,
 * caught by the check that binds it, naming what.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_CONSISTENCY_PROOFS } from '../../src/ledger/bundle.ts';
import { Ledger, writeCheckpoint } from '../../src/ledger/index.ts';
import { signRecord } from '../../src/provenance/index.ts';
import { runBin, runCli } from '../helpers/cli.ts';
import { callRecord } from '../unit/ledger/fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'bundle-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const keys = generateKeyPairSync('ed25519');
const intruder = generateKeyPairSync('ed25519');
const pem = (key: KeyObject, type: 'pkcs8' | 'spki') => key.export({ type, format: 'pem' }).toString();
const run = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
const ledgerDir = join(root, 'operator');
/** The auditor's folder: the bundle, the public key and checkpoints seen earlier; no ledger. */
const auditor = join(root, 'auditor');

/** Signed envelopes as the gateway stores them, checkpoints at 2, 4 and 6 (kept apart: cp2, cp4). */
function buildLedger(): void {
  mkdirSync(ledgerDir, { recursive: true });
  mkdirSync(auditor, { recursive: true });
  const store = Ledger.open(join(ledgerDir, 'l.sqlite'));
  for (let i = 1; i <= 6; i++) {
    const { envelope, record } = callRecord(run(i));
    store.insert(
      { ...envelope, provenance: signRecord(record, keys.privateKey) },
      { upstream: 'up', principal: 'alice' },
    );
    if (i === 2 || i === 4)
      writeFileSync(join(auditor, `cp${i}.txt`), writeCheckpoint(store, keys.privateKey).text);
  }
  writeCheckpoint(store, keys.privateKey);
  store.close();
  writeFileSync(join(ledgerDir, 'private.pem'), pem(keys.privateKey, 'pkcs8'));
  writeFileSync(join(auditor, 'public.pem'), pem(keys.publicKey, 'spki'));
}

async function bundle(...extra: string[]): Promise<Record<string, any>> {
  const result = await runCli(['ledger', 'bundle', run(3), '--db', 'l.sqlite', ...extra], { cwd: ledgerDir });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

async function verifyIn(bundleValue: unknown, ...extra: string[]) {
  const file = join(auditor, `b-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(bundleValue));
  return runCli(['verify', '--bundle', file, '--public-key', 'public.pem', ...extra], { cwd: auditor });
}

let signed: Record<string, any>;
beforeAll(async () => {
  buildLedger();
  signed = await bundle('--private-key', 'private.pem');
});

describe('ledger bundle', () => {
  it('holds the envelope, record, artifacts, DSSE envelope, inclusion proof, checkpoint and consistency proofs', () => {
    expect(signed).toMatchObject({
      type: 'mcp-envelope.bundle.v1',
      run_id: run(3),
      envelope: { schema_version: 'mcp.envelope.v0.1' },
      record: { run_id: run(3) },
      artifacts: [
        { artifact_id: expect.any(String), digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) },
      ],
      dsse: {
        payloadType: 'application/vnd.mcp-envelope.prov-record+json',
        signatures: [expect.any(Object)],
      },
      inclusion: {
        leaf_index: 2,
        tree_size: 6,
        checkpoint: expect.stringMatching(/^mcp-envelope\/[0-9a-f]{32}\n6\n/),
      },
    });
    expect(signed.consistency.map((proof: { old_size: number }) => proof.old_size)).toEqual([2, 4]);
  });

  it('verifies offline, as a real process in a folder with no ledger, against a checkpoint seen earlier', async () => {
    const file = join(auditor, 'bundle.json');
    writeFileSync(file, JSON.stringify(signed));
    const result = await runBin(
      ['verify', '--bundle', 'bundle.json', '--public-key', 'public.pem', '--checkpoint', 'cp4.txt'],
      { cwd: auditor },
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    for (const line of [
      /^PASS leaf:record: the record is the leaf's/m,
      /^PASS leaf:envelope: the envelope is the leaf's/m,
      /^PASS leaf:artifacts: 1 artifact digest, as the leaf names them/m,
      /^PASS record:signature: ed25519 signature by/m,
      /^PASS dsse: DSSE envelope over the record, signed by ed25519:/m,
      /^PASS checkpoint: \S+ at size 6, signed by the given key/m,
      /^PASS inclusion: leaf 2 is in \S+ at size 6/m,
      /^PASS consistency: the bundle's checkpoint \(size 6\) extends the given one \(size 4\)/m,
      /^BUNDLE VERIFIED: run 00000000-0000-4000-8000-000000000003/m,
    ]) {
      expect(result.stdout).toMatch(line);
    }
    expect(result.stdout).not.toMatch(/^FAIL/m);
  });

  it('says what it could not check without a key, and without a DSSE envelope', async () => {
    const unsignedBundle = await bundle();
    expect(unsignedBundle.dsse).toBeNull();
    const result = await verifyIn(unsignedBundle);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^SKIP dsse: the bundle carries no DSSE envelope/m);
    const file = join(auditor, 'nokey.json');
    writeFileSync(file, JSON.stringify(signed));
    const noKey = await runCli(['verify', '--bundle', file], { cwd: auditor });
    expect(noKey.code).toBe(0);
    expect(noKey.stdout).toMatch(/^SKIP checkpoint: .*no public key given/m);
    expect(noKey.stdout).toMatch(/^BUNDLE CONSISTENT, NOT AUTHENTICATED: no public key given/m);
  });
});

describe('verify --bundle catches a forged bundle', () => {
  const clone = () => structuredClone(signed);

  it('a changed record', async () => {
    const forged = clone();
    forged.record.tool.version = '6.6.6';
    const result = await verifyIn(forged);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^FAIL leaf:record: the record is not the one in the log leaf \[BUNDLE_INVALID\]/m,
    );
    expect(result.stdout).toMatch(/^FAIL dsse: the DSSE payload .* is not the bundle's record/m);
  });

  it('a changed answer in the envelope', async () => {
    const forged = clone();
    forged.envelope.result = { text: 'something else' };
    const result = await verifyIn(forged);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^FAIL leaf:envelope: the envelope's digest is sha256:\S+, the leaf names sha256:/m,
    );
  });

  it('changed artifact digests', async () => {
    const forged = clone();
    forged.artifacts[0].digest = `sha256:${'0'.repeat(64)}`;
    const result = await verifyIn(forged);
    expect(result.stdout).toMatch(/^FAIL leaf:artifacts: the artifact digests are not those the leaf names/m);
  });

  it('a DSSE envelope signed by another key', async () => {
    const other = await runCli(
      ['ledger', 'bundle', run(3), '--db', 'l.sqlite', '--private-key', 'intruder.pem'],
      { cwd: (writeFileSync(join(ledgerDir, 'intruder.pem'), pem(intruder.privateKey, 'pkcs8')), ledgerDir) },
    );
    const forged = { ...clone(), dsse: JSON.parse(other.stdout).dsse };
    const result = await verifyIn(forged);
    expect(result.stdout).toMatch(
      /^FAIL dsse: no DSSE signature verifies under the keys given \[SIGNATURE_INVALID\]/m,
    );
  });

  it('a changed leaf, and a changed audit path', async () => {
    const leaf = clone();
    const text = Buffer.from(leaf.inclusion.leaf, 'base64')
      .toString()
      .replace('"principal":"alice"', '"principal":"mallory"');
    leaf.inclusion.leaf = Buffer.from(text).toString('base64');
    const leafResult = await verifyIn(leaf);
    expect(leafResult.stdout).toMatch(
      /^FAIL inclusion: the audit path does not lead from leaf 2 to the checkpoint's root \[LEDGER_TAMPERED\]/m,
    );
    const path = clone();
    path.inclusion.audit_path[0] = Buffer.alloc(32).toString('base64');
    expect((await verifyIn(path)).stdout).toMatch(/^FAIL inclusion: /m);
  });

  it('a checkpoint re-signed by another key', async () => {
    const dir = join(root, 'resigned');
    mkdirSync(dir);
    copyFileSync(join(ledgerDir, 'l.sqlite'), join(dir, 'l.sqlite'));
    const store = Ledger.open(join(dir, 'l.sqlite'));
    const text = writeCheckpoint(store, intruder.privateKey).text;
    store.close();
    const forged = clone();
    forged.inclusion.checkpoint = text;
    const result = await verifyIn(forged);
    expect(result.stdout).toMatch(
      /^FAIL checkpoint: \S+ at size 6 is not signed by a given key \[LEDGER_CHECKPOINT_INVALID\]/m,
    );
  });

  it('a checkpoint the auditor saw from a fork, one newer than the bundle, and one it has no proof from', async () => {
    const dir = join(root, 'fork');
    mkdirSync(dir);
    copyFileSync(join(ledgerDir, 'l.sqlite'), join(dir, 'l.sqlite'));
    const store = Ledger.open(join(dir, 'l.sqlite'));
    store.insert(callRecord(run(99)).envelope);
    const newer = writeCheckpoint(store, keys.privateKey).text;
    store.close();
    // The fork: the ledger as it stood at 4 entries, then something else appended, signed by the same key.
    const forkDir = join(root, 'fork-4');
    mkdirSync(forkDir);
    const fork = Ledger.open(join(forkDir, 'l.sqlite'));
    for (let i = 1; i <= 3; i++) {
      const { envelope, record } = callRecord(run(i));
      fork.insert({ ...envelope, provenance: signRecord(record, keys.privateKey) });
    }
    fork.insert(callRecord(run(77)).envelope);
    const forked = writeCheckpoint(fork, keys.privateKey, {
      origin: signed.inclusion.checkpoint.split('\n')[0],
    }).text;
    fork.close();
    writeFileSync(join(auditor, 'forked.txt'), forked);
    writeFileSync(join(auditor, 'newer.txt'), newer);

    const forkResult = await verifyIn(signed, '--checkpoint', 'forked.txt');
    expect(forkResult.code).toBe(1);
    expect(forkResult.stdout).toMatch(
      /^FAIL consistency: the given checkpoint \(size 4\) is not a prefix of the bundle's \(size 6\): history was rewritten, or the logs forked \[LEDGER_TAMPERED\]/m,
    );
    const newerResult = await verifyIn(signed, '--checkpoint', 'newer.txt');
    expect(newerResult.stdout).toMatch(
      /^FAIL consistency: the given checkpoint \(size 7\) is newer than the bundle's \(size 6\)/m,
    );
    // Proved against that newer checkpoint instead, the same result verifies against it.
    writeFileSync(join(ledgerDir, 'newer.txt'), newer);
    copyFileSync(join(dir, 'l.sqlite'), join(ledgerDir, 'l7.sqlite'));
    const again = await runCli(
      ['ledger', 'bundle', run(3), '--db', 'l7.sqlite', '--checkpoint', 'newer.txt'],
      {
        cwd: ledgerDir,
      },
    );
    expect((await verifyIn(JSON.parse(again.stdout), '--checkpoint', 'cp4.txt')).code).toBe(0);
  });

  it('an earlier checkpoint the bundle holds no proof from, until it is asked for with --since', async () => {
    const dir = join(root, 'many');
    mkdirSync(dir);
    const store = Ledger.open(join(dir, 'l.sqlite'));
    const count = BUNDLE_CONSISTENCY_PROOFS + 8;
    let first = '';
    for (let i = 1; i <= count; i++) {
      const { envelope, record } = callRecord(run(1000 + i));
      store.insert({ ...envelope, provenance: signRecord(record, keys.privateKey) });
      const text = writeCheckpoint(store, keys.privateKey).text;
      if (i === 1) first = text;
    }
    store.close();
    writeFileSync(join(dir, 'first.txt'), first);
    writeFileSync(join(auditor, 'first.txt'), first);
    const made = await runCli(['ledger', 'bundle', run(1003), '--db', 'l.sqlite'], { cwd: dir });
    const plain = JSON.parse(made.stdout);
    expect(plain.consistency).toHaveLength(BUNDLE_CONSISTENCY_PROOFS);
    expect((await verifyIn(plain, '--checkpoint', 'first.txt')).stdout).toMatch(
      /^FAIL consistency: the bundle holds no consistency proof from size 1: ask for one made with ledger bundle --since/m,
    );
    const since = await runCli(['ledger', 'bundle', run(1003), '--db', 'l.sqlite', '--since', 'first.txt'], {
      cwd: dir,
    });
    const withSince = await verifyIn(JSON.parse(since.stdout), '--checkpoint', 'first.txt');
    expect(withSince.code, withSince.stdout).toBe(0);
  });

  it('refuses what is not a bundle with a stable code', async () => {
    const result = await verifyIn({ type: 'something' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/error\[BUNDLE_INVALID\]: Not a bundle/);
    expect(readFileSync(join(auditor, 'public.pem'), 'utf8')).toContain('PUBLIC KEY');
  });
});
