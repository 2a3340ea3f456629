import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  type CallToolResult,
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openArtifactService } from '../../src/artifacts/service.ts';
import { RESOURCE_READ_MAX_BYTES } from '../../src/gateway/artifacts/resources.ts';
import { artifactResources, artifactSink } from '../../src/gateway/artifacts/sink.ts';
import { applyReturnMode } from '../../src/mcp/pipeline/return-mode.ts';
import { AUDIO, DOCX, IMAGE, PDF } from '../fixtures/servers/binary-bytes.ts';
import { statelessEraClient } from './era-2026-07-28.ts';
import { BIN, gatewayStdio, NODE, ROOT, stopChild } from './processes.ts';

/**
 * Return modes through real gateways (`mcp-envelope gateway --config FILE`)
 * in front of a server whose tools return files: a caller that names no mode
 * keeps a small binary inline; over HTTP `url` replaces each binary with a
 * download descriptor whose link serves the very bytes; `base64` leaves the result as the tool gave it; `mcp_resource` gives a
 * URI the gateway's own resources/read answers (a tampered one is refused with
 * its canonical code). Over stdio, with no HTTP listener, `url` falls back to
 * `mcp_resource` and says so. `_meta.return_mode` never reaches the upstream;
 * a tool's own declared `return_mode` argument does. An artifact over
 * `artifacts.maxBytes` is TOO_LARGE and the gateway goes on serving.
 */

const BINARY = fileURLToPath(new URL('../fixtures/servers/binary.ts', import.meta.url));
const MAX_BYTES = 64 * 1024;

interface Descriptor {
  return_mode: string;
  download_url?: string;
  download_id: string;
  resource_uri?: string;
  expires_at: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  filename: string;
  note?: string;
}

interface Block {
  type: string;
  text?: string;
  data?: string;
  uri?: string;
  name?: string;
  mimeType?: string;
  size?: number;
  resource?: { blob?: string };
}

const folders: string[] = [];
const stops: (() => Promise<unknown>)[] = [];

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'return-modes-'));
  folders.push(dir);
  return dir;
}

function config(dir: string, listen: Record<string, unknown>): string {
  const file = join(dir, 'gateway.config.json');
  writeFileSync(
    file,
    JSON.stringify({
      upstreams: [
        { name: 'files', stdio: { command: NODE, args: [BINARY] } },
        { name: 'raw', stdio: { command: NODE, args: [BINARY] }, dialect: 'passthrough' },
      ],
      listen,
      ledger: { enabled: false },
      logs: { enabled: false },
      artifacts: { dir: 'artifacts', maxBytes: MAX_BYTES },
    }),
  );
  return file;
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The content blocks of an answer. */
function blocks(result: CallToolResult): Block[] {
  return result.content as unknown as Block[];
}

/** An envelope's result (prov-v0.1, as the `files` upstream answers). */
function payloadOf(result: CallToolResult): unknown {
  return (result.structuredContent as { result?: unknown }).result;
}

/** The descriptors in a list of blocks: every text block holding one. */
function descriptorsIn(list: readonly Block[]): Descriptor[] {
  return list.flatMap((block) => {
    if (block.type !== 'text' || !block.text?.startsWith('{')) return [];
    const value = JSON.parse(block.text) as Partial<Descriptor>;
    return typeof value.download_id === 'string' ? [value as Descriptor] : [];
  });
}

let http: { client: Client; url: string; dir: string };
let stdio: Client;

beforeAll(async () => {
  const dir = folder();
  const child = spawn(NODE, [BIN, 'gateway', '--config', config(dir, { stdio: false, http: { port: 0 } })], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stops.push(() => stopChild(child));
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    (child.stderr as Readable).setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      stderr += text;
      const match = /^Streamable HTTP: (http:\/\/\S+)$/m.exec(stderr);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`the gateway exited with ${code}:\n${stderr}`)));
  });
  const client = new Client({ name: 'return-modes', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  stops.push(() => client.close());
  http = { client, url, dir };

  const transport = gatewayStdio(config(folder(), { stdio: true }), { stderr: 'pipe' });
  stdio = new Client({ name: 'return-modes', version: '1.0.0' });
  await stdio.connect(transport);
  stops.push(() => stdio.close());
}, 60_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  meta?: Record<string, unknown>,
): Promise<CallToolResult> {
  return client.callTool({
    name,
    arguments: args,
    ...(meta ? { _meta: meta } : {}),
  }) as Promise<CallToolResult>;
}

describe('url', () => {
  it('leaves a small image inline for a caller that names no mode', async () => {
    const result = await call(http.client, 'files__image');
    expect(blocks(result)).toContainEqual({
      type: 'image',
      data: IMAGE.toString('base64'),
      mimeType: 'image/png',
    });
    // The envelope refers to the image block, which travels as itself.
    const payload = payloadOf(result) as Record<string, unknown>[];
    expect(payload[1]).toMatchObject({ type: 'image', sha256: sha256(IMAGE), size_bytes: IMAGE.length });
  });

  it('replaces the image with a descriptor whose link serves the same bytes', async () => {
    const result = await call(http.client, 'files__image', {}, { return_mode: 'url' });
    expect(result.isError).toBeFalsy();
    // The caption stays; the descriptor is where the image was, and the envelope holds it too.
    expect(blocks(result)[1]).toEqual({ type: 'text', text: 'Sales by month' });
    const [descriptor] = descriptorsIn(blocks(result));
    expect((payloadOf(result) as unknown[])[1]).toEqual(descriptor);
    expect(descriptor).toMatchObject({
      return_mode: 'url',
      content_type: 'image/png',
      size_bytes: IMAGE.length,
      sha256: sha256(IMAGE),
      filename: 'image-1.png',
    });
    expect(Date.parse(descriptor?.expires_at ?? '')).toBeGreaterThan(Date.now());
    expect(JSON.stringify(result)).not.toContain(IMAGE.toString('base64'));
    // The link follows the envelope, as a resource_link.
    const link = blocks(result).at(-1);
    expect(link).toEqual({
      type: 'resource_link',
      uri: descriptor?.download_url,
      name: 'image-1.png',
      mimeType: 'image/png',
      size: IMAGE.length,
    });
    const download = await fetch(descriptor?.download_url as string);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/png');
    // Stored as the caller's: an anonymous 2025-era HTTP caller is its own session.
    const db = new DatabaseSync(join(http.dir, 'artifacts', 'artifacts.sqlite'), { readOnly: true });
    const row = db.prepare('SELECT owner FROM download_grants ORDER BY rowid DESC LIMIT 1').get();
    db.close();
    expect(String(row?.owner)).toMatch(/^anonymous:session:[0-9a-f-]{36}$/);
    expect(Buffer.from(await download.arrayBuffer()).equals(IMAGE)).toBe(true);
  });

  it('makes a lone audio clip the envelope data itself', async () => {
    const result = await call(http.client, 'files__audio', {}, { return_mode: 'url' });
    const descriptor = payloadOf(result) as Descriptor;
    expect(descriptor).toMatchObject({
      return_mode: 'url',
      content_type: 'audio/wav',
      sha256: sha256(AUDIO),
    });
    const download = await fetch(descriptor.download_url as string);
    expect(Buffer.from(await download.arrayBuffer()).equals(AUDIO)).toBe(true);
  });

  it('stores an embedded resource blob under the name its URI gives', async () => {
    const result = await call(http.client, 'files__report', {}, { return_mode: 'url' });
    const descriptor = payloadOf(result) as Descriptor;
    expect(descriptor).toMatchObject({ filename: 'q3-report.pdf', content_type: 'application/pdf' });
    const download = await fetch(descriptor.download_url as string);
    expect(download.headers.get('content-disposition')).toContain('q3-report.pdf');
    expect(Buffer.from(await download.arrayBuffer()).equals(PDF)).toBe(true);
  });
});

describe('base64 (and its Hosted v2 spelling base64_docx)', () => {
  it('leaves the binary inline, as the tool gave it', async () => {
    for (const mode of ['base64', 'base64_docx']) {
      const result = await call(http.client, 'files__image', {}, { return_mode: mode });
      expect(blocks(result)).toContainEqual({
        type: 'image',
        data: IMAGE.toString('base64'),
        mimeType: 'image/png',
      });
      expect(blocks(result).some((block) => block.type === 'resource_link')).toBe(false);
    }
  });
});

describe('mcp_resource', () => {
  it('gives a resource URI the gateway itself reads back', async () => {
    const result = await call(http.client, 'files__audio', {}, { return_mode: 'mcp_resource' });
    const descriptor = payloadOf(result) as Descriptor;
    expect(descriptor.return_mode).toBe('mcp_resource');
    expect(descriptor.resource_uri).toBe(`mcp-envelope://artifacts/${descriptor.download_id}`);
    expect(descriptor.download_url).toMatch(/^http:/);
    expect(blocks(result).at(-1)).toMatchObject({ type: 'resource_link', uri: descriptor.resource_uri });
    const read = await http.client.readResource({ uri: descriptor.resource_uri as string });
    const [content] = read.contents as { uri: string; mimeType: string; blob: string }[];
    expect(content).toMatchObject({ uri: descriptor.resource_uri, mimeType: 'audio/wav' });
    expect(Buffer.from(content?.blob ?? '', 'base64').equals(AUDIO)).toBe(true);
  });

  it('reads back for a 2026-07-28 client too', async () => {
    const modern = statelessEraClient();
    await modern.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    stops.push(() => modern.close());
    const result = await call(modern, 'files__report', {}, { return_mode: 'mcp_resource' });
    const descriptor = payloadOf(result) as Descriptor;
    const read = await modern.readResource({ uri: descriptor.resource_uri as string });
    const [content] = read.contents as { blob: string }[];
    expect(Buffer.from(content?.blob ?? '', 'base64').equals(PDF)).toBe(true);
  });

  it('advertises resources, though no upstream has any', () => {
    expect(http.client.getServerCapabilities()?.resources).toBeDefined();
  });

  it('refuses a tampered URI with the canonical code, and keeps serving', async () => {
    const result = await call(http.client, 'files__audio', {}, { return_mode: 'mcp_resource' });
    const uri = (payloadOf(result) as Descriptor).resource_uri as string;
    const last = uri.at(-1) === 'A' ? 'B' : 'A';
    const tampered = `${uri.slice(0, -1)}${last}`;
    const refusal = await http.client.readResource({ uri: tampered }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ProtocolError);
    expect((refusal as ProtocolError).data).toMatchObject({ canonical_code: 'DOWNLOAD_SIGNATURE_INVALID' });
    const malformed = await http.client.readResource({ uri: 'mcp-envelope://artifacts/nope' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((malformed as ProtocolError).data).toMatchObject({ canonical_code: 'DOWNLOAD_ID_MALFORMED' });
    expect((await http.client.readResource({ uri })).contents).toHaveLength(1);
  });
});

describe('the caller choosing', () => {
  it('never forwards _meta.return_mode; keeps the rest of _meta', async () => {
    const result = await call(http.client, 'files__meta', { a: 1 }, { return_mode: 'base64', trace: 'abc' });
    const seen = payloadOf(result) as { meta: Record<string, unknown>; arguments: Record<string, unknown> };
    expect(seen.meta).toEqual({ trace: 'abc' });
    expect(seen.arguments).toEqual({ a: 1 });
    const alone = await call(http.client, 'files__meta', {}, { return_mode: 'url' });
    expect((payloadOf(alone) as { meta: unknown }).meta).toBeNull();
    const raw = await call(http.client, 'raw__meta', {}, { return_mode: 'url' });
    const rawSeen = JSON.parse(blocks(raw)[0]?.text ?? '{}') as { meta: unknown };
    expect(rawSeen.meta).toBeNull();
  });

  it('forwards a declared return_mode argument unchanged and follows it', async () => {
    const result = await call(http.client, 'files__fill', { return_mode: 'mcp_resource' });
    const payload = payloadOf(result) as unknown[];
    expect(payload[0]).toEqual({ received_return_mode: 'mcp_resource' });
    const [descriptor] = descriptorsIn(blocks(result));
    expect(descriptor).toMatchObject({
      return_mode: 'mcp_resource',
      filename: 'letter.docx',
      sha256: sha256(DOCX),
    });
    const inline = await call(http.client, 'files__fill', { return_mode: 'base64_docx' });
    expect(JSON.stringify(inline)).toContain(DOCX.toString('base64'));
  });

  it('refuses a return_mode that is none, before the tool runs', async () => {
    const result = await call(http.client, 'files__image', {}, { return_mode: 'pdf' });
    expect(result.isError).toBe(true);
    const { errors } = result.structuredContent as {
      errors: { code: string; details: { pointer: string } }[];
    };
    expect(errors[0]).toMatchObject({ code: 'INVALID_INPUT', details: { pointer: '/_meta/return_mode' } });
    const raw = await call(http.client, 'raw__image', {}, { return_mode: 'pdf' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((raw as ProtocolError).data).toMatchObject({ canonical_code: 'INVALID_INPUT' });
  });
});

describe('passthrough', () => {
  it('relays the binary untouched unless the caller asks', async () => {
    const untouched = await call(http.client, 'raw__report');
    expect(blocks(untouched)[0]?.resource?.blob).toBe(PDF.toString('base64'));
    const asked = await call(http.client, 'raw__report', {}, { return_mode: 'url' });
    const [descriptor] = descriptorsIn(blocks(asked));
    expect(descriptor).toMatchObject({ return_mode: 'url', sha256: sha256(PDF) });
    expect(blocks(asked).at(-1)).toMatchObject({ type: 'resource_link', uri: descriptor?.download_url });
    const download = await fetch(descriptor?.download_url as string);
    expect(Buffer.from(await download.arrayBuffer()).equals(PDF)).toBe(true);
  });
});

describe('limits', () => {
  it('answers an artifact over artifacts.maxBytes with TOO_LARGE, and goes on serving', async () => {
    const result = await call(http.client, 'files__blob', { bytes: MAX_BYTES + 1 }, { return_mode: 'url' });
    expect(result.isError).toBe(true);
    const { errors } = result.structuredContent as {
      errors: { code: string; details: Record<string, unknown> }[];
    };
    expect(errors[0]).toMatchObject({
      code: 'TOO_LARGE',
      details: { max_bytes: MAX_BYTES, size_bytes: MAX_BYTES + 1 },
    });
    const raw = await call(http.client, 'raw__blob', { bytes: MAX_BYTES + 1 }, { return_mode: 'url' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((raw as ProtocolError).data).toMatchObject({ canonical_code: 'TOO_LARGE' });
    const next = await call(http.client, 'files__blob', { bytes: MAX_BYTES }, { return_mode: 'url' });
    expect(next.isError).toBeFalsy();
    expect((payloadOf(next) as Descriptor).size_bytes).toBe(MAX_BYTES);
  });
});

describe('an upstream returning a 200 MB blob', () => {
  it('fails that call with a stable code, stores nothing partial, and goes on serving', async () => {
    const stored = () => {
      const db = new DatabaseSync(join(http.dir, 'artifacts', 'artifacts.sqlite'), { readOnly: true });
      const row = db.prepare('SELECT count(*) AS n, max(size) AS largest FROM artifacts').get();
      db.close();
      return row;
    };
    const before = stored();
    const result = await call(http.client, 'files__blob', { bytes: 200_000_000 }, { return_mode: 'url' });
    expect(result.isError).toBe(true);
    expect(stored()).toEqual(before);
    const { errors } = result.structuredContent as { errors: { code: string; message: string }[] };
    // Past the 64 MiB an answer line may hold: refused as the upstream's failure, long before any store.
    expect(errors[0]?.code, errors[0]?.message).toBe('ADAPTER.EXECUTION.FAILED');
    expect(JSON.stringify(result).length).toBeLessThan(10_000);
    const next = await call(http.client, 'files__image', {}, { return_mode: 'url' });
    expect(next.isError).toBeFalsy();
  }, 60_000);
});

describe('over stdio, with no HTTP listener', () => {
  it('falls back from url to mcp_resource, says so, and reads it back', async () => {
    const result = await call(stdio, 'files__audio', {}, { return_mode: 'url' });
    const descriptor = payloadOf(result) as Descriptor;
    expect(descriptor.return_mode).toBe('mcp_resource');
    expect(descriptor.download_url).toBeUndefined();
    expect(descriptor.note).toMatch(/no download URL/i);
    const read = await stdio.readResource({ uri: descriptor.resource_uri as string });
    const [content] = read.contents as { blob: string }[];
    expect(Buffer.from(content?.blob ?? '', 'base64').equals(AUDIO)).toBe(true);
  });
});

describe('the stage and the resources, in process', () => {
  it('stores the largest texts first, until the rest fits inline', async () => {
    const dir = folder();
    const service = openArtifactService({
      dir,
      ttlMs: 60_000,
      maxBytes: 1 << 20,
      inlineMaxBytes: 1000,
      defaultReturnMode: 'url',
      downloadPath: '/api/download',
      sweepIntervalMs: 0,
    });
    stops.push(() => service.close());
    const raw = {
      content: [
        { type: 'text', text: 'a'.repeat(600) },
        { type: 'text', text: 'b'.repeat(900) },
        { type: 'text', text: 'c'.repeat(300) },
      ],
    };
    const outcome = await applyReturnMode(raw, {
      sink: artifactSink(service),
      requested: 'mcp_resource',
      owner: 'token:test',
      tool: 'texts',
    });
    // 1800 characters: storing the 900 leaves 900, which fits; the others stay inline.
    const content = outcome.result.content as Block[];
    expect(content[0]?.text).toBe('a'.repeat(600));
    expect(JSON.parse(content[1]?.text ?? '{}')).toMatchObject({
      size_bytes: 900,
      content_type: 'text/plain',
    });
    expect(content[2]?.text).toBe('c'.repeat(300));
    expect(outcome.artifacts.map((artifact) => artifact.labels?.source)).toEqual(['/content/1']);
  });

  it('refuses an expired artifact resource with DOWNLOAD_EXPIRED', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const service = openArtifactService({
      dir: folder(),
      ttlMs: 60_000,
      maxBytes: 1 << 20,
      inlineMaxBytes: 1000,
      defaultReturnMode: 'url',
      downloadPath: '/api/download',
      sweepIntervalMs: 0,
      now: () => now,
    });
    stops.push(() => service.close());
    const stored = await artifactSink(service, () => now).store(AUDIO, {
      mediaType: 'audio/wav',
      filename: 'clip.wav',
      owner: 'token:test',
    });
    const resources = artifactResources(service, () => now);
    expect(resources.owns(stored.resourceUri)).toBe(true);
    const read = (await resources.read(stored.resourceUri)) as { contents: { blob: string }[] };
    expect(Buffer.from(read.contents[0]?.blob ?? '', 'base64').equals(AUDIO)).toBe(true);
    now += 61_000;
    const refusal = await resources.read(stored.resourceUri).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toMatchObject({ code: 'DOWNLOAD_EXPIRED' });
  });

  it('reads an artifact resource for its own token only, and refuses one past the size it answers inline', async () => {
    const service = openArtifactService({
      dir: folder(),
      ttlMs: 60_000,
      maxBytes: 64 << 20,
      inlineMaxBytes: 1000,
      defaultReturnMode: 'url',
      downloadPath: '/api/download',
      sweepIntervalMs: 0,
    });
    stops.push(() => service.close());
    const sink = artifactSink(service);
    const resources = artifactResources(service);
    const mine = await sink.store(AUDIO, {
      mediaType: 'audio/wav',
      filename: 'clip.wav',
      owner: 'token:alice',
    });
    await expect(resources.read(mine.resourceUri, 'token:alice')).resolves.toBeDefined();
    // Another token's holder is told nothing of it; a caller no token names holds the id as a link.
    await expect(resources.read(mine.resourceUri, 'token:mallory')).rejects.toMatchObject({
      code: 'DOWNLOAD_NOT_FOUND',
    });
    await expect(resources.read(mine.resourceUri)).resolves.toBeDefined();
    const big = await sink.store(Buffer.alloc(RESOURCE_READ_MAX_BYTES + 1, 7), {
      mediaType: 'application/octet-stream',
      filename: 'big.bin',
      owner: 'token:alice',
    });
    await expect(resources.read(big.resourceUri, 'token:alice')).rejects.toMatchObject({
      code: 'TOO_LARGE',
      details: { size_bytes: RESOURCE_READ_MAX_BYTES + 1 },
    });
  });
});
