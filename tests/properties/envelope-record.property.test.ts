import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/canonical/canonicalize.ts';
import { wrapLegacy } from '../../src/envelope/index.ts';
import {
  checkSignature,
  generateSigningKeyPair,
  loadPrivateKey,
  loadPublicKey,
  type ProvRecord,
  RecordBuilder,
  signRecord,
} from '../../src/provenance/index.ts';

const payload = fc.jsonValue({ stringUnit: 'binary', maxDepth: 4 });

describe('compatibility policy properties', () => {
  it('wrap is idempotent, for values and for the envelope as JSON text', () => {
    fc.assert(
      fc.property(payload, (value) => {
        const once = wrapLegacy(value);
        expect(once.result).toBe(value);
        expect(wrapLegacy(once)).toBe(once);
        const text = JSON.stringify(once);
        expect(canonicalize(wrapLegacy(text))).toBe(canonicalize(once));
      }),
      { numRuns: 300 },
    );
  });
});

const pair = generateSigningKeyPair();
const privateKey = loadPrivateKey(pair.privateKeyPem);
const publicKey = loadPublicKey(pair.publicKeyPem);

const recordArb = fc
  .record({
    runId: fc.uuid(),
    name: fc.string({ minLength: 1, unit: 'binary' }),
    version: fc.string({ minLength: 1, maxLength: 10 }),
    inputs: fc.array(payload, { maxLength: 3 }),
    result: payload,
    parents: fc.uniqueArray(fc.uuid(), { maxLength: 3 }),
  })
  .map(({ runId, name, version, inputs, result, parents }) => {
    const builder = new RecordBuilder({ runId, tool: { name, version, adapter: 'prop' } });
    inputs.forEach((input, index) => {
      builder.input({
        id: `in-${index}`,
        mediaType: 'application/json',
        content: { json: input },
        digest: 'sha256',
      });
    });
    builder.output({
      id: 'result',
      mediaType: 'application/json',
      content: { json: result },
      digest: 'blake3',
    });
    for (const parent of parents) builder.parent(parent);
    return signRecord(builder.build(), privateKey);
  });

/** Every leaf of a JSON value, as a path of keys. */
function leaves(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [path];
  const entries = Array.isArray(value)
    ? value.map((item, index) => [index, item] as const)
    : Object.entries(value);
  const out: (string | number)[][] = [];
  for (const [name, member] of entries) out.push(...leaves(member, [...path, name]));
  return out;
}

function mutate(record: ProvRecord, path: (string | number)[]): ProvRecord {
  const copy = structuredClone(record) as unknown as Record<string | number, unknown>;
  let parent = copy;
  for (const name of path.slice(0, -1)) parent = parent[name] as Record<string | number, unknown>;
  const last = path.at(-1) as string | number;
  const old = parent[last];
  parent[last] =
    typeof old === 'string'
      ? `${old}x`
      : typeof old === 'number'
        ? old + 1
        : typeof old === 'boolean'
          ? !old
          : old === null
            ? 0
            : 'changed';
  return copy as unknown as ProvRecord;
}

describe('signature properties', () => {
  it('a signed record verifies, and changing any leaf of it makes verification fail', () => {
    fc.assert(
      fc.property(recordArb, fc.nat(), (record, pick) => {
        expect(checkSignature(record, publicKey).status).toBe('pass');
        const paths = leaves(record);
        const path = paths[pick % paths.length] as (string | number)[];
        expect(checkSignature(mutate(record, path), publicKey).status, path.join('/')).toBe('fail');
      }),
      { numRuns: 150 },
    );
  });

  it('adding or removing a member of a signed record makes verification fail', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        expect(checkSignature({ ...record, extra: 1 } as ProvRecord, publicKey).status).toBe('fail');
        const { parents: _dropped, ...rest } = record;
        expect(checkSignature(rest as ProvRecord, publicKey).status).toBe('fail');
      }),
      { numRuns: 50 },
    );
  });
});
