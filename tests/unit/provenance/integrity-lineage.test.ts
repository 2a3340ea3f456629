import { describe, expect, it } from 'vitest';
import {
  attachRecordDigest,
  buildArtifact,
  checkRecordDigest,
  checkSignature,
  computeRecordDigest,
  generateSigningKeyPair,
  keyIdFor,
  LineageGraph,
  loadPrivateKey,
  loadPublicKey,
  METHODS,
  type ProvRecord,
  RecordBuilder,
  signRecord,
} from '../../../src/provenance/index.ts';

const pair = generateSigningKeyPair();
const privateKey = loadPrivateKey(pair.privateKeyPem);
const publicKey = loadPublicKey(pair.publicKeyPem);

function record(runId = 'run-1', parents: string[] = []): ProvRecord {
  const builder = new RecordBuilder({ runId, tool: { name: 'scanner', version: '1.2.3', adapter: 'cli' } })
    .claim(METHODS.wrap)
    .input({ id: 'args', mediaType: 'application/json', content: { json: { path: 'x' } }, digest: 'sha256' })
    .output({
      id: 'result',
      mediaType: 'application/json',
      content: { json: [1, 2] },
      digest: 'sha256',
      size: true,
    });
  for (const parent of parents) builder.parent(parent);
  return builder.build();
}

describe('RecordBuilder', () => {
  it('claims exactly the methods it applied, in order, once', () => {
    expect(record('r', ['p']).methods).toEqual([
      METHODS.wrap,
      'integrity.digest.sha256',
      METHODS.registerInput,
      METHODS.registerOutput,
      METHODS.parentLink,
      METHODS.build,
    ]);
  });

  it('digests JSON content canonically and records its size', () => {
    const artifact = buildArtifact({
      id: 'a',
      mediaType: 'application/json',
      content: { json: { b: 1, a: 2 } },
      digest: 'sha256',
      size: true,
    });
    expect(artifact.size_bytes).toBe('{"a":2,"b":1}'.length);
    expect(() => buildArtifact({ id: 'a', mediaType: 'x', digest: 'sha256' })).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
  });

  it('rejects an invalid evidence anchor', () => {
    const builder = new RecordBuilder({ runId: 'r', tool: { name: 't', version: '1' } });
    expect(() => builder.evidence('f', 'not-an-anchor')).toThrow(
      expect.objectContaining({ code: 'ANCHOR_INVALID' }),
    );
  });
});

describe('record digest', () => {
  it('is over the record without its integrity member, and detects changes', () => {
    const withDigest = attachRecordDigest(record());
    expect(withDigest.methods).toContain(METHODS.recordDigest);
    expect(withDigest.integrity?.record_digest).toEqual(computeRecordDigest(withDigest));
    expect(checkRecordDigest(withDigest).status).toBe('pass');
    expect(checkRecordDigest(record()).status).toBe('absent');
    const changed = { ...withDigest, tool: { ...withDigest.tool, version: '9' } };
    expect(checkRecordDigest(changed).status).toBe('fail');
    expect(computeRecordDigest(record(), 'blake3').value).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('Ed25519 signatures', () => {
  const signed = signRecord(record(), privateKey);

  it('signs and verifies, claiming the integrity methods', () => {
    expect(signed.methods).toEqual(expect.arrayContaining([METHODS.recordDigest, METHODS.signatureCreate]));
    expect(signed.integrity?.signature?.key_id).toBe(keyIdFor(publicKey));
    expect(checkSignature(signed, publicKey).status).toBe('pass');
    expect(checkSignature(signed, undefined).status).toBe('unverifiable');
    expect(checkSignature(record(), publicKey).status).toBe('absent');
  });

  it('fails with another key', () => {
    const other = loadPublicKey(generateSigningKeyPair().publicKeyPem);
    expect(checkSignature(signed, other).status).toBe('fail');
    const anonymous = structuredClone(signed);
    (anonymous.integrity as { signature: { key_id: string } }).signature.key_id = 'someone';
    expect(checkSignature(anonymous, other).status).toBe('fail');
  });

  it('fails when any field of the signed record changes', () => {
    const paths: ((r: ProvRecord) => void)[] = [
      (r) => {
        r.run_id = 'run-2';
      },
      (r) => {
        r.tool.name = 'other';
      },
      (r) => {
        r.methods.pop();
      },
      (r) => {
        r.parents.push('x');
      },
      (r) => {
        (r.outputs[0] as { media_type: string }).media_type = 'text/plain';
      },
      (r) => {
        (r.inputs[0] as { digest: { value: string } }).digest.value = '0'.repeat(64);
      },
      (r) => {
        r.time = '2026-01-01T00:00:00Z';
      },
      (r) => {
        (r.integrity as { record_digest: { value: string } }).record_digest.value = '0'.repeat(64);
      },
    ];
    for (const mutate of paths) {
      const copy = structuredClone(signed);
      mutate(copy);
      expect(checkSignature(copy, publicKey).status).toBe('fail');
    }
  });

  it('fails when any byte of the signature changes', () => {
    const value = signed.integrity?.signature?.value as string;
    const bytes = Buffer.from(value, 'base64');
    for (let i = 0; i < bytes.length; i += 7) {
      const flipped = Buffer.from(bytes);
      flipped[i] = (flipped[i] as number) ^ 0x01;
      const copy = structuredClone(signed);
      (copy.integrity as { signature: { value: string } }).signature.value = flipped.toString('base64');
      expect(checkSignature(copy, publicKey).status).toBe('fail');
    }
    const garbage = structuredClone(signed);
    (garbage.integrity as { signature: { value: string } }).signature.value = '!!not base64!!';
    expect(checkSignature(garbage, publicKey).status).toBe('fail');
  });

  it('rejects unusable keys with KEY_INVALID', () => {
    expect(() => loadPrivateKey('not a pem')).toThrow(expect.objectContaining({ code: 'KEY_INVALID' }));
    expect(() => loadPublicKey(pair.privateKeyPem.replace('PRIVATE', 'PUBLIC'))).toThrow(
      expect.objectContaining({ code: 'KEY_INVALID' }),
    );
  });
});

describe('lineage', () => {
  it('builds a DAG with roots, order and missing parents', () => {
    const graph = new LineageGraph([record('a'), record('b', ['a']), record('c', ['b', 'a', 'gone'])]);
    const report = graph.report();
    expect(report.acyclic).toBe(true);
    expect(report.roots).toEqual(['a']);
    expect(report.order).toEqual(['a', 'b', 'c']);
    expect(report.missingParents).toEqual(['gone']);
    expect(graph.ancestors('c')).toEqual(['b', 'a', 'gone']);
    expect(() => graph.assertAcyclic()).not.toThrow();
  });

  it('reports cycles as errors', () => {
    const graph = new LineageGraph([record('a', ['c']), record('b', ['a']), record('c', ['b'])]);
    const report = graph.report();
    expect(report.acyclic).toBe(false);
    expect(report.cycles).toHaveLength(1);
    expect(report.order).toBeUndefined();
    expect(() => graph.assertAcyclic()).toThrow(expect.objectContaining({ code: 'LINEAGE_CYCLE' }));
    expect(new LineageGraph([record('self', ['self'])]).report().acyclic).toBe(false);
  });

  it('reports duplicate run ids', () => {
    expect(new LineageGraph([record('a'), record('a')]).report().duplicateRunIds).toEqual(['a']);
  });

  it('handles a long chain without recursion', () => {
    const records = Array.from({ length: 20_000 }, (_, i) => record(`r${i}`, i === 0 ? [] : [`r${i - 1}`]));
    const report = new LineageGraph(records).report();
    expect(report.acyclic).toBe(true);
    expect(report.order?.[0]).toBe('r0');
  });
});

describe('signature algorithm swaps', () => {
  it('a signature whose algorithm was changed fails when a key is given, instead of being skipped', async () => {
    const { verify } = await import('../../../src/provenance/index.ts');
    const signed = signRecord(record(), privateKey);
    const swapped = structuredClone(signed);
    (swapped.integrity as { signature: { alg: string } }).signature.alg = 'rsa-pss';
    expect(checkSignature(swapped, publicKey).status).toBe('fail');
    expect(checkSignature(swapped, undefined).status).toBe('unverifiable');
    const report = await verify(swapped, { publicKey });
    expect(report.ok).toBe(false);
    expect(report.checks.find((check) => check.check === 'signature')).toMatchObject({
      status: 'fail',
      code: 'SIGNATURE_INVALID',
    });
  });
});
