/**
 * Downloads: one 100 MB artifact fetched through `/api/download` of a real
 * gateway process (`mcp-envelope gateway --config FILE`, built dist/), next to
 * the same file served by nginx (sendfile on) from a generated configuration,
 * both on 127.0.0.1. Each is fetched N times in sequence with Node's fetch,
 * the body read whole; reported: MB/s of each, the ratio (ours / nginx,
 * target ≥ 0.8), and how much the gateway's peak RSS grew during its
 * downloads (target < 20 MB). Without /usr/sbin/nginx the peer is skipped.
 * Run: npm run build && node bench/download.bench.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  benchStore,
  cpuMs,
  freePort,
  grantBenchFile,
  memoryOf,
  NGINX,
  startNginx,
  waitForLine,
} from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const NODE = process.execPath;
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));
const UPSTREAM = fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url));
const SIZE_MB = 100;
const SIZE = SIZE_MB * 1024 * 1024;
const ROUNDS = 8;

const children: ChildProcess[] = [];
const work = mkdtempSync(join(tmpdir(), 'download-bench-'));

function cleanUp(): void {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}

/** VmHWM (peak resident memory) of a process, in bytes. */
function peakRss(pid: number): number | undefined {
  return memoryOf(pid, 'VmHWM');
}

/** Fetches `url` once, reading the body whole; the seconds it took. */
async function fetchWhole(url: string): Promise<number> {
  const started = process.hrtime.bigint();
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  let received = 0;
  for await (const chunk of response.body as ReadableStream<Uint8Array>) received += chunk.length;
  if (received !== SIZE) throw new Error(`${url} sent ${received} of ${SIZE} bytes`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** MB/s of `seconds` spent on whole downloads. */
function rate(seconds: number[]): number {
  return (SIZE * seconds.length) / (1024 * 1024) / seconds.reduce((sum, value) => sum + value, 0);
}

async function startGateway(): Promise<{ child: ChildProcess; origin: string; dir: string }> {
  const dir = join(work, 'gateway');
  mkdirSync(dir);
  const config = join(dir, 'gateway.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: [{ name: 'everything', stdio: { command: 'node', args: [UPSTREAM] } }],
      listen: { stdio: false, http: { port: await freePort() } },
      logs: { enabled: false },
    }),
  );
  const child = spawn(NODE, [GATEWAY, 'gateway', '--config', config], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const [, url] = await waitForLine(child, /^Streamable HTTP: (http:\/\/\S+)$/m, 'the gateway');
  return { child, origin: new URL(url as string).origin, dir };
}

try {
  const gateway = await startGateway();
  // Stored as a producer in another process would: through the gateway's folder and ledger file.
  const store = benchStore(gateway.dir);
  const info = await grantBenchFile(store, SIZE_MB, 'big.bin');
  const { downloadId } = info;
  await store.close();
  const ours = `${gateway.origin}/api/download?id=${downloadId}`;

  let nginx: string | undefined;
  if (existsSync(NGINX)) {
    const site = join(work, 'site');
    mkdirSync(site);
    // The very file the gateway serves, under a name nginx can map.
    linkSync(
      join(gateway.dir, 'data', 'artifacts', 'blobs', info.digest.slice(0, 2), info.digest),
      join(site, 'big.bin'),
    );
    const server = await startNginx(site, work);
    children.push(server.child);
    nginx = `http://127.0.0.1:${server.port}/big.bin`;
    await fetchWhole(nginx); // warm-up
  }
  await fetchWhole(ours); // warm-up
  const pid = gateway.child.pid as number;
  const before = peakRss(pid);
  const cpuBefore = cpuMs(pid);
  // Alternated, so load from elsewhere on the machine weighs on both alike.
  const oursSeconds: number[] = [];
  const nginxSeconds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    oursSeconds.push(await fetchWhole(ours));
    if (nginx) nginxSeconds.push(await fetchWhole(nginx));
  }
  const after = peakRss(pid);
  const cpuAfter = cpuMs(pid);
  const oursMBs = rate(oursSeconds);
  process.stdout.write(
    `/api/download (gateway process): ${oursMBs.toFixed(0)} MB/s over ${ROUNDS} × ${SIZE_MB} MB\n`,
  );
  if (cpuBefore !== undefined && cpuAfter !== undefined) {
    const perGb = ((cpuAfter - cpuBefore) / 1000 / (ROUNDS * SIZE_MB)) * 1024;
    process.stdout.write(
      `gateway CPU: ${perGb.toFixed(2)} s per GB served (user + system; load elsewhere does not inflate it)\n`,
    );
  }
  if (nginx) {
    const nginxMBs = rate(nginxSeconds);
    process.stdout.write(
      `nginx (sendfile on):             ${nginxMBs.toFixed(0)} MB/s over ${ROUNDS} × ${SIZE_MB} MB\n`,
    );
    process.stdout.write(`ratio ours / nginx: ${(oursMBs / nginxMBs).toFixed(2)} (target ≥ 0.8)\n`);
  } else {
    process.stdout.write(`nginx: peer missing (${NGINX} not found), skipped\n`);
  }
  if (before !== undefined && after !== undefined) {
    const growth = (after - before) / (1024 * 1024);
    process.stdout.write(
      `gateway peak RSS: ${(before / 1048576).toFixed(1)} MB before, ${(after / 1048576).toFixed(1)} MB after: grew ${growth.toFixed(1)} MB (target < 20 MB)\n`,
    );
  } else {
    process.stdout.write('gateway peak RSS: not measured (no /proc)\n');
  }
} finally {
  cleanUp();
}
