/**
 * The byte helpers of the browser's verification: base64 read strictly (one
 * spelling per byte string), and the public key a person pastes, as raw
 * base64 or a PEM SubjectPublicKeyInfo, compared with what node:crypto makes.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromBase64, parseTrustedKey, toBase64, toHex } from '../../../../src/ledger/web/browser/encoding.ts';

describe('fromBase64', () => {
  it('reads what Buffer writes, and nothing spelled otherwise', () => {
    for (const length of [0, 1, 2, 3, 31, 32, 33, 64]) {
      const bytes = Buffer.from(Array.from({ length }, (_, i) => (i * 37 + length) & 0xff));
      expect(Buffer.from(fromBase64(bytes.toString('base64')) as Uint8Array).equals(bytes)).toBe(true);
      expect(toBase64(bytes)).toBe(bytes.toString('base64'));
    }
    // Unpadded, URL-safe, spaced, or with pad bits set: each a second spelling, refused.
    for (const text of ['QQ', 'QR==', 'a-_b', 'QUJD RA==', 'QUJDRA=', '====', 'Q===']) {
      expect(fromBase64(text), text).toBeUndefined();
    }
    expect(toHex(new Uint8Array([0, 15, 255]))).toBe('000fff');
  });
});

describe('parseTrustedKey', () => {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();

  it('takes raw base64 and PEM SPKI to the same 32 bytes, with surrounding white space', () => {
    for (const given of [raw.toString('base64'), pem, `\n  ${pem}\n\n`, pem.replace(/\n/g, '\r\n')]) {
      const parsed = parseTrustedKey(given);
      expect(parsed).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(parsed as Uint8Array).equals(raw)).toBe(true);
    }
  });

  it('says what is wrong with anything else', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({
      type: 'spki',
      format: 'pem',
    });
    expect(parseTrustedKey(rsa.toString())).toMatch(/not an Ed25519 public key/);
    expect(parseTrustedKey(pem.replace('KEY-----\nMCow', 'KEY-----\n!Cow'))).toMatch(
      /only a "BEGIN PUBLIC KEY"|not base64/,
    );
    expect(parseTrustedKey('-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----')).toMatch(
      /only a "BEGIN PUBLIC KEY"/,
    );
    expect(parseTrustedKey(Buffer.alloc(33).toString('base64'))).toMatch(/33 bytes/);
    expect(parseTrustedKey('ed25519:0123')).toMatch(/neither base64 nor a PEM/);
  });
});
