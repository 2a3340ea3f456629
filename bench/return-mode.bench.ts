import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
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
 * hashed, written and synced, a grant row and a signed id). The cases run
 * interleaved, call by call, so load from other processes falls on both.
 * Target: `url` adds under 1 ms at p50.
 */

const CALLS = 300;
const WARMUP = 30;
const BLOB_BYTES = 1024 * 1024;
/** Distinct blobs, so the store writes each anew rather than finding it stored. */
const POOL = 16;

const dir = mkdtempSync(join(tmpdir(), 'return-mode-bench-'));
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
function call(mode: 'base64' | 'url'): Promise<unknown> {
  const data = blobs[turn++ % POOL] as string;
  const invoke: ToolCall['invoke'] = async () => ({
    content: [{ type: 'image', data, mimeType: 'image/png' }],
  });
  return pipeline.callTool({ tool, arguments: {}, meta: { return_mode: mode }, invoke });
}

async function timed(mode: 'base64' | 'url'): Promise<number> {
  const started = performance.now();
  await call(mode);
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
  const difference = urlP50 - inlineP50;
  console.log(
    `url - inline at p50: ${difference.toFixed(3)} ms (ratio ${(urlP50 / inlineP50).toFixed(2)}x); ` +
      `target under 1 ms: ${difference < 1 ? 'met' : 'NOT met'}`,
  );
} finally {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
}
