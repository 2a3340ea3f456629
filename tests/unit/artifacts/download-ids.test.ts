import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DOWNLOAD_ID_MAX_LENGTH,
  signDownloadId,
  verifyDownloadId,
} from '../../../src/artifacts/download-ids.ts';
import { KEYS_FILE, Keyring } from '../../../src/artifacts/keyring.ts';

const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'download-ids-'));
  folders.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

const GRANT = '0123456789abcdef0123456789abcdef';
const NOW = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const keys = Keyring.fromKeys([
  { id: 'main', secret: 'a'.repeat(32) },
  { id: 'old', secret: 'b'.repeat(32) },
]);

describe('download ids', () => {
  const id = signDownloadId(GRANT, NOW + HOUR, keys);

  it('verify with the keyring alone, carrying grant, expiry and key', () => {
    expect(id).toMatch(/^[0-9a-f]{32}\.\d+\.main\.[A-Za-z0-9_-]{43}$/);
    expect(verifyDownloadId(id, keys, NOW)).toEqual({
      ok: true,
      grantId: GRANT,
      expiresAt: NOW + HOUR,
      kid: 'main',
    });
  });

  it('may be used again and again until they expire', () => {
    for (let use = 0; use < 3; use++) expect(verifyDownloadId(id, keys, NOW + use).ok).toBe(true);
    expect(verifyDownloadId(id, keys, NOW + HOUR)).toEqual({ ok: false, code: 'DOWNLOAD_EXPIRED' });
  });

  it('tells a missing id from a malformed one', () => {
    for (const missing of [undefined, null, '']) {
      expect(verifyDownloadId(missing, keys, NOW)).toEqual({ ok: false, code: 'DOWNLOAD_ID_MISSING' });
    }
    const [grant, expiry, kid, signature] = id.split('.') as [string, string, string, string];
    for (const malformed of [
      id.slice(0, -1), // truncated signature
      id.slice(0, 40), // truncated anywhere
      `${grant}.${expiry}.${kid}`, // no signature
      `${grant.toUpperCase()}.${expiry}.${kid}.${signature}`, // charset
      `${grant}x.${expiry}.${kid}.${signature}`,
      `${grant}.-1.${kid}.${signature}`,
      `${grant}.${expiry}.k/../x.${signature}`,
      `${id}.extra`,
      `../../etc/passwd`,
      `%2e%2e%2f${id}`,
      `${id}\u0000`,
      `${id}\r\nx-injected: 1`,
      'x'.repeat(DOWNLOAD_ID_MAX_LENGTH + 1),
      42,
    ]) {
      expect(verifyDownloadId(malformed, keys, NOW), String(malformed)).toEqual({
        ok: false,
        code: 'DOWNLOAD_ID_MALFORMED',
      });
    }
  });

  it('refuses an id with any part tampered with as a bad signature, a forged expiry included', () => {
    const [grant, expiry, kid, signature] = id.split('.') as [string, string, string, string];
    const flip = (text: string) => (text[0] === 'a' ? 'b' : 'a') + text.slice(1);
    for (const tampered of [
      `${flip(grant)}.${expiry}.${kid}.${signature}`,
      `${grant}.${Number(expiry) + 3600}.${kid}.${signature}`,
      `${grant}.${Number(expiry) - 7200}.${kid}.${signature}`, // would be expired, but the signature fails first
      `${grant}.${expiry}.old.${signature}`,
      `${grant}.${expiry}.${kid}.${flip(signature)}`,
      // The last base64url character carries spare bits: a variant decoding to the same bytes is still refused.
      `${grant}.${expiry}.${kid}.${signature.slice(0, -1)}${signature.at(-1) === 'A' ? 'B' : 'A'}`,
    ]) {
      expect(verifyDownloadId(tampered, keys, NOW), tampered).toEqual({
        ok: false,
        code: 'DOWNLOAD_SIGNATURE_INVALID',
      });
    }
  });

  it('refuses an id signed to outlive the longest link lifetime, whoever holds the key', () => {
    const lasting = Keyring.fromKeys([{ id: 'main', secret: 'a'.repeat(32) }], { maxTtlMs: 2 * HOUR });
    // Up to the lifetime, and the second an id's expiry is rounded up by: accepted.
    for (const expiresAt of [NOW + 2 * HOUR, NOW + 2 * HOUR + 999]) {
      expect(verifyDownloadId(signDownloadId(GRANT, expiresAt, lasting), lasting, NOW).ok).toBe(true);
    }
    for (const expiresAt of [NOW + 2 * HOUR + 2000, NOW + 30 * 24 * HOUR, 999_999_999_999_000]) {
      expect(verifyDownloadId(signDownloadId(GRANT, expiresAt, lasting), lasting, NOW)).toEqual({
        ok: false,
        code: 'DOWNLOAD_LIFETIME_EXCEEDED',
      });
    }
    // The same id, once its expiry is within the lifetime from now, verifies.
    const far = signDownloadId(GRANT, NOW + 3 * HOUR, lasting);
    expect(verifyDownloadId(far, lasting, NOW).ok).toBe(false);
    expect(verifyDownloadId(far, lasting, NOW + HOUR).ok).toBe(true);
  });

  it('refuses a key id the keyring does not know', () => {
    const stranger = Keyring.fromKeys([{ id: 'stranger', secret: randomBytes(32) }]);
    expect(verifyDownloadId(signDownloadId(GRANT, NOW + HOUR, stranger), keys, NOW)).toEqual({
      ok: false,
      code: 'DOWNLOAD_SIGNATURE_INVALID',
    });
  });

  it('verifies ids of every configured key, and signs with the first', () => {
    const older = Keyring.fromKeys([{ id: 'old', secret: 'b'.repeat(32) }]);
    expect(verifyDownloadId(signDownloadId(GRANT, NOW + HOUR, older), keys, NOW).ok).toBe(true);
    expect(keys.signingKey().id).toBe('main');
  });

  it('refuses short secrets, bad key ids and duplicate ids', () => {
    expect(() => Keyring.fromKeys([{ id: 'short', secret: 'x'.repeat(31) }])).toThrow(/at least 32 bytes/);
    expect(() => Keyring.fromKeys([{ id: 'a.b', secret: 'x'.repeat(32) }])).toThrow(/key id/);
    expect(() =>
      Keyring.fromKeys([
        { id: 'a', secret: 'x'.repeat(32) },
        { id: 'a', secret: 'y'.repeat(32) },
      ]),
    ).toThrow(/twice/);
    expect(() => keys.rotate()).toThrow(/configuration/);
  });
});

describe('a keyring kept in a folder', () => {
  it('makes its key when it first signs, in keys.json with mode 0600', () => {
    const dir = folder();
    const keyring = Keyring.inFolder({ dir });
    expect(keyring.list()).toEqual([]);
    const id = signDownloadId(GRANT, Date.now() + HOUR, keyring);
    const stat = statSync(join(dir, KEYS_FILE));
    expect(stat.mode & 0o777).toBe(0o600);
    // Another keyring over the same folder (a restarted gateway) verifies it.
    expect(verifyDownloadId(id, Keyring.inFolder({ dir })).ok).toBe(true);
    expect(readFileSync(join(dir, KEYS_FILE), 'utf8')).not.toContain('retired_at');
  });

  it('keeps a rotated-out key verifying until its links have expired, then prunes it', () => {
    const dir = folder();
    let now = NOW;
    const keyring = Keyring.inFolder({ dir, maxTtlMs: HOUR, now: () => now });
    const before = signDownloadId(GRANT, now + HOUR, keyring);
    const oldKid = keyring.signingKey().id;
    const rotation = keyring.rotate();
    expect(rotation).toMatchObject({ retired: oldKid, pruned: [] });
    expect(rotation.current).not.toBe(oldKid);
    expect(keyring.signingKey().id).toBe(rotation.current);
    // Rotated: the old key still verifies the links it signed.
    now += HOUR - 1;
    expect(verifyDownloadId(before, keyring, now).ok).toBe(true);
    // Every link it signed has expired: it is pruned, and an id it signed is refused as unknown.
    now += 1;
    const forged = `${before.split('.').slice(0, 1)}.${Math.ceil((now + HOUR) / 1000)}.${oldKid}.${before.split('.')[3]}`;
    expect(verifyDownloadId(forged, keyring, now)).toEqual({ ok: false, code: 'DOWNLOAD_SIGNATURE_INVALID' });
    expect(keyring.list().map((key) => key.id)).toEqual([rotation.current]);
    const next = keyring.rotate();
    expect(next.pruned).toEqual([oldKid]);
    expect(readFileSync(join(dir, KEYS_FILE), 'utf8')).not.toContain(oldKid);
  });

  it('keeps one first key when two keyrings over one folder sign at once', () => {
    const dir = folder();
    const first = Keyring.inFolder({ dir });
    const second = Keyring.inFolder({ dir });
    // Both saw no keys.json; the first makes it, the second adopts its key instead of replacing it.
    const a = signDownloadId(GRANT, Date.now() + HOUR, first);
    const b = signDownloadId(GRANT, Date.now() + HOUR, second);
    expect(b.split('.')[2]).toBe(a.split('.')[2]);
    expect(verifyDownloadId(a, Keyring.inFolder({ dir })).ok).toBe(true);
  });

  it('sees a rotation another process made, without restarting', () => {
    const dir = folder();
    const gateway = Keyring.inFolder({ dir });
    gateway.signingKey();
    const cli = Keyring.inFolder({ dir });
    const { current } = cli.rotate();
    const id = signDownloadId(GRANT, Date.now() + HOUR, cli);
    expect(verifyDownloadId(id, gateway).ok).toBe(true);
    expect(gateway.signingKey().id).toBe(current);
  });

  it('stops verifying a key removed from keys.json within a second, without signing meanwhile', () => {
    const dir = folder();
    let now = Date.now();
    const gateway = Keyring.inFolder({ dir, now: () => now });
    const id = signDownloadId(GRANT, now + HOUR, gateway);
    expect(verifyDownloadId(id, gateway, now).ok).toBe(true);
    // The operator removes the key by hand (a leak, say): the file now holds another key only.
    const file = join(dir, KEYS_FILE);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { keys: { id: string }[] };
    const kid = id.split('.')[2];
    const otherDir = folder();
    Keyring.inFolder({ dir: otherDir }).signingKey();
    const replacement = JSON.parse(readFileSync(join(otherDir, KEYS_FILE), 'utf8'));
    writeFileSync(file, JSON.stringify(replacement), { mode: 0o600 });
    expect(stored.keys.map((key) => key.id)).toContain(kid);
    now += 1000;
    expect(verifyDownloadId(id, gateway, now)).toEqual({ ok: false, code: 'DOWNLOAD_SIGNATURE_INVALID' });
  });

  it('refuses a damaged keys.json with a clear code', () => {
    const dir = folder();
    writeFileSync(join(dir, KEYS_FILE), '{"keys": [{"id": "x"}]}');
    expect(() => Keyring.inFolder({ dir })).toThrow(
      expect.objectContaining({ code: 'ARTIFACT_STORE_UNAVAILABLE' }),
    );
  });
});
