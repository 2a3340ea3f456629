import { createPublicKey, verify as cryptoVerify, sign } from 'node:crypto';
import { crypto as sigstoreCrypto, dsse as sigstoreDsse } from '@sigstore/core';
import { toSignedEntity } from '@sigstore/verify';
import { describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../../src/canonical/canonical-bytes.ts';
import { digestValue } from '../../../src/canonical/digest.ts';
import { EnvelopeError } from '../../../src/errors/index.ts';
import {
  DSSE_RECORD_PAYLOAD_TYPE,
  type DsseEnvelope,
  dssePae,
  generateSigningKeyPair,
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
  inTotoStatement,
  keyIdFor,
  loadPrivateKey,
  loadPublicKey,
  METHODS,
  PROV_RECORD_PREDICATE_TYPE,
  type ProvRecord,
  parseDsseEnvelope,
  RecordBuilder,
  signDsse,
  signInTotoStatement,
  signRecord,
  signRecordDsse,
  verifyDsse,
} from '../../../src/provenance/index.ts';

function keys() {
  const pair = generateSigningKeyPair();
  return {
    privateKey: loadPrivateKey(pair.privateKeyPem),
    publicKey: loadPublicKey(pair.publicKeyPem),
    publicKeyPem: pair.publicKeyPem,
  };
}
const alice = keys();
const bob = keys();
const mallory = keys();

function record(): ProvRecord {
  return new RecordBuilder({ runId: 'run-1', tool: { name: 'scanner', version: '1.2.3' } })
    .claim(METHODS.wrap)
    .input({ id: 'args', mediaType: 'application/json', content: { json: { path: 'x' } }, digest: 'sha256' })
    .output({ id: 'result', mediaType: 'application/json', content: { json: [1, 2] }, digest: 'sha256' })
    .output({ id: 'report', mediaType: 'text/plain', content: { text: 'ok\n' }, digest: 'sha512' })
    .output({ id: 'log', mediaType: 'text/plain' })
    .build();
}

function code(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof EnvelopeError) return error.code;
    throw error;
  }
  return undefined;
}

/** Payload bytes that JSON would not round-trip: a re-serializing verifier would fail them. */
const odd = Buffer.from('{ "b": 1,\n  "a": 1.0 }\u00e9\u0000', 'utf8');

describe('DSSE PAE', () => {
  it('is "DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in bytes', () => {
    expect(dssePae('http://example.com/HelloWorld', Buffer.from('hello world')).toString('latin1')).toBe(
      'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
    );
    expect(
      dssePae('t\u00e9', Buffer.from([0xff])).equals(
        Buffer.from('DSSEv1 3 t\u00c3\u00a9 1 \u00ff', 'latin1'),
      ),
    ).toBe(true);
  });

  it("is byte-identical to @sigstore/core's preAuthEncoding", () => {
    const cases: [string, Buffer][] = [
      [DSSE_RECORD_PAYLOAD_TYPE, canonicalBytes(record())],
      [IN_TOTO_PAYLOAD_TYPE, canonicalBytes(inTotoStatement(record()))],
      ['', Buffer.alloc(0)],
      ['application/x-\u00fcnicode \u{1f600}', odd],
      ['t', Buffer.alloc(100_000, 7)],
    ];
    for (const [type, payload] of cases) {
      expect(dssePae(type, payload).equals(sigstoreDsse.preAuthEncoding(type, payload)), type).toBe(true);
    }
  });
});

describe('signDsse and verifyDsse', () => {
  it('round-trips the payload exactly as given, with the key ids records use', () => {
    const envelope = signDsse(odd, 'application/octet-stream', [alice.privateKey]);
    expect(envelope.signatures).toEqual([{ keyid: keyIdFor(alice.publicKey), sig: expect.any(String) }]);
    expect(Buffer.from(envelope.payload, 'base64').equals(odd)).toBe(true);
    const result = verifyDsse(JSON.parse(JSON.stringify(envelope)), [alice.publicKey]);
    expect(result.ok).toBe(true);
    expect(result.payload.equals(odd)).toBe(true);
    expect(result.verifiedBy).toEqual([keyIdFor(alice.publicKey)]);
  });

  it('carries several signatures and says which keys verified', () => {
    const envelope = signDsse(odd, 'application/octet-stream', [
      alice.privateKey,
      { key: bob.privateKey, keyId: 'bob' },
    ]);
    expect(envelope.signatures.map((s) => s.keyid)).toEqual([keyIdFor(alice.publicKey), 'bob']);
    const both = verifyDsse(envelope, [alice.publicKey, bob.publicKey]);
    expect(both.ok).toBe(true);
    expect(both.keys).toEqual([
      { keyId: keyIdFor(alice.publicKey), signatures: [0] },
      { keyId: keyIdFor(bob.publicKey), signatures: [1] },
    ]);
    // Each key alone verifies; one that signed nothing makes the result not ok and is named.
    expect(verifyDsse(envelope, [bob.publicKey]).ok).toBe(true);
    const withMallory = verifyDsse(envelope, [alice.publicKey, mallory.publicKey]);
    expect(withMallory.ok).toBe(false);
    expect(withMallory.verifiedBy).toEqual([keyIdFor(alice.publicKey)]);
  });

  it('keyid is a hint: a signature is tried against every key whatever its keyid says', () => {
    const envelope = signDsse(odd, 'x', [alice.privateKey]);
    const relabelled = {
      ...envelope,
      signatures: [{ keyid: keyIdFor(bob.publicKey), sig: envelope.signatures[0]?.sig }],
    };
    expect(verifyDsse(relabelled, [alice.publicKey]).ok).toBe(true);
    expect(verifyDsse(relabelled, [bob.publicKey]).ok).toBe(false);
    const { keyid: _dropped, ...noKeyid } = envelope.signatures[0] as { keyid: string; sig: string };
    expect(verifyDsse({ ...envelope, signatures: [noKeyid] }, [alice.publicKey]).ok).toBe(true);
  });

  it('fails a flipped payload byte, a changed payloadType and a signature by another key', () => {
    const envelope = signRecordDsse(record(), [alice.privateKey]);
    expect(verifyDsse(envelope, [alice.publicKey]).ok).toBe(true);
    const payload = Buffer.from(envelope.payload, 'base64');
    for (let index = 0; index < payload.length; index += 17) {
      const flipped = Buffer.from(payload);
      flipped[index] = (flipped[index] as number) ^ 0x01;
      expect(verifyDsse({ ...envelope, payload: flipped.toString('base64') }, [alice.publicKey]).ok).toBe(
        false,
      );
    }
    expect(verifyDsse({ ...envelope, payloadType: IN_TOTO_PAYLOAD_TYPE }, [alice.publicKey]).ok).toBe(false);
    expect(
      verifyDsse({ ...envelope, payloadType: `${DSSE_RECORD_PAYLOAD_TYPE} ` }, [alice.publicKey]).ok,
    ).toBe(false);
    const byMallory = signRecordDsse(record(), [
      { key: mallory.privateKey, keyId: keyIdFor(alice.publicKey) },
    ]);
    const result = verifyDsse(byMallory, [alice.publicKey]);
    expect(result.ok).toBe(false);
    expect(result.verifiedBy).toEqual([]);
    // Moving bytes between the type and the payload changes the PAE: the length prefixes bind both.
    const split = signDsse(Buffer.from('b c'), 'a', [alice.privateKey]);
    expect(
      verifyDsse({ ...split, payloadType: 'a b', payload: Buffer.from('c').toString('base64') }, [
        alice.publicKey,
      ]).ok,
    ).toBe(false);
  });

  it('a flipped signature bit or a truncated signature fails', () => {
    const envelope = signDsse(odd, 'x', [alice.privateKey]);
    const sig = Buffer.from(envelope.signatures[0]?.sig as string, 'base64');
    sig[10] = (sig[10] as number) ^ 0x80;
    expect(
      verifyDsse({ ...envelope, signatures: [{ keyid: '', sig: sig.toString('base64') }] }, [alice.publicKey])
        .ok,
    ).toBe(false);
    const short = sig.subarray(0, 63).toString('base64');
    expect(verifyDsse({ ...envelope, signatures: [{ keyid: '', sig: short }] }, [alice.publicKey]).ok).toBe(
      false,
    );
  });

  it('accepts URL-safe and unpadded base64 but nothing that is not the one encoding of its bytes', () => {
    const payload = Buffer.from([0xfb, 0xff, 0xfe, 0x01]);
    const envelope = signDsse(payload, 'x', [alice.privateKey]);
    expect(envelope.payload).toBe('+//+AQ==');
    for (const text of ['-__-AQ==', '-__-AQ', '+//+AQ']) {
      expect(verifyDsse({ ...envelope, payload: text }, [alice.publicKey]).ok, text).toBe(true);
    }
    for (const text of ['+//+AR==', '+//+AQ=', '+/_+AQ==', '+//+ AQ==', '+//+AQ==\n', '+//+AQ===']) {
      expect(
        code(() => verifyDsse({ ...envelope, payload: text }, [alice.publicKey])),
        text,
      ).toBe('DSSE_INVALID');
    }
  });

  it('refuses what is not an envelope with DSSE_INVALID, and keys that cannot verify with KEY_INVALID', () => {
    const envelope = signDsse(odd, 'x', [alice.privateKey]);
    for (const value of [
      null,
      [],
      'x',
      { ...envelope, payload: 1 },
      { ...envelope, payloadType: '' },
      { ...envelope, signatures: [] },
      { ...envelope, signatures: {} },
      { ...envelope, signatures: [null] },
      { ...envelope, signatures: [{ keyid: 1, sig: envelope.signatures[0]?.sig }] },
      { ...envelope, signatures: [{ keyid: '' }] },
      { ...envelope, signatures: Array.from({ length: 65 }, () => envelope.signatures[0]) },
    ]) {
      expect(
        code(() => verifyDsse(value, [alice.publicKey])),
        JSON.stringify(value)?.slice(0, 80),
      ).toBe('DSSE_INVALID');
      expect(code(() => parseDsseEnvelope(value))).toBe('DSSE_INVALID');
    }
    expect(code(() => verifyDsse(envelope, [alice.privateKey]))).toBe('KEY_INVALID');
    expect(code(() => verifyDsse(envelope, []))).toBe('INVALID_INPUT');
    expect(code(() => signDsse(odd, 'x', [alice.publicKey]))).toBe('KEY_INVALID');
    expect(code(() => signDsse(odd, 'x', []))).toBe('INVALID_INPUT');
    expect(code(() => signDsse(odd, '', [alice.privateKey]))).toBe('INVALID_INPUT');
  });
});

/**
 * sigstore's own DSSE check (@sigstore/verify's DSSESignatureContent, reached
 * through toSignedEntity with a bundle holding the envelope and a public-key
 * hint): it verifies the first signature over @sigstore/core's PAE with
 * crypto.verify, so each of our signatures is put first in a bundle of its own.
 */
function sigstoreVerifies(envelope: DsseEnvelope, index: number, publicKeyPem: string): boolean {
  const signature = envelope.signatures[index] as { keyid: string; sig: string };
  const bundle = {
    mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
    verificationMaterial: {
      content: { $case: 'publicKey', publicKey: { hint: signature.keyid } },
      tlogEntries: [],
      timestampVerificationData: undefined,
    },
    content: {
      $case: 'dsseEnvelope',
      dsseEnvelope: {
        payload: Buffer.from(envelope.payload, 'base64'),
        payloadType: envelope.payloadType,
        signatures: [{ keyid: signature.keyid, sig: Buffer.from(signature.sig, 'base64') }],
      },
    },
  } as unknown as Parameters<typeof toSignedEntity>[0];
  const entity = toSignedEntity(bundle);
  return entity.signature.verifySignature(sigstoreCrypto.createPublicKey(publicKeyPem));
}

describe('cross-checked with sigstore', () => {
  it("our envelopes verify with @sigstore/verify's DSSE signature check, and tampering fails there too", () => {
    const envelope = signRecordDsse(record(), [alice.privateKey, bob.privateKey]);
    expect(sigstoreVerifies(envelope, 0, alice.publicKeyPem)).toBe(true);
    expect(sigstoreVerifies(envelope, 1, bob.publicKeyPem)).toBe(true);
    expect(sigstoreVerifies(envelope, 0, bob.publicKeyPem)).toBe(false);
    expect(sigstoreVerifies({ ...envelope, payloadType: IN_TOTO_PAYLOAD_TYPE }, 0, alice.publicKeyPem)).toBe(
      false,
    );
    const statement = signInTotoStatement(record(), [alice.privateKey]);
    expect(sigstoreVerifies(statement, 0, alice.publicKeyPem)).toBe(true);
    const odds = signDsse(odd, 'application/octet-stream', [alice.privateKey]);
    expect(sigstoreVerifies(odds, 0, alice.publicKeyPem)).toBe(true);
  });

  it("a signature made with node:crypto over sigstore's PAE verifies with verifyDsse", () => {
    // Signed outside signDsse: node:crypto over @sigstore/core's PAE.
    const payload = canonicalBytes(record());
    const pae = sigstoreDsse.preAuthEncoding(DSSE_RECORD_PAYLOAD_TYPE, payload);
    const envelope = {
      payload: payload.toString('base64'),
      payloadType: DSSE_RECORD_PAYLOAD_TYPE,
      signatures: [{ keyid: '', sig: sign(null, pae, alice.privateKey).toString('base64') }],
    };
    expect(verifyDsse(envelope, [alice.publicKey]).ok).toBe(true);
    expect(
      cryptoVerify(
        null,
        pae,
        createPublicKey(alice.publicKeyPem),
        Buffer.from(envelope.signatures[0]?.sig as string, 'base64'),
      ),
    ).toBe(true);
  });
});

describe('records and in-toto statements', () => {
  it("a record's payload is its canonical bytes, signature and all", () => {
    const signed = signRecord(record(), alice.privateKey);
    const envelope = signRecordDsse(signed, [alice.privateKey]);
    expect(envelope.payloadType).toBe(DSSE_RECORD_PAYLOAD_TYPE);
    expect(Buffer.from(envelope.payload, 'base64').equals(canonicalBytes(signed))).toBe(true);
  });

  it("a statement's subjects are the record's output artifacts with their digests", () => {
    const value = record();
    const statement = inTotoStatement(value);
    expect(statement._type).toBe(IN_TOTO_STATEMENT_TYPE);
    expect(statement._type).toBe('https://in-toto.io/Statement/v1');
    expect(statement.predicateType).toBe(PROV_RECORD_PREDICATE_TYPE);
    expect(statement.predicate).toEqual(value);
    expect(statement.subject).toEqual(
      value.outputs
        .filter((artifact) => artifact.digest)
        .map((artifact) => ({
          name: artifact.artifact_id,
          digest: { [artifact.digest?.alg as string]: artifact.digest?.value },
        })),
    );
    expect(statement.subject.map((s) => Object.keys(s.digest)[0])).toEqual(['sha256', 'sha512']);
    expect(statement.subject[0]).toEqual({ name: 'result', digest: { sha256: digestValue([1, 2]).value } });

    const envelope = signInTotoStatement(value, [alice.privateKey]);
    expect(envelope.payloadType).toBe(IN_TOTO_PAYLOAD_TYPE);
    const verified = verifyDsse(envelope, [alice.publicKey]);
    expect(verified.ok).toBe(true);
    expect(JSON.parse(verified.payload.toString('utf8'))).toEqual(statement);
    expect(verified.payload.equals(canonicalBytes(statement))).toBe(true);
  });

  it('a record without output digests has nothing to attest to', () => {
    const bare = new RecordBuilder({ runId: 'r', tool: { name: 't', version: '1' } })
      .output({ id: 'log', mediaType: 'text/plain' })
      .build();
    expect(code(() => inTotoStatement(bare))).toBe('INVALID_INPUT');
  });
});
