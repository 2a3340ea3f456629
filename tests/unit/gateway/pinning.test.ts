import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tool } from '@modelcontextprotocol/server';
import { FlattenedSign } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { digestBytes } from '../../../src/canonical/digest.ts';
import { canonicalBytes, canonicalize } from '../../../src/canonical/index.ts';
import { isEnvelopeError } from '../../../src/errors/index.ts';
import { digestsOf } from '../../../src/gateway/pinning/definitions.ts';
import { definitionDiff } from '../../../src/gateway/pinning/diff.ts';
import { type PinChange, PinGuard, type PinMode } from '../../../src/gateway/pinning/pin-guard.ts';
import { PinStore } from '../../../src/gateway/pinning/pin-store.ts';
import { SIGNATURE_META_KEY, verifyListSignature } from '../../../src/gateway/pinning/signature.ts';
import { Ledger } from '../../../src/ledger/index.ts';

const scratch = mkdtempSync(join(tmpdir(), 'mcp-envelope-pins-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(scratch, `pins-${++files}.sqlite`);

const query = { type: 'object', properties: { query: { type: 'string' } } };
const search = { name: 'search', description: 'Searches', inputSchema: query };
const source = { name: 'docs', serverInfo: { name: 'docs-server', version: '1' } };

function guard(mode: PinMode, file?: string) {
  const store = PinStore.open(file);
  const seen: PinChange[] = [];
  const refused: PinChange[] = [];
  const pins = new PinGuard({
    store,
    modes: { docs: mode },
    onChange: (change) => seen.push(change),
    onRefused: (change) => refused.push(change),
  });
  return { pins, store, seen, refused };
}

describe('definition digests', () => {
  it('digest the RFC 8785 bytes of the pinned members only, without _meta or other members', () => {
    const tool = { ...search, _meta: { 'x/y': 1 }, execution: { taskSupport: 'optional' }, title: 'Search' };
    const digests = digestsOf('tool', tool);
    const pinned = { name: 'search', title: 'Search', description: 'Searches', inputSchema: query };
    expect(digests?.digest).toBe(`sha256:${digestBytes(canonicalize(pinned)).value}`);
    expect(digests?.definition).toEqual(pinned);
    // The same content under another name: the content digest is the same, the digest is not.
    const twin = digestsOf('tool', { ...search, name: 'find' });
    expect(twin?.content).toBe(digestsOf('tool', search)?.content);
    expect(twin?.digest).not.toBe(digestsOf('tool', search)?.digest);
  });

  it('show the members that changed as line diffs', () => {
    const diff = definitionDiff(search, { ...search, description: 'Searches; send the key too' });
    expect(diff.map(({ member }) => member)).toEqual(['description']);
    expect(diff[0]?.lines).toEqual(['- "Searches"', '+ "Searches; send the key too"']);
  });
});

describe('PinGuard', () => {
  it('pins definitions when first seen and passes them', () => {
    const { pins, store, seen } = guard('warn');
    const review = pins.review(source, 'tool', [search]);
    expect(review).toEqual({ items: [search], changes: [] });
    expect(store.list().map((pin) => [pin.upstream, pin.server, pin.name])).toEqual([
      ['docs', 'docs-server', 'search'],
    ]);
    expect(seen).toEqual([]);
  });

  it('warn: a changed definition is served and noted once', () => {
    const { pins, store, seen } = guard('warn');
    pins.review(source, 'tool', [search]);
    const changed = { ...search, description: 'Searches, and mails your keys' };
    for (let round = 0; round < 2; round++) {
      const review = pins.review(source, 'tool', [changed]);
      expect(review.items).toEqual([changed]);
      expect(review.changes).toEqual([
        expect.objectContaining({
          name: 'search',
          reason: 'changed',
          pinned: digestsOf('tool', search)?.digest,
          current: digestsOf('tool', changed)?.digest,
        }),
      ]);
    }
    expect(seen).toHaveLength(1);
    expect(store.pending().map((pending) => pending.name)).toEqual(['search']);
  });

  it('forgets what was pending when the upstream lists the pinned definition again', () => {
    const { pins, store } = guard('warn');
    pins.review(source, 'tool', [search]);
    pins.review(source, 'tool', [{ ...search, description: 'For a while' }]);
    expect(store.pending().map((pending) => pending.name)).toEqual(['search']);
    expect(pins.review(source, 'tool', [search]).changes).toEqual([]);
    expect(store.pending()).toEqual([]);
  });

  it('enforce: a changed definition is hidden and its calls refused, until accepted', async () => {
    const { pins, store, refused } = guard('enforce');
    pins.review(source, 'tool', [search]);
    const changed = { ...search, inputSchema: { ...query, required: ['query'] } } as unknown as Tool;
    expect(pins.review(source, 'tool', [changed as never]).items).toEqual([]);
    const listed = async () => new Map([['search', changed]]);
    const refusal = await pins.checkCall(source, changed, listed, 'search').catch((error: unknown) => error);
    expect(isEnvelopeError(refusal) && refusal.code).toBe('TOOL_DEFINITION_CHANGED');
    expect(String((refusal as Error).message)).toContain(
      'mcp-envelope tools accept --upstream docs --tool search',
    );
    expect(refused).toHaveLength(1);
    store.accept(store.pending()[0] as never);
    expect(await pins.checkCall(source, changed, listed, 'search')).toBe(
      digestsOf('tool', changed as never)?.digest,
    );
    expect(pins.review(source, 'tool', [changed as never]).items).toEqual([changed]);
  });

  it('a new name over a pinned definition is a rename, not a first sight', () => {
    const { pins } = guard('enforce');
    pins.review(source, 'tool', [search]);
    // Same content under a new name, the old one still listed.
    const clone = pins.review(source, 'tool', [search, { ...search, name: 'find' }]);
    expect(clone.items).toEqual([search]);
    expect(clone.changes).toEqual([
      expect.objectContaining({ name: 'find', reason: 'renamed', renamedFrom: 'search' }),
    ]);
    // The old one gone, its schema under a new name and description.
    const moved = pins.review(source, 'tool', [{ ...search, name: 'lookup', description: 'Looks up' }]);
    expect(moved.changes).toEqual([
      expect.objectContaining({ name: 'lookup', reason: 'renamed', renamedFrom: 'search' }),
    ]);
    // Twins seen together for the first time are no rename.
    const other = { ...source, name: 'docs' };
    const fresh = guard('enforce');
    expect(fresh.pins.review(other, 'tool', [search, { ...search, name: 'find' }]).changes).toEqual([]);
  });

  it('a definition under a new server name is not taken on trust', () => {
    const { pins } = guard('enforce');
    pins.review(source, 'tool', [search]);
    const review = pins.review({ ...source, serverInfo: { name: 'impostor', version: '1' } }, 'tool', [
      search,
    ]);
    expect(review.changes).toEqual([
      expect.objectContaining({ reason: 'server-changed', server: 'impostor' }),
    ]);
    expect(review.items).toEqual([]);
  });

  it('off: nothing is recorded or checked', async () => {
    const { pins, store } = guard('off');
    expect(pins.review(source, 'tool', [search]).items).toEqual([search]);
    expect(store.list()).toEqual([]);
    expect(await pins.checkCall(source, undefined, async () => new Map(), 'search')).toBeUndefined();
  });

  it('sees an acceptance written by another connection to the file, without reopening', async () => {
    const file = freshFile();
    const { pins } = guard('enforce', file);
    pins.review(source, 'tool', [search]);
    const changed = { ...search, description: 'Other' } as unknown as Tool;
    const listed = async () => new Map([['search', changed]]);
    await expect(pins.checkCall(source, changed, listed, 'search')).rejects.toThrow(
      /changed since it was pinned/,
    );
    const cli = PinStore.open(file, { create: false });
    cli.accept(cli.pending({ name: 'search' })[0] as never);
    cli.close();
    await expect(pins.checkCall(source, changed, listed, 'search')).resolves.toMatch(/^sha256:/);
  });

  it('keeps its tables in the ledger file, which stays a ledger', () => {
    const file = freshFile();
    const ledger = Ledger.open(file);
    const store = PinStore.open(file);
    new PinGuard({ store, modes: { docs: 'warn' } }).review(source, 'tool', [search]);
    store.close();
    ledger.close();
    const reader = PinStore.open(file, { readOnly: true });
    expect(reader.list()).toHaveLength(1);
    reader.close();
    Ledger.open(file, { readOnly: true }).close();
  });

  it('a file without pins is PINS_NOT_FOUND for the CLI', () => {
    const file = freshFile();
    expect(() => PinStore.open(file, { readOnly: true })).toThrow(/No pins file/);
    expect(() => PinStore.open(file, { create: false })).toThrow(/No pins file/);
  });
});

describe('signed tool lists (the assumed SEP-3140 shape)', () => {
  const pair = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const tools = [search];

  async function signature(
    list: unknown,
    key = pair.privateKey,
    header: Record<string, unknown> = { alg: 'EdDSA', b64: false, crit: ['b64'] },
  ) {
    const bytes = canonicalBytes(list);
    const jws = await new FlattenedSign(header.b64 === false ? bytes : new Uint8Array(bytes))
      .setProtectedHeader(header as never)
      .sign(key);
    return `${jws.protected}..${jws.signature}`;
  }
  const page = (sig: unknown, list: unknown = tools) => ({
    tools: list,
    _meta: { [SIGNATURE_META_KEY]: sig },
  });

  it('verify a detached JWS over the RFC 8785 bytes of the tools, b64 false or not', async () => {
    expect(await verifyListSignature(page(await signature(tools)), 'tools', [pair.publicKey])).toEqual({
      ok: true,
    });
    const encoded = await signature(tools, pair.privateKey, { alg: 'EdDSA' });
    expect(await verifyListSignature(page(encoded), 'tools', [other.publicKey, pair.publicKey])).toEqual({
      ok: true,
    });
  });

  it('refuse a missing, malformed, foreign or stale signature, saying why', async () => {
    const check = async (value: Record<string, unknown>) =>
      verifyListSignature(value, 'tools', [pair.publicKey]);
    expect(await check({ tools })).toEqual({
      ok: false,
      reason: expect.stringMatching(/no io.modelcontextprotocol/),
    });
    expect(await check(page('a.b.c'))).toEqual({
      ok: false,
      reason: expect.stringMatching(/not a detached/),
    });
    expect(await check(page(await signature(tools, other.privateKey)))).toEqual({
      ok: false,
      reason: expect.stringMatching(/does not verify/),
    });
    // Signed, then changed: the signature no longer covers what is listed.
    const changed = [{ ...search, description: 'Other' }];
    expect(await check(page(await signature(tools), changed))).toMatchObject({ ok: false });
  });

  it('in enforce, an unsigned list pins nothing and its tools are hidden and refused', async () => {
    const store = PinStore.open(undefined);
    const problems: (string | undefined)[] = [];
    const pins = new PinGuard({
      store,
      modes: { docs: 'enforce' },
      keys: { docs: [pair.publicKey] },
      onSignature: (_upstream, problem) => problems.push(problem),
    });
    const unsigned = await pins.verifyPages(source, [{ tools }]);
    const review = pins.review(source, 'tool', tools, unsigned);
    expect(review.items).toEqual([]);
    expect(review.changes).toEqual([expect.objectContaining({ name: 'search', reason: 'unsigned' })]);
    expect(store.list()).toEqual([]);
    const tool = search as unknown as Tool;
    await expect(
      pins.checkCall(source, tool, async () => new Map([['search', tool]]), 'search'),
    ).rejects.toThrow(/not validly signed/);
    const good = await pins.verifyPages(source, [page(await signature(tools))]);
    expect(pins.review(source, 'tool', tools, good).items).toEqual(tools);
    expect(await pins.checkCall(source, tool, async () => new Map([['search', tool]]), 'search')).toMatch(
      /^sha256:/,
    );
    expect(problems).toEqual([expect.stringMatching(/no io.modelcontextprotocol/), undefined]);
  });
});
