/**
 * Stalled peers against a real gateway process (`mcp-envelope gateway`, built
 * dist/): resident memory (VmRSS) before and after each case, next to nginx's
 * for the download case when /usr/sbin/nginx exists (else said and skipped).
 * 1. 1,500 download readers that read the response head and then nothing
 *    (a 32 MiB artifact); the gateway caps downloads per address and cuts
 *    those that stop reading after 30 s.
 * 2. 300 POST bodies stalled one byte short of their Content-Length; cut
 *    after the 30 s request read timeout.
 * Every connection is made once and closed at the end; nothing waits on a
 * clock but the settling pause before each reading.
 * Run: npm run build && node bench/stalled-peers.bench.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { FolderArtifactStore } from '../src/artifacts/folder-store.ts';
import { freePort, memoryOf, NGINX, startNginx, waitForLine } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));
const UPSTREAM = fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url));
const READERS = 1500;
const BODIES = 300;
const SIZE_MB = 32;

const children: ChildProcess[] = [];
const sockets: Socket[] = [];
const work = mkdtempSync(join(tmpdir(), 'stalled-bench-'));

const mib = (bytes: number | undefined) =>
  bytes === undefined ? '?' : `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
/** Lets the peer take in what it was sent before its memory is read (a settling pause, not a measure). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1500));

/** A GET that takes the first bytes of the answer (or its refusal) and then reads nothing. */
function stalledReader(port: number, path: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`),
    );
    sockets.push(socket);
    socket.once('data', () => {
      socket.pause();
      resolve();
    });
    socket.once('error', () => resolve());
    socket.once('close', () => resolve());
  });
}

/** A POST whose body stops one byte short. */
function stalledBody(port: number): Promise<void> {
  return new Promise((resolve) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      params: { pad: 'x'.repeat(64 * 1024) },
    });
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length + 1}\r\n\r\n${body}`,
        () => resolve(),
      );
    });
    sockets.push(socket);
    socket.once('error', () => resolve());
  });
}

async function startGateway(): Promise<{ child: ChildProcess; port: number; dir: string }> {
  const dir = join(work, 'gateway');
  mkdirSync(dir);
  const config = join(dir, 'gateway.config.json');
  const port = await freePort();
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: [{ name: 'everything', stdio: { command: 'node', args: [UPSTREAM] } }],
      listen: { stdio: false, http: { port } },
      logs: { enabled: false },
    }),
  );
  const child = spawn(process.execPath, [GATEWAY, 'gateway', '--config', config], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  await waitForLine(child, /^Streamable HTTP: (http:\/\/\S+)$/m, 'the gateway');
  return { child, port, dir };
}

try {
  const gateway = await startGateway();
  const store = FolderArtifactStore.open({
    dir: join(gateway.dir, 'data', 'artifacts'),
    databasePath: join(gateway.dir, 'data', 'ledger.sqlite'),
  });
  const chunk = randomBytes(1024 * 1024);
  const info = await store.put(Readable.from(Array.from({ length: SIZE_MB }, () => chunk)), {
    mediaType: 'application/octet-stream',
    owner: 'bench',
    ttlMs: 3_600_000,
  });
  const { downloadId } = await store.createGrant({
    digest: info.digest,
    filename: 'big.bin',
    mediaType: 'application/octet-stream',
    owner: 'bench',
    ttlMs: 3_600_000,
  });
  await store.close();
  const pid = gateway.child.pid as number;

  const idle = memoryOf(pid, 'VmRSS');
  await Promise.all(
    Array.from({ length: READERS }, () => stalledReader(gateway.port, `/api/download?id=${downloadId}`)),
  );
  await settle();
  const readers = memoryOf(pid, 'VmRSS');
  console.log(
    `${READERS} stalled download readers (${SIZE_MB} MiB file): gateway RSS ${mib(idle)} -> ${mib(readers)}`,
  );
  if (existsSync(NGINX)) {
    const site = join(work, 'site');
    mkdirSync(site);
    linkSync(
      join(gateway.dir, 'data', 'artifacts', 'blobs', info.digest.slice(0, 2), info.digest),
      join(site, 'big.bin'),
    );
    const nginx = await startNginx(site, work);
    children.push(nginx.child);
    const nginxPid = nginx.child.pid as number;
    const nginxIdle = memoryOf(nginxPid, 'VmRSS');
    await Promise.all(Array.from({ length: READERS }, () => stalledReader(nginx.port, '/big.bin')));
    await settle();
    console.log(`  nginx, the same readers: RSS ${mib(nginxIdle)} -> ${mib(memoryOf(nginxPid, 'VmRSS'))}`);
  } else {
    console.log(`  nginx: not installed (${NGINX}), peer skipped`);
  }
  for (const socket of sockets.splice(0)) socket.destroy();

  const beforeBodies = memoryOf(pid, 'VmRSS');
  await Promise.all(Array.from({ length: BODIES }, () => stalledBody(gateway.port)));
  await settle();
  console.log(
    `${BODIES} POST bodies stalled one byte short (64 KiB each): gateway RSS ${mib(beforeBodies)} -> ${mib(memoryOf(pid, 'VmRSS'))}`,
  );
  console.log(`gateway peak RSS over the run: ${mib(memoryOf(pid, 'VmHWM'))}`);
} finally {
  for (const socket of sockets) socket.destroy();
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
