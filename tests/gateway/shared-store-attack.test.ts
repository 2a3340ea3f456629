import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvRecord } from '../../src/provenance/record.ts';
import { runCli, startGatewayHttp } from './gateway-process.ts';
import { NODE, type Running } from './processes.ts';

/**
 * An upstream the gateway shares its artifact store with (`"artifacts":
 * "shared"`) that attacks the gateway with everything it is given
 * (tests/fixtures/servers/store-attacker.ts), beside the template server, its
 * victim, behind one real gateway with a ledger and a signing key. It is given
 * a capability to the put API and nothing else: no folder, database or key to
 * read or rewrite; a link planted among the store's files, or bytes rewritten
 * there (by an attacker who found the folder anyway, as one running as the
 * gateway's user can), are never served; no link it mints outlives
 * artifacts.ttlMs, even signed with the gateway's own key; and it cannot look
 * up what others stored. The template server's own path (fill, download,
 * verify) works throughout.
 */

const ATTACKER = fileURLToPath(new URL('../fixtures/servers/store-attacker.ts', import.meta.url));
const TEMPLATE_SERVER = fileURLToPath(new URL('../../examples/template-server/server.ts', import.meta.url));
const PROVENANCE_META_KEY = 'mcp-envelope/provenance';
const TTL_MS = 600_000;
const DAY = 86_400_000;

type Json = ReturnType<typeof JSON.parse>;

let dir: string;
let store: string;
let signingKey: string;
let gateway: Running;
let client: Client;
let origin: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'shared-store-attack-'));
  store = join(dir, 'artifacts');
  mkdirSync(join(dir, 'keys'));
  const keygen = await runCli(['keygen', '--out', join(dir, 'keys', 'gateway')]);
  expect(keygen.code, keygen.stderr).toBe(0);
  signingKey = join(dir, 'keys', 'gateway.private.pem');
  const config = join(dir, 'gateway.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: [
        {
          name: 'attacker',
          stdio: { command: NODE, args: [ATTACKER] },
          artifacts: 'shared',
          dialect: 'passthrough',
        },
        {
          name: 'templates',
          stdio: { command: NODE, args: [TEMPLATE_SERVER] },
          artifacts: 'shared',
          dialect: 'hosted-v2',
          validation: { input: 'off' },
        },
      ],
      listen: { stdio: false },
      ledger: { path: 'ledger.sqlite' },
      logs: { enabled: false },
      signing: { keyFile: signingKey },
      artifacts: { dir: 'artifacts', ttlMs: TTL_MS },
    }),
  );
  gateway = await startGatewayHttp(['--config', config]);
  origin = new URL(gateway.url).origin;
  client = new Client({ name: 'shared-store-attack', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
}, 60_000);

afterAll(async () => {
  await client?.close();
  await gateway?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** What the attacker's tool answered. */
async function attack(tool: string, args: Record<string, unknown> = {}): Promise<Json> {
  const result = (await client.callTool({ name: `attacker__${tool}`, arguments: args })) as CallToolResult;
  expect(result.isError, JSON.stringify(result)).toBeFalsy();
  return result.structuredContent;
}

/** A document the template server filled, its envelope's data, and the call's record. */
async function fill(title: string): Promise<{ data: Json; record: ProvRecord }> {
  const result = (await client.callTool({
    name: 'templates__fill_template',
    arguments: {
      template_id: 'meeting-minutes',
      values: { meeting_title: title, meeting_date: '2026-06-01', attendees: ['Ada'] },
      return_mode: 'url',
    },
    _meta: { capture_provenance: true },
  })) as CallToolResult;
  const envelope = result.structuredContent as { ok: boolean; data: Json };
  expect(envelope.ok, JSON.stringify(result)).toBe(true);
  return { data: envelope.data, record: result._meta?.[PROVENANCE_META_KEY] as ProvRecord };
}

function download(id: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${origin}/api/download?id=${encodeURIComponent(id)}`, { headers });
}

/** The body of a download, or the error reading it ended with (the gateway cut the connection). */
async function bodyOf(response: Response): Promise<Buffer | Error> {
  try {
    return Buffer.from(await response.arrayBuffer());
  } catch (error) {
    return error as Error;
  }
}

/** Status and error code of a put sent with another Host header (fetch keeps its own). */
function statusUnderHost(url: string, token: string, host: string): Promise<[number, string | undefined]> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method: 'POST',
        headers: { host, authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
      },
      (response) => {
        response.resume();
        response.once('end', () =>
          resolve([response.statusCode ?? 0, response.headers['x-error-code'] as string | undefined]),
        );
      },
    );
    request.once('error', reject);
    request.end('x');
  });
}

describe('an upstream sharing the store, attacking it', () => {
  it('is given a capability to the put API, never a path, a database or a key', async () => {
    const { variables } = await attack('environment');
    expect(Object.keys(variables).sort()).toEqual([
      'MCP_ENVELOPE_ARTIFACTS_TOKEN',
      'MCP_ENVELOPE_ARTIFACTS_URL',
    ]);
    expect(variables.MCP_ENVELOPE_ARTIFACTS_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/artifacts$/);
    for (const value of Object.values(variables) as string[]) expect(value).not.toContain(dir);
    // Every path it learned, read and written as a database: none.
    expect(await attack('read_learned')).toEqual({ read: [] });
    expect(await attack('tamper_learned')).toEqual({ touched: [] });
  });

  it('answers the put API only with the capability, on its own address', async () => {
    const { variables } = await attack('environment');
    const url = variables.MCP_ENVELOPE_ARTIFACTS_URL as string;
    const body = Buffer.from('x');
    const put = (headers: Record<string, string>) =>
      fetch(`${url}?filename=x.bin`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream', ...headers },
        body,
      });
    expect((await put({})).status).toBe(401);
    expect((await put({ authorization: `Bearer ${'A'.repeat(43)}` })).status).toBe(401);
    // A page a browser shows under another name cannot reach it, capability or not.
    const token = variables.MCP_ENVELOPE_ARTIFACTS_TOKEN as string;
    expect(await statusUnderHost(url, token, 'attacker.example')).toEqual([403, 'FORBIDDEN']);
    expect((await put({ authorization: `Bearer ${token}` })).status).toBe(201);
  });

  it('cannot get a file of the gateway served by planting a link among the blobs', async () => {
    // Bytes as long as the signing key, so that the recorded size matches the key's.
    const secret = readFileSync(signingKey);
    const planted = await attack('put', { size: secret.length, fill: 'p', filename: 'key.pem' });
    await attack('plant_symlink', { dir: store, digest: planted.sha256, target: signingKey });
    const response = await download(planted.download_id);
    const body = await bodyOf(response);
    expect(body instanceof Buffer && body.includes(secret)).toBe(false);
    expect([response.status, response.headers.get('x-download-error-code')]).toEqual([
      500,
      'ARTIFACT_INTEGRITY_FAILED',
    ]);
    // Nor through the gateway's resources/read, nor through the put API.
    await expect(
      client.readResource({ uri: `mcp-envelope://artifacts/${planted.download_id}` }),
    ).rejects.toThrow(/ARTIFACT_INTEGRITY_FAILED|does not match|not the file the store wrote/);
    const resolved = await client.callTool({
      name: 'attacker__resolve',
      arguments: { download_id: planted.download_id },
    });
    expect(JSON.stringify(resolved)).not.toContain(secret.toString('base64'));
  });

  it("cannot have a victim's document served altered: the download is cut before its end", async () => {
    const victim = await fill('To be rewritten');
    const digest = victim.data.metadata.sha256 as string;
    const whole = Buffer.from(await (await download(victim.data.download_id)).arrayBuffer());
    expect(createHash('sha256').update(whole).digest('hex')).toBe(digest);
    const { size } = await attack('rewrite_blob', { dir: store, digest });
    expect(size).toBe(whole.length);
    const asked: Record<string, string>[] = [
      {},
      { range: 'bytes=10-99' },
      { range: `bytes=-${whole.length}` },
    ];
    for (const headers of asked) {
      // Its size still matches, so the answer starts out as the real file's would; its end never
      // comes, so no client takes what did arrive for the document.
      const body = await download(victim.data.download_id, headers).then(bodyOf, (error: Error) => error);
      expect(body, JSON.stringify(headers)).toBeInstanceOf(Error);
    }
    // Nor as the gateway's own resource: read whole, hashed, refused.
    await expect(
      client.readResource({ uri: `mcp-envelope://artifacts/${victim.data.download_id}` }),
    ).rejects.toThrow(/does not match/);
    const viaTool = (await client.callTool({
      name: 'templates__download_filled',
      arguments: { download_id: victim.data.download_id },
    })) as CallToolResult;
    expect((viaTool.structuredContent as { ok: boolean }).ok).toBe(false);
  });

  it('cannot hand out a link that outlives artifacts.ttlMs, asking the API or signing with the key', async () => {
    const asked = await attack('put_far', { ttl_ms: 30 * DAY });
    // No 30-day link comes back: the put API takes no lifetime, and refuses to be given one.
    expect(asked.download_id).toBeUndefined();
    expect([asked.status, asked.answer.error?.code]).toEqual([400, 'INVALID_ARGUMENT']);
    const own = await attack('put', { size: 64, fill: 'o' });
    expect(Date.parse(own.expires_at) - Date.now()).toBeLessThanOrEqual(TTL_MS + 1000);
    // An upstream running as the gateway's user may find keys.json by guessing: its 30-day link is refused.
    const minted = await attack('mint_far', { dir: store, download_id: own.download_id, ttl_ms: 30 * DAY });
    const far = await download(minted.download_id);
    expect([far.status, far.headers.get('x-download-error-code')]).toEqual([
      403,
      'DOWNLOAD_LIFETIME_EXCEEDED',
    ]);
    // The same key within the lifetime still works: the refusal is the lifetime's.
    const near = await attack('mint_far', { dir: store, download_id: own.download_id, ttl_ms: 60_000 });
    expect((await download(near.download_id)).status).toBe(200);
  });

  it("cannot look up or read another upstream's file through the put API; its own it can", async () => {
    const victim = await fill('Not yours');
    const theirs = await attack('resolve', { download_id: victim.data.download_id });
    expect(theirs).not.toHaveProperty('base64');
    expect(theirs).toEqual({ via: 'api', lookup: 'DOWNLOAD_NOT_FOUND', read: 'DOWNLOAD_NOT_FOUND' });
    const own = await attack('put', { size: 32, fill: 'm' });
    const mine = await attack('resolve', { download_id: own.download_id });
    expect(mine).toMatchObject({
      via: 'api',
      lookup: 'ok',
      read: 'ok',
      base64: Buffer.alloc(32, 'm').toString('base64'),
    });
  });

  it("a restart revokes the previous start's capability; the new one reaches what the upstream put before", async () => {
    const own = await attack('put', { size: 8, fill: 'r' });
    const before = (await attack('environment')).variables;
    await client.callTool({ name: 'attacker__crash', arguments: {} }).catch(() => undefined);
    // The next call waits for the restart (bounded by the call timeout).
    const after = (await attack('environment')).variables;
    expect(after.MCP_ENVELOPE_ARTIFACTS_TOKEN).not.toBe(before.MCP_ENVELOPE_ARTIFACTS_TOKEN);
    const stale = await fetch(`${before.MCP_ENVELOPE_ARTIFACTS_URL}?id=${own.download_id}`, {
      headers: { authorization: `Bearer ${before.MCP_ENVELOPE_ARTIFACTS_TOKEN}` },
    });
    expect(stale.status).toBe(401);
    expect(await attack('resolve', { download_id: own.download_id })).toMatchObject({
      lookup: 'ok',
      read: 'ok',
    });
  });
});

describe("the template server's own path, beside the attacker", () => {
  it('fills in url mode, downloads from /api/download, and verifies against the signed record', async () => {
    const { data, record } = await fill('Quarterly planning');
    expect(data.download_url).toBe(`${origin}/api/download?id=${encodeURIComponent(data.download_id)}`);
    const response = await download(data.download_id);
    expect(response.status).toBe(200);
    const bytes = Buffer.from(await response.arrayBuffer());
    const artifact = record.outputs.find((output) => output.labels?.role === 'artifact');
    expect(artifact?.digest?.value).toBe(createHash('sha256').update(bytes).digest('hex'));
    const downloads = join(dir, 'downloads');
    mkdirSync(downloads, { recursive: true });
    writeFileSync(join(downloads, artifact?.artifact_id as string), bytes);
    const recordFile = join(downloads, 'record.json');
    writeFileSync(recordFile, JSON.stringify(record));
    const verified = await runCli([
      'verify',
      recordFile,
      '--artifacts',
      downloads,
      '--public-key',
      join(dir, 'keys', 'gateway.public.pem'),
    ]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  });
});
