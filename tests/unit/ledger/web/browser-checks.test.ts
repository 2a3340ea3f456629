/**
 * The checks the record page runs in the browser (src/ledger/web/browser/checks.ts),
 * run here in Node on Web Crypto, against proofs of real ledger files and
 * altered copies of them: each alteration fails the check that names it.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../../../src/canonical/canonicalize.ts';
import { Ledger, writeCheckpoint } from '../../../../src/ledger/index.ts';
import { parseCheckpoint, signCheckpoint } from '../../../../src/ledger/log/checkpoint.ts';
import { MemoryTree, leafHash as nodeLeafHash } from '../../../../src/ledger/log/hashing.ts';
import { inclusionProof } from '../../../../src/ledger/log/proofs.ts';
import {
  type Check,
  outcomeOf,
  type RunProof,
  rootFromInclusion,
  verifyRunProof,
} from '../../../../src/ledger/web/browser/checks.ts';
import { parseTrustedKey, toBase64 } from '../../../../src/ledger/web/browser/encoding.ts';
import { signRecord } from '../../../../src/provenance/integrity.ts';
import { runProof } from '../../../support/run-proof.ts';
import { callRecord } from '../fixtures.ts';

const signer = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');
const dir = mkdtempSync(join(tmpdir(), 'browser-checks-'));
const file = join(dir, 'ledger.sqlite');
const bare = join(dir, 'bare.sqlite');
const runId = (i: number) => `00000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}`;
const RUNS = 11;

beforeAll(() => {
  const ledger = Ledger.open(file);
  for (let i = 1; i <= RUNS; i++) {
    const { record, envelope } = callRecord(runId(i), 'echo', {
      text: `answer ${i}`,
      n: 1.0,
    });
    const signed = signRecord(record, signer.privateKey);
    ledger.insert({ ...envelope, provenance: signed }, { upstream: 'up', principal: 'alice' });
    if (i === 7) writeCheckpoint(ledger, signer.privateKey);
  }
  ledger.close();
  const unsigned = Ledger.open(bare);
  unsigned.insert(callRecord(runId(1)).record, { upstream: 'up' });
  unsigned.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function proofOf(path: string, run: string, key: KeyObject | undefined = signer.publicKey): RunProof {
  const ledger = Ledger.open(path, { readOnly: true });
  try {
    return runProof(ledger, run, key);
  } finally {
    ledger.close();
  }
}

const byId = (checks: Check[]) => Object.fromEntries(checks.map((check) => [check.id, check]));
const statuses = (checks: Check[]) => Object.fromEntries(checks.map((check) => [check.id, check.status]));

function withLeaf(proof: RunProof, edit: (leaf: Record<string, unknown>) => void): RunProof {
  const leaf = JSON.parse(Buffer.from(proof.leaf as string, 'base64').toString('utf8')) as Record<
    string,
    unknown
  >;
  edit(leaf);
  return { ...proof, leaf: Buffer.from(canonicalize(leaf), 'utf8').toString('base64') };
}

const ALL_PASS = {
  leaf: 'pass',
  inclusion: 'pass',
  'checkpoint-signature': 'pass',
  'record-digest': 'pass',
  'record-signature': 'pass',
  'envelope-digest': 'pass',
};

describe('the browser’s verification of a run proof', () => {
  it('passes every check of every entry the checkpoint covers, with the server’s keys, and says they are the server’s', async () => {
    await writeCheckpointNow();
    for (let i = 1; i <= RUNS; i++) {
      const checks = await verifyRunProof(proofOf(file, runId(i)));
      expect(statuses(checks)).toEqual(ALL_PASS);
      expect(byId(checks)['checkpoint-signature']?.detail).toMatch(/a key the server sent, so untrusted/);
      expect(byId(checks)['record-signature']?.detail).toMatch(/the server's record key ed25519:/);
    }
  });

  it('uses a key the person gives, raw base64 or PEM, instead of the server’s, and says so', async () => {
    const raw = parseTrustedKey(signer.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    expect(raw).toBeInstanceOf(Uint8Array);
    for (const given of [
      toBase64(raw as Uint8Array),
      signer.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    ]) {
      const checks = await verifyRunProof(proofOf(file, runId(3), stranger.publicKey), given);
      expect(statuses(checks)).toEqual({ 'trusted-key': 'pass', ...ALL_PASS });
      expect(byId(checks)['checkpoint-signature']?.detail).toMatch(
        /the key you gave \(ed25519:[0-9a-f]{32}\)/,
      );
      expect(byId(checks)['record-signature']?.detail).toMatch(/\(the key you gave\)$/);
    }
  });

  it('fails a checkpoint and a record signed by another key than the one the person trusts', async () => {
    const given = stranger.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const checks = byId(await verifyRunProof(proofOf(file, runId(2)), given));
    expect(checks['checkpoint-signature']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/no signature/),
    });
    expect(checks['record-signature']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/names signer/),
    });
    expect(checks.inclusion?.status).toBe('pass');
  });

  it('fails a checkpoint of the same tree signed by another key than the server names', async () => {
    const proof = proofOf(file, runId(2));
    const real = parseCheckpoint(proof.checkpoint as string);
    const forged = signCheckpoint(real.origin, real.size, real.root, stranger.privateKey);
    const checks = byId(await verifyRunProof({ ...proof, checkpoint: forged.text }));
    expect(checks['checkpoint-signature']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/no signature on .* is by the server's checkpoint key/),
    });
    expect(checks.inclusion?.status).toBe('pass');
  });

  it('fails a checkpoint whose text was altered after signing', async () => {
    const proof = proofOf(file, runId(2));
    const altered = {
      ...proof,
      checkpoint: (proof.checkpoint as string).replace(/\n(\d+)\n/, (_, n) => `\n${Number(n) + 1}\n`),
    };
    const checks = byId(await verifyRunProof(altered));
    expect(checks['checkpoint-signature']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/does not verify/),
    });
    expect(checks.inclusion).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/checkpoint signs/),
    });
  });

  it('fails inclusion when a byte of the leaf is flipped, or a proof hash is wrong', async () => {
    const proof = proofOf(file, runId(4));
    const leaf = Buffer.from(proof.leaf as string, 'base64');
    // "alice" becomes "alicd": still canonical JSON of this run, outside the record.
    const at = leaf.indexOf('"principal":"alice"') + 17;
    leaf.writeUInt8(leaf.readUInt8(at) ^ 0x01, at);
    const flipped = byId(await verifyRunProof({ ...proof, leaf: leaf.toString('base64') }));
    expect(flipped.inclusion).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/not the checkpoint's/),
    });
    expect(flipped.leaf?.status).toBe('pass');
    expect(flipped['record-digest']?.status).toBe('pass');
    const hashes = [...(proof.inclusion?.hashes ?? [])];
    const first = Buffer.from(hashes[0] as string, 'base64');
    first.writeUInt8(first.readUInt8(0) ^ 0xff, 0);
    hashes[0] = first.toString('base64');
    const wrongPath = byId(
      await verifyRunProof({ ...proof, inclusion: { tree_size: proof.inclusion?.tree_size ?? 0, hashes } }),
    );
    expect(wrongPath.inclusion?.status).toBe('fail');
    expect(wrongPath.leaf?.status).toBe('pass');
    const short = byId(
      await verifyRunProof({
        ...proof,
        inclusion: { tree_size: proof.inclusion?.tree_size ?? 0, hashes: hashes.slice(1) },
      }),
    );
    expect(short.inclusion).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/not an audit path/),
    });
  });

  it('fails the record digest when the record in the leaf does not match it, and the signature with it', async () => {
    const proof = withLeaf(proofOf(file, runId(5)), (leaf) => {
      (leaf.record as { tool: { version: string } }).tool.version = '6.6.6';
    });
    const checks = byId(await verifyRunProof(proof));
    expect(checks['record-digest']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/the leaf says sha256:/),
    });
    expect(checks['record-signature']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/cannot hold/),
    });
    expect(checks.inclusion?.status).toBe('fail');
  });

  it('fails a record whose own integrity.record_digest is not its digest', async () => {
    const proof = withLeaf(proofOf(file, runId(5)), (leaf) => {
      const integrity = (leaf.record as { integrity: { record_digest: { value: string } } }).integrity;
      integrity.record_digest.value = '0'.repeat(64);
    });
    const checks = byId(await verifyRunProof(proof));
    expect(checks['record-digest']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/integrity\.record_digest is sha256:0000/),
    });
  });

  it('fails an envelope text the leaf does not name', async () => {
    const proof = proofOf(file, runId(6));
    const checks = byId(
      await verifyRunProof({
        ...proof,
        envelope_text: (proof.envelope_text as string).replace('answer 6', 'answer 9'),
      }),
    );
    expect(checks['envelope-digest']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/the leaf says sha256:/),
    });
    expect(checks.inclusion?.status).toBe('pass');
  });

  it('fails leaf bytes that are not canonical JSON, or another run’s', async () => {
    const proof = proofOf(file, runId(1));
    const spaced = Buffer.from(`${Buffer.from(proof.leaf as string, 'base64').toString('utf8')} `).toString(
      'base64',
    );
    expect(byId(await verifyRunProof({ ...proof, leaf: spaced })).leaf).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/canonical/),
    });
    const other = proofOf(file, runId(2));
    expect(byId(await verifyRunProof({ ...proof, leaf: other.leaf })).leaf).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/not run/),
    });
  });

  it('passes a run stored without its envelope, saying there was none to check', async () => {
    const ledger = Ledger.open(join(dir, 'no-envelope.sqlite'));
    ledger.insert(callRecord(runId(1)).record, { upstream: 'up' });
    writeCheckpoint(ledger, signer.privateKey);
    const unsigned = runProof(ledger, runId(1), signer.publicKey);
    ledger.close();
    const checks = await verifyRunProof(unsigned);
    expect(byId(checks)['envelope-digest']).toMatchObject({ status: 'not-checked', absent: true });
    expect(byId(checks)['record-signature']).toMatchObject({ status: 'not-checked', absent: true });
    expect(outcomeOf(checks)).toBe('pass');
    expect(outcomeOf([...checks, { id: 'x', status: 'fail', title: '', detail: '' }])).toBe('fail');
  });

  it('fails a run the log holds no entry for', async () => {
    const checks = byId(await verifyRunProof({ ...proofOf(file, runId(1)), leaf: null, leaf_index: null }));
    expect(checks.leaf).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/no entry for this run/),
    });
    expect(checks.inclusion?.status).toBe('fail');
    expect(checks['record-digest']?.status).toBe('not-checked');
  });

  it('says what it could not check: no checkpoint, no signature, no envelope', async () => {
    const checks = byId(await verifyRunProof(proofOf(bare, runId(1), undefined)));
    expect(checks.leaf?.status).toBe('pass');
    expect(checks['record-digest']?.status).toBe('pass');
    for (const id of ['inclusion', 'checkpoint-signature', 'record-signature']) {
      expect(checks[id]?.status).toBe('not-checked');
    }
    expect(checks.inclusion?.detail).toMatch(/no checkpoint/);
    expect(checks['record-signature']).toMatchObject({
      detail: expect.stringMatching(/not signed/),
      absent: true,
    });
    expect(checks.inclusion?.absent).toBeUndefined();
    expect(outcomeOf(Object.values(checks))).toBe('partial');
  });

  it('fails closed on a key it cannot read: the server’s keys are not used instead', async () => {
    for (const [given, why] of [
      ['not a key', /neither base64 nor a PEM/],
      [toBase64(new Uint8Array(31)), /31 bytes/],
      ['-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----', /only a "BEGIN PUBLIC KEY"/],
      [
        generateKeyPairSync('ec', { namedCurve: 'P-256' })
          .publicKey.export({ type: 'spki', format: 'pem' })
          .toString(),
        /not an Ed25519/,
      ],
    ] as const) {
      const checks = byId(await verifyRunProof(proofOf(file, runId(1)), given));
      expect(checks['trusted-key']).toMatchObject({ status: 'fail', detail: expect.stringMatching(why) });
      expect(checks['checkpoint-signature']?.status).toBe('not-checked');
      expect(checks['record-signature']?.status).toBe('not-checked');
    }
  });

  it('answers one failed check for something that is not a run proof', async () => {
    for (const [value, why] of [
      [null, /not a JSON object/],
      [{ run_id: 'r', leaf_index: -1 }, /leaf_index/],
      [{ ...proofOf(file, runId(1)), keys: [{ purpose: 'record' }] }, /keys/],
      [{ ...proofOf(file, runId(1)), inclusion: { tree_size: 3, hashes: [1] } }, /inclusion/],
    ] as const) {
      expect(await verifyRunProof(value)).toEqual([
        { id: 'proof', status: 'fail', title: expect.any(String), detail: expect.stringMatching(why) },
      ]);
    }
  });

  it('finds the same roots as the server’s RFC 9162 code for every leaf of trees of 1 to 20 leaves', async () => {
    const leaves = Array.from({ length: 20 }, (_, i) => Buffer.from(`leaf ${i}`));
    const tree = new MemoryTree(leaves.map((leaf) => nodeLeafHash(leaf)));
    for (let size = 1; size <= leaves.length; size++) {
      const root = Buffer.from(tree.root(size));
      for (let index = 0; index < size; index++) {
        const path = inclusionProof(tree, index, size);
        const found = await rootFromInclusion(leaves[index] as Buffer, index, size, path);
        expect(Buffer.from(found as Uint8Array).equals(root)).toBe(true);
        if (size > 1)
          expect(await rootFromInclusion(leaves[index] as Buffer, index, size, path.slice(1))).not.toEqual(
            root,
          );
      }
    }
  });
});

/** A checkpoint covering every entry, so each run has an inclusion proof. */
async function writeCheckpointNow(): Promise<void> {
  const ledger = Ledger.open(file);
  writeCheckpoint(ledger, signer.privateKey);
  ledger.close();
}
