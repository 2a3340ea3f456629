import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogCheckpoint, verifyCheckpoint } from '@sigstore/verify/dist/tlog/checkpoint.js';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../src/ledger/index.ts';
import {
  checkpointSignedBy,
  defaultOrigin,
  noteKeyId,
  parseCheckpoint,
  signCheckpoint,
  storedCheckpoints,
  writeCheckpoint,
} from '../../../src/ledger/log/checkpoint.ts';
import { callRecord } from './fixtures.ts';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519');
const root = createHash('sha256').update('root').digest();
const dir = mkdtempSync(join(tmpdir(), 'ledger-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('signed checkpoints (C2SP tlog-checkpoint)', () => {
  it('writes the signed-note text, with the key id the spec defines', () => {
    const checkpoint = signCheckpoint('example.com/log', 42, root, privateKey);
    const [body, signatures] = checkpoint.text.split('\n\n') as [string, string];
    expect(`${body}\n`).toBe(`example.com/log\n42\n${root.toString('base64')}\n`);
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
    const keyId = createHash('sha256')
      .update(Buffer.concat([Buffer.from('example.com/log\n'), Buffer.from([1]), raw]))
      .digest()
      .subarray(0, 4);
    expect(noteKeyId('example.com/log', publicKey)).toEqual(keyId);
    const line = /^\u2014 example\.com\/log (\S+)\n$/.exec(signatures) as RegExpExecArray;
    const bytes = Buffer.from(line[1] as string, 'base64');
    expect(bytes).toHaveLength(68);
    expect(bytes.subarray(0, 4)).toEqual(keyId);
  });

  it('parses back what it writes, and verifies only with the signing key', () => {
    const checkpoint = signCheckpoint('o', 7, root, privateKey);
    const parsed = parseCheckpoint(checkpoint.text);
    expect(parsed).toMatchObject({ origin: 'o', size: 7, root, body: checkpoint.body });
    expect(checkpointSignedBy(parsed, publicKey)).toBe(true);
    expect(checkpointSignedBy(parsed, other.publicKey)).toBe(false);
    const altered = parseCheckpoint(checkpoint.text.replace('\n7\n', '\n8\n'));
    expect(checkpointSignedBy(altered, publicKey)).toBe(false);
  });

  it('is read the same by @sigstore/verify, whose signed-note check accepts it', () => {
    const checkpoint = signCheckpoint('mcp-envelope/abc', 1234, root, privateKey);
    const theirs = LogCheckpoint.fromString(checkpoint.body);
    expect(theirs.origin).toBe('mcp-envelope/abc');
    expect(theirs.logSize).toBe(1234n);
    expect(Buffer.from(theirs.logHash)).toEqual(root);
    const entry = { inclusionProof: { checkpoint: { envelope: checkpoint.text } } };
    const tlog = { logID: noteKeyId('mcp-envelope/abc', publicKey), baseURL: 'mcp-envelope/abc', publicKey };
    // biome-ignore lint/suspicious/noExplicitAny: the verifier's own types are protobuf shapes
    expect(() => verifyCheckpoint(entry as any, [tlog as any])).not.toThrow();
    const wrong = { ...tlog, publicKey: other.publicKey };
    // biome-ignore lint/suspicious/noExplicitAny: as above
    expect(() => verifyCheckpoint(entry as any, [wrong as any])).toThrow(/signature/);
  });

  it('refuses malformed notes, saying what is wrong', () => {
    const good = signCheckpoint('o', 7, root, privateKey).text;
    for (const [text, message] of [
      [good.replace('\n\n', '\n'), /no blank line/],
      [good.replace('\n7\n', '\n07\n'), /tree size line/],
      [good.replace(root.toString('base64'), 'AAAA'), /root hash line/],
      [good.replace('\u2014', '-'), /signature line/],
      [`${good.split('\n\n')[0]}\n\n`, /no signature/],
    ] as const) {
      expect(() => parseCheckpoint(text)).toThrow(message);
    }
  });

  it('keeps every checkpoint written in the ledger, under the ledger’s stable origin', () => {
    const ledger = Ledger.open(join(dir, 'l.sqlite'));
    ledger.insert(callRecord('00000000-0000-4000-8000-000000000001').envelope);
    const first = writeCheckpoint(ledger, privateKey);
    ledger.insert(callRecord('00000000-0000-4000-8000-000000000002').envelope);
    const second = writeCheckpoint(ledger, privateKey, { origin: 'example.org/ledger' });
    expect(first.origin).toMatch(/^mcp-envelope\/[0-9a-f]{32}$/);
    expect(first.origin).toBe(defaultOrigin(ledger));
    expect([first.size, second.size]).toEqual([1, 2]);
    expect(storedCheckpoints(ledger).map((row) => row.checkpoint.text)).toEqual([first.text, second.text]);
    ledger.close();
  });
});
