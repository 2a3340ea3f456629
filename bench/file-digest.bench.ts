import { spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { digestFile } from '../src/canonical/digest.ts';

/**
 * File digest throughput: src/canonical digestFile (sha256) against the
 * coreutils `sha256sum` on a 1 GiB temporary file, measured in the same run,
 * best of three each, alternating so the page cache favours neither. Peak RSS is
 * sampled while digesting a 64 MiB and the 1 GiB file: it must not grow with
 * the file.
 */

const GIB = 1024 * 1024 * 1024;
const SMALL = 64 * 1024 * 1024;
const dir = tmpdir();
const big = join(dir, `mcp-envelope-bench-${process.pid}-1g.bin`);
const small = join(dir, `mcp-envelope-bench-${process.pid}-64m.bin`);

async function writeFileOfSize(path: string, size: number): Promise<void> {
  const block = randomFillSync(Buffer.allocUnsafe(16 * 1024 * 1024));
  const handle = await open(path, 'w');
  try {
    for (let written = 0; written < size; written += block.length) {
      block.writeUInt32LE(written >>> 0, 0); // no two blocks alike
      await handle.write(block, 0, Math.min(block.length, size - written));
    }
  } finally {
    await handle.close();
  }
}

/** Digests a file while sampling RSS; returns the hex, seconds and the RSS growth over the run. */
async function oursOn(path: string): Promise<{ hex: string; seconds: number; rssGrowth: number }> {
  global.gc?.();
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  const start = performance.now();
  const digest = await digestFile(path, 'sha256');
  const seconds = (performance.now() - start) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  return { hex: digest.value, seconds, rssGrowth: peak - baseline };
}

function peerOn(path: string): { hex: string; seconds: number; maxRssKb: number | undefined } {
  const start = performance.now();
  const run = spawnSync('/usr/bin/time', ['-f', '%M', 'sha256sum', path], { encoding: 'utf8' });
  const seconds = (performance.now() - start) / 1000;
  if (run.status !== 0) throw new Error(`sha256sum failed: ${run.stderr}`);
  const maxRssKb = Number(run.stderr.trim().split('\n').at(-1));
  return {
    hex: run.stdout.split(/\s/)[0] as string,
    seconds,
    maxRssKb: Number.isFinite(maxRssKb) ? maxRssKb : undefined,
  };
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);

try {
  await writeFileOfSize(small, SMALL);
  await writeFileOfSize(big, GIB);
  const smallRun = await oursOn(small);
  let bestOurs = Number.POSITIVE_INFINITY;
  let bestPeer = Number.POSITIVE_INFINITY;
  let bigGrowth = 0;
  let peerRss: number | undefined;
  for (let round = 0; round < 3; round++) {
    const peer = peerOn(big);
    const ours = await oursOn(big);
    if (peer.hex !== ours.hex) throw new Error(`digests differ: ${ours.hex} vs ${peer.hex}`);
    bestPeer = Math.min(bestPeer, peer.seconds);
    bestOurs = Math.min(bestOurs, ours.seconds);
    bigGrowth = Math.max(bigGrowth, ours.rssGrowth);
    peerRss = peer.maxRssKb;
  }
  const ours = GIB / 1e6 / bestOurs;
  const peer = GIB / 1e6 / bestPeer;
  console.log('file digest, sha256 of a 1 GiB file: digestFile vs sha256sum (best of 3)');
  console.log(
    `digestFile ${ours.toFixed(0)} MB/s  sha256sum ${peer.toFixed(0)} MB/s  ratio ${(ours / peer).toFixed(2)}x throughput (identical digests)`,
  );
  console.log(
    `peak RSS growth while digesting: 64 MiB file +${mb(smallRun.rssGrowth)} MB, 1 GiB file +${mb(bigGrowth)} MB` +
      ` (process RSS ${mb(process.memoryUsage.rss())} MB; sha256sum max RSS ${peerRss === undefined ? 'n/a' : `${(peerRss / 1000).toFixed(1)} MB`})`,
  );
  const grows = bigGrowth > smallRun.rssGrowth + 32 * 1024 * 1024;
  console.log(grows ? 'memory GROWS with the file size' : 'memory does not grow with the file size');
} finally {
  await rm(big, { force: true });
  await rm(small, { force: true });
}
