import { generateKeyPairSync } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client } from '@modelcontextprotocol/client';
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/canonical/index.ts';
import { createPipeline } from '../../src/mcp/index.ts';
import type { CallSummary } from '../../src/mcp/pipeline.ts';
import {
  checkSignature,
  computeRecordDigest,
  keyIdFor,
  loadPrivateKey,
  loadPublicKey,
} from '../../src/provenance/integrity.ts';
import { METHODS, type ProvRecord } from '../../src/provenance/record.ts';
import { runCli } from './gateway-process.ts';
import { gatewayStdio } from './processes.ts';

/**
 * With `signing` configured, the gateway signs every record it builds before
 * the record leaves in the answer and is filed in the ledger: both copies are
 * the same signed record, both verify under the public key, and a ledger row
 * rewritten consistently afterwards (record and digest recomputed together)
 * no longer does.
 */

const PROBE = fileURLToPath(new URL('../fixtures/servers/settings-probe.ts', import.meta.url));
const META_KEY = 'mcp-envelope/provenance';
const OPT_IN = { capture_provenance: true };

let dir: string;
let client: Client;
let transport: StdioClientTransport | undefined;
let closed: Promise<void>;
let publicPem: string;

/** The record an answer carries: in the envelope (prov-v0.1) or in `_meta` (legacy). */
function recordIn(result: CallToolResult): ProvRecord {
  const inEnvelope = (result.structuredContent as { provenance?: ProvRecord } | undefined)?.provenance;
  return inEnvelope ?? (result._meta?.[META_KEY] as ProvRecord);
}

const call = (name: string, args: Record<string, unknown>, meta: Record<string, unknown> = OPT_IN) =>
  client.callTool({ name, arguments: args, _meta: meta }) as Promise<CallToolResult>;

/** Stops the gateway as an operator does (SIGTERM), so its ledger is closed before it is read. */
async function stopGateway(): Promise<void> {
  if (transport === undefined) return;
  try {
    if (transport.pid === null) throw new Error('not running');
    process.kill(transport.pid, 'SIGTERM');
  } catch {
    // Never started, or already gone: only the client's side is left to close.
    await transport.close();
    return;
  }
  await closed;
}

interface Row {
  seq: number;
  leaf: Uint8Array;
}

const leafOf = (row: Row) => JSON.parse(Buffer.from(row.leaf).toString('utf8')) as Record<string, unknown>;

/** A copy of the gateway's ledger with one row rewritten as a forger would: record and digests recomputed. */
function rewrittenCopy(name: string, rewrite: (record: ProvRecord) => ProvRecord): string {
  const copy = join(dir, name);
  copyFileSync(join(dir, 'ledger.sqlite'), copy);
  const db = new DatabaseSync(copy);
  const row = db.prepare('SELECT seq, leaf FROM records ORDER BY seq LIMIT 1').get() as unknown as Row;
  const leaf = leafOf(row);
  const record = rewrite(leaf.record as ProvRecord);
  const digest = computeRecordDigest(record).value;
  // The leaf rewritten too, so the row is consistent in itself: only the tree and its checkpoints disagree.
  const rewritten = canonicalize({ ...leaf, record, record_digest: `sha256:${digest}` });
  db.prepare('UPDATE records SET leaf = ?, record_digest = ? WHERE seq = ?').run(
    Buffer.from(rewritten),
    digest,
    row.seq,
  );
  db.close();
  return copy;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'signed-records-'));
  mkdirSync(join(dir, 'keys'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a gateway with a signing key', () => {
  beforeAll(async () => {
    const keygen = await runCli(['keygen', '--out', join(dir, 'keys', 'gateway')]);
    expect(keygen.code, keygen.stderr).toBe(0);
    publicPem = join(dir, 'keys', 'gateway.public.pem');
    const config = {
      upstreams: [
        { name: 'enveloped', stdio: { command: 'node', args: [PROBE] } },
        { name: 'bare', stdio: { command: 'node', args: [PROBE] }, dialect: 'legacy' },
      ],
      ledger: { path: 'ledger.sqlite' },
      logs: { enabled: false },
      signing: { keyFile: 'keys/gateway.private.pem' },
    };
    writeFileSync(join(dir, 'gateway.config.json'), JSON.stringify(config));
    transport = gatewayStdio(join(dir, 'gateway.config.json'), { stderr: 'pipe' });
    client = new Client({ name: 'signed-records', version: '1.0.0' });
    closed = new Promise((resolve) => {
      client.onclose = () => resolve();
    });
    await client.connect(transport);
  }, 30_000);

  afterAll(() => stopGateway());

  const answers: CallToolResult[] = [];

  it('signs the record in every answer, wherever the dialect puts it', async () => {
    answers.push(
      await call('enveloped__echo', { text: 'minimal' }),
      await call('enveloped__echo', { text: 'full' }, { ...OPT_IN, provenance_mode: 'full' }),
      await call('bare__echo', { text: 'in _meta' }),
    );
    const publicKey = loadPublicKey(readFileSync(publicPem));
    for (const answer of answers) {
      const record = recordIn(answer);
      expect(record.integrity?.signature).toMatchObject({ alg: 'ed25519', key_id: keyIdFor(publicKey) });
      expect(record.methods).toEqual(expect.arrayContaining([METHODS.recordDigest, METHODS.signatureCreate]));
      expect(checkSignature(record, publicKey)).toMatchObject({ status: 'pass' });
    }
    // Without the opt-in there is still no record to sign.
    expect(recordIn(await call('enveloped__echo', { text: 'no record' }, {}))).toBeUndefined();
  });

  it('verifies the answer with mcp-envelope verify --public-key', async () => {
    const envelope = join(dir, 'answer.json');
    writeFileSync(envelope, JSON.stringify(answers[1]?.structuredContent));
    const record = join(dir, 'record.json');
    writeFileSync(record, JSON.stringify(recordIn(answers[2] as CallToolResult)));
    for (const file of [envelope, record]) {
      const run = await runCli(['verify', file, '--public-key', publicPem]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/VERIFIED.*signature/);
    }
  });

  it('files the same signed record in the ledger, which verifies under the key', async () => {
    await stopGateway();
    const db = new DatabaseSync(join(dir, 'ledger.sqlite'), { readOnly: true });
    // Each record is stored in its log leaf, which also names who called: over stdio, the one local caller.
    const leaves = (db.prepare('SELECT seq, leaf FROM records ORDER BY seq').all() as unknown as Row[]).map(
      leafOf,
    );
    db.close();
    expect(leaves.map((leaf) => canonicalize(leaf.record))).toEqual(
      answers.map((answer) => canonicalize(recordIn(answer))),
    );
    expect(leaves.map((leaf) => leaf.principal)).toEqual(['local', 'local', 'local']);
    const run = await runCli([
      'ledger',
      'verify',
      '--db',
      join(dir, 'ledger.sqlite'),
      '--public-key',
      publicPem,
    ]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('3 of 3 records verified');
  });

  it('fails ledger verify --public-key for a row rewritten consistently, signature kept or removed', async () => {
    const changed = (record: ProvRecord): ProvRecord => ({
      ...record,
      tool: { ...record.tool, version: '6.6.6' },
    });
    const kept = rewrittenCopy('kept.sqlite', (record) => {
      const forged = changed(record);
      return { ...forged, integrity: { ...record.integrity, record_digest: computeRecordDigest(forged) } };
    });
    // Removed along with the claim to it, so the record no longer says it was signed.
    const removed = rewrittenCopy('removed.sqlite', (record) => {
      const forged = {
        ...changed(record),
        methods: record.methods.filter((method) => method !== METHODS.signatureCreate),
      };
      return { ...forged, integrity: { record_digest: computeRecordDigest(forged) } };
    });
    for (const db of [kept, removed]) {
      // Each row is consistent in itself; without the key it is the log that no longer agrees.
      const unkeyed = await runCli(['ledger', 'verify', '--db', db]);
      expect(unkeyed.code, `${db}: ${unkeyed.stdout}`).toBe(1);
      expect(unkeyed.stdout).toMatch(/^TAMPERED leaf 0 \(seq 1\)/m);
      const keyed = await runCli(['ledger', 'verify', '--db', db, '--public-key', publicPem]);
      expect(keyed.code, `${db}: ${keyed.stdout}`).toBe(1);
      expect(keyed.stdout).toMatch(/^FAIL +1 /m);
      expect(keyed.stdout).toContain('2 of 3 records verified');
    }
  });
});

describe('the pipeline with a signingKey', () => {
  it('signs the record it answers with and reports the same one', async () => {
    const keys = await runCli(['keygen', '--out', join(dir, 'keys', 'pipeline')]);
    expect(keys.code).toBe(0);
    const summaries: CallSummary[] = [];
    const pipeline = createPipeline({
      signingKey: loadPrivateKey(readFileSync(join(dir, 'keys', 'pipeline.private.pem'))),
      onCall: (summary) => summaries.push(summary),
    });
    const result = await pipeline.callTool({
      tool: { name: 'lookup' },
      arguments: {},
      meta: OPT_IN,
      invoke: async () => ({ content: [{ type: 'text', text: '{"found":true}' }] }),
    });
    const record = recordIn(result);
    const publicKey = loadPublicKey(readFileSync(join(dir, 'keys', 'pipeline.public.pem')));
    expect(checkSignature(record, publicKey)).toMatchObject({ status: 'pass' });
    expect(summaries.map((summary) => summary.provenance?.record)).toEqual([record]);
  });

  it('covers what the client reads, in every provenance mode: an edited result or digit fails verify --public-key', async () => {
    const keys = await runCli(['keygen', '--out', join(dir, 'keys', 'digits')]);
    expect(keys.code).toBe(0);
    const key = join(dir, 'keys', 'digits.public.pem');
    const pipeline = createPipeline({
      signingKey: loadPrivateKey(readFileSync(join(dir, 'keys', 'digits.private.pem'))),
    });
    const payload = '{"city":"Lisbon","population":545796,"id":9007199254740993}';
    for (const mode of ['minimal', 'full']) {
      const result = await pipeline.callTool({
        tool: { name: 'lookup' },
        arguments: {},
        meta: { ...OPT_IN, provenance_mode: mode },
        invoke: async () => ({ content: [{ type: 'text', text: payload }] }),
      });
      // The envelope's text as the client receives it, digits and all.
      const sent = (result.content[0] as { text: string }).text;
      expect(sent).toContain('9007199254740993');
      const verifies = async (text: string) => {
        const file = join(dir, `signed-${mode}-${Math.random().toString(36).slice(2)}.json`);
        writeFileSync(file, text);
        return runCli(['verify', file, '--public-key', key, '--strict']);
      };
      const intact = await verifies(sent);
      expect(intact.code, `${mode}: ${intact.stdout}`).toBe(0);
      // One digit: the same double, other digits.
      const digit = await verifies(sent.replace('9007199254740993', '9007199254740992'));
      expect(digit.code, `${mode}: ${digit.stdout}`).toBe(1);
      const edited = await verifies(
        sent.replace('"Lisbon","population":545796', '"Atlantis","population":1'),
      );
      expect(edited.code, `${mode}: ${edited.stdout}`).toBe(1);
    }
  });

  it('refuses a key that cannot make an Ed25519 signature, before any call', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    expect(() => createPipeline({ signingKey: privateKey })).toThrow(
      expect.objectContaining({ code: 'KEY_INVALID' }),
    );
  });
});
