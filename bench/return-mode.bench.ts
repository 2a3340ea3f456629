import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openArtifactService } from '../src/artifacts/service.ts';
import { artifactSink } from '../src/gateway/artifacts/sink.ts';
import { createPipeline, type ToolCall } from '../src/mcp/index.ts';
import { quantile } from './support.ts';

/**
 * What return mode `url` costs over leaving a file inline: p50 of a
 * tools/call through the enforcement pipeline (prov-v0.1, in process) whose
 * result carries a 1 MB image, returned inline (`base64`) and stored in the
 * gateway's artifact store behind a download link (`url`: base64 decoded,
 * hashed, written, a row and a grant and a signed id). The cases run
 * interleaved, call by call, so load from other processes falls on both.
 * Target: `url` adds under 1 ms at p50.
 */

const CALLS = 300;
const WARMUP = 30;
const BLOB_BYTES = 1024 * 1024;
/** Random blobs, each made distinct per call (freshBlob), so the store writes every one anew. */
const POOL = 16;

/** The store's disk: the system's temporary folder, or RETURN_MODE_BENCH_DIR (a tmpfs shows the cost without the disk). */
const dir = mkdtempSync(join(process.env.RETURN_MODE_BENCH_DIR ?? tmpdir(), 'return-mode-bench-'));
const service = openArtifactService({
  dir,
  ttlMs: 3_600_000,
  maxBytes: 16 * BLOB_BYTES,
  inlineMaxBytes: BLOB_BYTES,
  defaultReturnMode: 'url',
  downloadPath: '/api/download',
  publicUrl: 'http://127.0.0.1:8787',
  sweepIntervalMs: 0,
});
const pipeline = createPipeline({ artifacts: artifactSink(service) });
const blobs = Array.from({ length: POOL }, () => randomBytes(BLOB_BYTES).toString('base64'));
const tool = { name: 'chart', inputSchema: { type: 'object' } };

let turn = 0;
/** A blob no call returned before: its first 8 base64 characters (6 bytes) count the calls. */
function freshBlob(): string {
  turn += 1;
  const base = blobs[turn % POOL] as string;
  return Buffer.from(turn.toString(16).padStart(12, '0'), 'hex').toString('base64') + base.slice(8);
}

async function timed(mode: 'base64' | 'url'): Promise<number> {
  const data = freshBlob();
  const invoke: ToolCall['invoke'] = async () => ({
    content: [{ type: 'image', data, mimeType: 'image/png' }],
  });
  const started = performance.now();
  await pipeline.callTool({ tool, arguments: {}, meta: { return_mode: mode }, invoke });
  return performance.now() - started;
}

try {
  for (let i = 0; i < WARMUP; i++) {
    await timed('base64');
    await timed('url');
  }
  const inline: number[] = [];
  const url: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    inline.push(await timed('base64'));
    url.push(await timed('url'));
  }
  inline.sort((a, b) => a - b);
  url.sort((a, b) => a - b);
  const [inlineP50, urlP50] = [quantile(inline, 0.5), quantile(url, 0.5)];
  const [inlineP90, urlP90] = [quantile(inline, 0.9), quantile(url, 0.9)];
  console.log(`1 MB image, ${CALLS} calls each, interleaved`);
  console.log(`inline (base64): p50 ${inlineP50.toFixed(3)} ms, p90 ${inlineP90.toFixed(3)} ms`);
  console.log(`url (stored):    p50 ${urlP50.toFixed(3)} ms, p90 ${urlP90.toFixed(3)} ms`);
  // The floor under url: writing 1 MB to a new file on the same disk, nothing else.
  const floor: number[] = [];
  const bytes = Buffer.from(blobs[0] as string, 'base64');
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    const file = await open(join(dir, `floor-${i}`), 'wx');
    await file.write(bytes);
    await file.close();
    floor.push(performance.now() - started);
  }
  floor.sort((a, b) => a - b);
  console.log(
    `peer: a new 1 MB file written on the same disk (${dir}): p50 ${quantile(floor, 0.5).toFixed(3)} ms`,
  );
  const difference = urlP50 - inlineP50;
  console.log(
    `url - inline at p50: ${difference.toFixed(3)} ms (ratio ${(urlP50 / inlineP50).toFixed(2)}x); ` +
      `target under 1 ms: ${difference < 1 ? 'met' : 'NOT met'}`,
  );
} finally {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
}
