import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderArtifactStore } from '../../src/artifacts/folder-store.ts';
import type { EnvelopeError } from '../../src/errors/index.ts';
import { resolveGatewayConfig } from '../../src/gateway/operations/config.ts';
import { type RunningGateway, startGateway } from '../../src/gateway/start.ts';
import { BIN, initializeMessage, NODE, ROOT, stopChild } from './processes.ts';

/**
 * `/api/download` on a real gateway: a process started from the built CLI
 * (`mcp-envelope gateway --config FILE`), whose store this test fills through
 * the same folder and ledger file, as a producer in another process would; and
 * a gateway started in this process, whose artifact service makes the links.
 */

const PROBE = fileURLToPath(new URL('../fixtures/servers/settings-probe.ts', import.meta.url));
const TOKEN = 'download-test-token-0123456789';
const HOUR = 3_600_000;

const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-download-'));
  folders.push(dir);
  return dir;
}

interface Spawned {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

/** `mcp-envelope gateway --config FILE`, resolved once it prints its HTTP address. */
function spawnGateway(dir: string, config: unknown): Promise<Spawned> {
  const file = join(dir, 'gateway.config.json');
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(NODE, [BIN, 'gateway', '--config', file], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not start:\n${stderr}`)), 30_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      stderr += text;
      const match = /^Streamable HTTP: (http:\/\/\S+)$/m.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1] as string, stderr: () => stderr });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited with ${code}:\n${stderr}`));
    });
  });
}

/** A request with headers fetch will not set (Host, Origin): its status. */
function rawStatus(url: string, headers: Record<string, string>): Promise<number> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        headers: { host: target.host, ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The most memory the process has held (VmHWM), in bytes; undefined off Linux. */
function peakRss(pid: number): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

let gateway: Spawned;
let gatewayDir: string;
/** The gateway's store, opened from this process over the same folder and ledger file. */
let producer: FolderArtifactStore;
let origin: string;

async function publish(bytes: Uint8Array | Readable, filename = 'report.pdf') {
  const info = await producer.put(bytes, { mediaType: 'application/pdf', owner: 'test', ttlMs: HOUR });
  const issued = await producer.createGrant({
    digest: info.digest,
    filename,
    mediaType: 'application/pdf',
    owner: 'test',
    ttlMs: HOUR,
  });
  return { info, ...issued, url: `${origin}/api/download?id=${issued.downloadId}` };
}

beforeAll(async () => {
  gatewayDir = folder();
  gateway = await spawnGateway(gatewayDir, {
    upstreams: [{ name: 'probe', stdio: { command: 'node', args: [PROBE] } }],
    listen: { stdio: false, http: { port: 0 } },
    auth: { tokens: [{ token: TOKEN, tier: 'pro' }] },
    logs: { enabled: false },
  });
  origin = new URL(gateway.url).origin;
  producer = FolderArtifactStore.open({
    dir: join(gatewayDir, 'data', 'artifacts'),
    databasePath: join(gatewayDir, 'data', 'ledger.sqlite'),
  });
}, 40_000);

afterAll(async () => {
  await producer?.close();
  if (gateway) await stopChild(gateway.child);
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

describe('the download route of a running gateway', () => {
  it('serves what another process stored in its folder and ledger file, links signed with the kept key', async () => {
    const bytes = randomBytes(100_000);
    const { url, info } = await publish(bytes);
    // The key was made by this process, after the gateway started: it reads keys.json again.
    expect(existsSync(join(gatewayDir, 'data', 'artifacts', 'keys.json'))).toBe(true);
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('etag')).toBe(`"${info.digest}"`);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    const head = await fetch(url, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-length')]).toEqual([200, '100000']);
  });

  it('asks no bearer token (the signed id is the capability) while MCP requires one', async () => {
    const { url } = await publish(Buffer.from('no token needed'));
    expect((await fetch(url)).status).toBe(200);
    const mcp = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(initializeMessage(1, 'download-test')),
    });
    expect(mcp.status).toBe(401);
    await mcp.text();
  });

  it('still checks Host and Origin', async () => {
    const { url } = await publish(Buffer.from('host checked'));
    expect(await rawStatus(url, {})).toBe(200);
    expect(await rawStatus(url, { host: 'evil.test' })).toBe(403);
    expect(await rawStatus(url, { origin: 'https://evil.test' })).toBe(403);
  });

  it('answers each refusal with its code and status', async () => {
    const { downloadId } = await publish(Buffer.from('refusals'));
    const [grant, expiry, kid, signature] = downloadId.split('.') as [string, string, string, string];
    for (const [query, status, code] of [
      ['', 400, 'DOWNLOAD_ID_MISSING'],
      ['?id=..%2F..%2Fetc%2Fpasswd', 400, 'DOWNLOAD_ID_MALFORMED'],
      [`?id=${grant}.${Number(expiry) + 1}.${kid}.${signature}`, 403, 'DOWNLOAD_SIGNATURE_INVALID'],
    ] as const) {
      const response = await fetch(`${origin}/api/download${query}`);
      expect(response.status, query).toBe(status);
      expect(response.headers.get('x-download-error-code')).toBe(code);
      expect(await response.json()).toMatchObject({ error: { code } });
    }
  });

  it('streams 50 MB while its own memory grows far less than the file', async (context) => {
    const pid = gateway.child.pid as number;
    if (peakRss(pid) === undefined) context.skip('no /proc here to read the gateway memory from');
    const chunk = randomBytes(1024 * 1024);
    const { url, info } = await publish(Readable.from(Array.from({ length: 50 }, () => chunk)), 'big.bin');
    // Warm: the first download pays for code paths, buffers and pools once.
    const warm = await fetch(url);
    for await (const _ of warm.body as ReadableStream<Uint8Array>) {
      // read and drop
    }
    const before = peakRss(pid) as number;
    const hash = createHash('sha256');
    const response = await fetch(url);
    for await (const part of response.body as ReadableStream<Uint8Array>) hash.update(part);
    expect(hash.digest('hex')).toBe(info.digest);
    const growth = (peakRss(pid) as number) - before;
    // Holding the file would take 50 MB more; streaming keeps a few 1 MiB chunks in flight.
    expect(growth).toBeLessThan(20 * 1024 * 1024);
  });

  it('keeps serving when an artifact vanishes from disk: that one fails clearly, the rest work', async () => {
    const lost = await publish(randomBytes(5000));
    rmSync(join(gatewayDir, 'data', 'artifacts', 'blobs'), { recursive: true, force: true });
    const failed = await fetch(lost.url);
    expect(failed.status).toBe(500);
    expect(failed.headers.get('x-download-error-code')).toBe('DOWNLOAD_RENDER_FAILED');
    await failed.text();
    expect(gateway.stderr()).toMatch(/recorded but its file is gone/);
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    const next = await publish(Buffer.from('stored again'));
    const response = await fetch(next.url);
    expect([response.status, await response.text()]).toEqual([200, 'stored again']);
  });
});

describe('the artifact service of a gateway', () => {
  let running: RunningGateway;

  beforeAll(async () => {
    const dir = folder();
    const config = resolveGatewayConfig(
      {
        upstreams: [{ name: 'probe', stdio: { command: 'node', args: [PROBE] } }],
        listen: { stdio: false, http: { port: 0 } },
        ledger: { enabled: false },
        logs: { enabled: false },
        artifacts: { maxBytes: 1024 },
      },
      dir,
    );
    running = await startGateway(config);
  }, 30_000);

  afterAll(async () => {
    await running?.close();
  });

  it('stores bytes and hands out a link on its own listener that downloads them', async () => {
    const service = running.artifacts;
    if (!service) throw new Error('artifacts are on by default');
    const granted = await service.grant(Buffer.from('%PDF-1.7 tiny'), {
      filename: 'contract.pdf',
      mediaType: 'application/pdf',
      owner: 'token:test',
    });
    expect(granted.url).toBe(
      `${new URL(running.http?.url as string).origin}/api/download?id=${granted.downloadId}`,
    );
    const response = await fetch(granted.url as string);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toContain('filename="contract.pdf"');
    expect(await response.text()).toBe('%PDF-1.7 tiny');
    // Without the ledger, metadata is kept beside the bytes.
    expect(service.store.databasePath).toBe(join(config().dir, 'artifacts.sqlite'));
  });

  it('refuses an artifact over maxBytes, leaving nothing behind', async () => {
    const service = running.artifacts;
    if (!service) throw new Error('artifacts are on by default');
    let code: string | undefined;
    try {
      await service.grant(randomBytes(2048), {
        filename: 'big.bin',
        mediaType: 'application/octet-stream',
        owner: 'x',
      });
    } catch (error) {
      code = (error as EnvelopeError).code;
    }
    expect(code).toBe('INPUT_TOO_LARGE');
  });

  it('closes the store with the gateway', async () => {
    const service = running.artifacts;
    await running.close();
    let code: string | undefined;
    try {
      await service?.store.info('a'.repeat(64));
    } catch (error) {
      code = (error as EnvelopeError).code;
    }
    expect(code).toBe('ARTIFACT_STORE_UNAVAILABLE');
  });

  function config() {
    return { dir: (running.artifacts as NonNullable<RunningGateway['artifacts']>).store.dir };
  }
});
