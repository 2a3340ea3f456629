import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvRecord } from '../../src/provenance/record.ts';
import { IMAGE } from '../fixtures/servers/binary-bytes.ts';
import { runCli } from './gateway-process.ts';
import { BIN, NODE, ROOT, stopChild } from './processes.ts';

/**
 * A file a tool produced, downloaded from the gateway, proves itself against
 * the call's signed provenance record: the record registers the stored file
 * as an output artifact (its sha256 and size), the ledger keeps the record,
 * and the real CLI's `verify --artifacts` re-digests the downloaded bytes,
 * passing for the file as served and failing with DIGEST_MISMATCH once one
 * byte of it changes.
 */

const BINARY = fileURLToPath(new URL('../fixtures/servers/binary.ts', import.meta.url));
const TEMPLATE_SERVER = fileURLToPath(new URL('../../examples/template-server/server.ts', import.meta.url));
const PROVENANCE_META_KEY = 'mcp-envelope/provenance';
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

interface Descriptor {
  download_url: string;
  sha256: string;
  size_bytes: number;
  filename: string;
}

let dir: string;
let client: Client;
const stops: (() => Promise<unknown>)[] = [];

/** `mcp-envelope gateway --config FILE` over HTTP in `folder`, with a ledger, a signing key and artifacts; an SDK client on it. */
async function startGateway(folder: string, upstreams: unknown[]): Promise<{ client: Client; url: string }> {
  const config = join(folder, 'gateway.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      upstreams,
      listen: { stdio: false, http: { port: 0 } },
      ledger: { path: 'ledger.sqlite' },
      logs: { enabled: false },
      signing: { keyFile: join(dir, 'keys', 'gateway.private.pem') },
      artifacts: { dir: 'artifacts' },
    }),
  );
  const child = spawn(NODE, [BIN, 'gateway', '--config', config], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stops.push(() => stopChild(child));
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      stderr += text;
      const match = /^Streamable HTTP: (http:\/\/\S+)$/m.exec(stderr);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`the gateway exited with ${code}:\n${stderr}`)));
  });
  const connected = new Client({ name: 'artifact-provenance', version: '1.0.0' });
  await connected.connect(new StreamableHTTPClientTransport(new URL(url)));
  stops.push(() => connected.close());
  return { client: connected, url };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'artifact-provenance-'));
  mkdirSync(join(dir, 'keys'));
  const keygen = await runCli(['keygen', '--out', join(dir, 'keys', 'gateway')]);
  expect(keygen.code, keygen.stderr).toBe(0);
  ({ client } = await startGateway(dir, [{ name: 'files', stdio: { command: NODE, args: [BINARY] } }]));
}, 60_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `mcp-envelope verify` on a record with `folder` as its artifacts; the report and exit code. */
async function verifyRecord(record: ProvRecord, folder: string, signed = true) {
  const file = join(dir, `record-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(record));
  const key = signed ? ['--public-key', join(dir, 'keys', 'gateway.public.pem')] : [];
  const run = await runCli(['verify', file, '--artifacts', folder, ...key, '--json']);
  const report = JSON.parse(run.stdout) as {
    ok: boolean;
    checks: { check: string; status: string; code?: string }[];
  };
  return { code: run.code, output: run.stdout + run.stderr, report };
}

/** The record from the ledger, by run id, as `mcp-envelope ledger show --json` prints it. */
async function ledgerRecord(runId: string, folder = dir): Promise<ProvRecord> {
  const shown = await runCli(['ledger', 'show', runId, '--db', join(folder, 'ledger.sqlite'), '--json']);
  expect(shown.code, shown.stderr).toBe(0);
  const { entries } = JSON.parse(shown.stdout) as { entries: { record: ProvRecord }[] };
  expect(entries).toHaveLength(1);
  return entries[0]?.record as ProvRecord;
}

describe('a downloaded file against the signed record of its call', () => {
  let record: ProvRecord;
  let descriptor: Descriptor;
  let downloaded: Buffer;

  it('registers the stored file as an output artifact of the record', async () => {
    const result = (await client.callTool({
      name: 'image',
      arguments: {},
      _meta: { capture_provenance: true, return_mode: 'url' },
    })) as CallToolResult;
    const envelope = result.structuredContent as { result: unknown[]; provenance: ProvRecord };
    // The descriptor's text block took the image's place; the envelope's result holds it parsed.
    descriptor = envelope.result[1] as Descriptor;
    record = await ledgerRecord(envelope.provenance.run_id);
    // The ledger holds the record the answer carried.
    expect(record).toEqual(envelope.provenance);
    const artifact = record.outputs.find((output) => output.labels?.role === 'artifact');
    expect(artifact).toEqual({
      schema_version: 'artifact.v0.1',
      artifact_id: descriptor.filename,
      media_type: 'image/png',
      size_bytes: IMAGE.length,
      digest: { alg: 'sha256', value: createHash('sha256').update(IMAGE).digest('hex') },
      labels: { role: 'artifact', source: '/content/1' },
    });
    expect(record.integrity?.signature).toBeDefined();
    const download = await fetch(descriptor.download_url);
    expect(download.status).toBe(200);
    downloaded = Buffer.from(await download.arrayBuffer());
  });

  it('passes mcp-envelope verify --artifacts with the file as downloaded', async () => {
    const folder = join(dir, 'downloads');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, descriptor.filename), downloaded);
    const { code, output, report } = await verifyRecord(record, folder);
    expect(code, output).toBe(0);
    expect(report.ok).toBe(true);
    const check = report.checks.find((entry) => entry.check.endsWith(`:${descriptor.filename}`));
    expect(check?.status).toBe('pass');
  });

  it("passes ledger verify with the gateway's own artifacts.dir as the artifacts folder", async () => {
    // The store keeps the file as blobs/<2 hex>/<sha256>: found there by the digest the record names.
    const run = await runCli([
      'ledger',
      'verify',
      '--db',
      join(dir, 'ledger.sqlite'),
      '--artifacts',
      join(dir, 'artifacts'),
      '--public-key',
      join(dir, 'keys', 'gateway.public.pem'),
      '--json',
    ]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as {
      entries: { run_id: string; checks: { check: string; status: string; message: string }[] }[];
    };
    const checks = report.entries.find((entry) => entry.run_id === record.run_id)?.checks ?? [];
    const stored = record.outputs.find((output) => output.labels?.role === 'artifact');
    const check = checks.find((entry) => entry.check.endsWith(`:${stored?.artifact_id}`));
    expect(check, JSON.stringify(checks)).toMatchObject({ status: 'pass' });
    expect(check?.message).toContain('from the artifacts folder matches');
  });

  it('fails with DIGEST_MISMATCH once one byte of the file changes', async () => {
    const folder = join(dir, 'tampered');
    mkdirSync(folder, { recursive: true });
    const tampered = Buffer.from(downloaded);
    tampered[100] = (tampered[100] ?? 0) ^ 0xff;
    writeFileSync(join(folder, descriptor.filename), tampered);
    const { code, report } = await verifyRecord(record, folder);
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    const check = report.checks.find((entry) => entry.check.endsWith(`:${descriptor.filename}`));
    expect(check).toMatchObject({ status: 'fail', code: 'DIGEST_MISMATCH' });
    expect(readFileSync(join(folder, descriptor.filename)).equals(downloaded)).toBe(false);
  });
});

describe("a document a template server put in the gateway's store through its put API", () => {
  it('is an output artifact of the record, and verifies once downloaded from the gateway', async () => {
    const folder = join(dir, 'templates-gateway');
    mkdirSync(folder);
    const server = {
      name: 'templates',
      // The gateway keeps the document in its own store; the server is given a capability, no folder.
      stdio: { command: NODE, args: [TEMPLATE_SERVER] },
      artifacts: 'shared',
      dialect: 'hosted-v2',
    };
    const gateway = await startGateway(folder, [server]);
    const result = (await gateway.client.callTool({
      name: 'fill_template',
      arguments: {
        template_id: 'meeting-minutes',
        values: { meeting_title: 'Kick-off', meeting_date: '2026-03-01', attendees: ['Ada', 'Grace'] },
      },
      _meta: { capture_provenance: true },
    })) as CallToolResult;
    const envelope = result.structuredContent as { ok: boolean; data: { download_id: string } };
    expect(envelope.ok, JSON.stringify(result)).toBe(true);
    const record = result._meta?.[PROVENANCE_META_KEY] as ProvRecord;
    expect(await ledgerRecord(record.run_id, folder)).toEqual(record);
    const artifact = record.outputs.find((output) => output.labels?.role === 'artifact');
    expect(artifact).toMatchObject({
      media_type: DOCX_TYPE,
      labels: { role: 'artifact', source: '/data/download_id' },
    });
    // Downloaded from the gateway's own /api/download, by the id the template server gave.
    const download = await fetch(
      `${new URL(gateway.url).origin}/api/download?id=${envelope.data.download_id}`,
    );
    expect(download.status).toBe(200);
    const bytes = Buffer.from(await download.arrayBuffer());
    const digest = createHash('sha256').update(bytes).digest('hex');
    expect(artifact?.digest?.value).toBe(digest);
    // Kept in the gateway's own artifacts.dir, by the gateway.
    expect(readFileSync(join(folder, 'artifacts', 'blobs', digest.slice(0, 2), digest)).equals(bytes)).toBe(
      true,
    );
    const downloads = join(folder, 'downloads');
    mkdirSync(downloads);
    writeFileSync(join(downloads, artifact?.artifact_id as string), bytes);
    const { code, output } = await verifyRecord(record, downloads);
    expect(code, output).toBe(0);
  });
});
