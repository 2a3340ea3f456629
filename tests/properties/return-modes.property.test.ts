import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, NODE, type Running, startListening } from '../gateway/processes.ts';
import { HOSTILE } from '../support/hostile-behaviours.ts';

/**
 * Nothing a tool produced is lost to a return mode: whatever files a result
 * carries (images, audio, embedded blobs of any media type, several at once,
 * empty ones), whatever mode the caller asks for, each file's bytes reach the
 * caller, inline as the tool gave them or behind a descriptor whose sha256 is
 * theirs and whose link or resource gives them back whole. Through proxies in
 * envelope mode with an artifact folder, over stdio and HTTP, with the
 * official SDK client; the upstream replays the generated result.
 */

interface FileBlock {
  type: 'image' | 'audio' | 'resource';
  bytes: Buffer;
  mimeType: string;
}

const mimeType = fc.constantFrom(
  'image/png',
  'audio/wav',
  'application/pdf',
  'application/octet-stream',
  'text/plain',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'x/unknown;charset=weird',
);

const fileBlock: fc.Arbitrary<FileBlock> = fc.record({
  type: fc.constantFrom('image', 'audio', 'resource'),
  bytes: fc.uint8Array({ maxLength: 3000 }).map((array) => Buffer.from(array)),
  mimeType,
});

const generated = fc.record({
  files: fc.array(fileBlock, { minLength: 1, maxLength: 3 }),
  caption: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
  mode: fc.constantFrom('url', 'base64', 'base64_docx', 'mcp_resource'),
  name: fc.constantFrom('report.pdf', '../../etc/passwd', 'a b\r\nc.docx', '\u0000.png', '💥', ''),
});

function block(file: FileBlock, name: string): Record<string, unknown> {
  const data = file.bytes.toString('base64');
  if (file.type === 'resource')
    return {
      type: 'resource',
      resource: { uri: `file:///out/${name}`, mimeType: file.mimeType, blob: data },
    };
  return { type: file.type, data, mimeType: file.mimeType };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

interface Descriptor {
  sha256: string;
  size_bytes: number;
  download_url?: string;
  resource_uri?: string;
}

/** Every descriptor the answer holds, wherever the envelope put it. */
function descriptorsIn(result: CallToolResult): Descriptor[] {
  const found: Descriptor[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === 'string') {
      if (value.startsWith('{') && value.includes('"sha256"')) {
        try {
          visit(JSON.parse(value));
        } catch {}
      }
      return;
    }
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (value && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      // A descriptor hands the bytes out (a link or a resource); a block's reference only names them.
      const handsOut = typeof record.download_id === 'string' || typeof record.resource_uri === 'string';
      if (handsOut && typeof record.sha256 === 'string' && typeof record.size_bytes === 'number')
        found.push(record as unknown as Descriptor);
      for (const member of Object.values(record)) visit(member);
    }
  };
  visit(result.structuredContent);
  return found;
}

async function bytesBehind(client: Client, descriptor: Descriptor): Promise<Buffer> {
  if (descriptor.download_url) {
    const response = await fetch(descriptor.download_url);
    expect(response.status).toBe(200);
    return Buffer.from(await response.arrayBuffer());
  }
  const read = await client.readResource({ uri: descriptor.resource_uri as string });
  const [content] = read.contents as { blob?: string; text?: string }[];
  return content?.blob !== undefined
    ? Buffer.from(content.blob, 'base64')
    : Buffer.from(content?.text ?? '', 'utf8');
}

const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'return-modes-property-'));
  folders.push(dir);
  return dir;
}

let stdio: Client;
let http: Client;
let proxy: Running;

beforeAll(async () => {
  const flags = ['--dialect', 'prov-v0.1', '--timeout', '10000'];
  stdio = new Client({ name: 'return-modes-property', version: '1.0.0' });
  await stdio.connect(
    new StdioClientTransport({
      command: NODE,
      args: [BIN, 'proxy', ...flags, '--artifacts', folder(), '--', NODE, HOSTILE],
      stderr: 'pipe',
    }),
  );
  proxy = await startListening([
    BIN,
    'proxy',
    '--http',
    '127.0.0.1:0',
    ...flags,
    '--artifacts',
    folder(),
    '--',
    NODE,
    HOSTILE,
  ]);
  http = new Client({ name: 'return-modes-property', version: '1.0.0' });
  await http.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
}, 60_000);

afterAll(async () => {
  await stdio?.close();
  await http?.close();
  await proxy?.stop();
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

describe('files in results, whatever return mode is asked', () => {
  it('reach the caller whole: inline, or behind a link or resource with their sha256', async () => {
    await fc.assert(
      fc.asyncProperty(generated, async ({ files, caption, mode, name }) => {
        const content = [
          ...(caption === undefined ? [] : [{ type: 'text', text: caption }]),
          ...files.map((file) => block(file, name)),
        ];
        for (const client of [stdio, http]) {
          const result = (await client.callTool({
            name: 'replay',
            arguments: { result: { content } },
            _meta: { return_mode: mode },
          })) as CallToolResult;
          const answer = JSON.stringify(result);
          expect(result.isError, answer.slice(0, 400)).toBeFalsy();
          const descriptors = descriptorsIn(result);
          for (const file of files) {
            const inline = file.bytes.length > 0 && answer.includes(file.bytes.toString('base64'));
            if (mode === 'base64' || mode === 'base64_docx') {
              expect(descriptors, answer.slice(0, 400)).toEqual([]);
              if (file.bytes.length > 0) expect(inline, answer.slice(0, 400)).toBe(true);
              continue;
            }
            const descriptor = descriptors.find((found) => found.sha256 === sha256(file.bytes));
            expect(descriptor, answer.slice(0, 400)).toBeDefined();
            const back = await bytesBehind(client, descriptor as Descriptor);
            expect(back.equals(file.bytes)).toBe(true);
          }
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
