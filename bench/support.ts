/** Helpers the benches share. */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { FolderArtifactStore } from '../src/artifacts/folder-store.ts';

/** The q-quantile of ascending `sorted` (nearest rank). */
export function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** A loopback port nobody listens on now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves with the first match of `pattern` in what the child writes on stderr. */
export function waitForLine(child: ChildProcess, pattern: RegExp, what: string): Promise<RegExpExecArray> {
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${text}`)), 30_000);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      text += chunk;
      const match = pattern.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${text}`));
    });
  });
}

/** A memory figure of a process from /proc/<pid>/status, in bytes: VmHWM (peak) or VmRSS (now). */
export function memoryOf(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    );
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Where nginx is looked for; a bench without it says so and skips its peer. */
export const NGINX = '/usr/sbin/nginx';

/**
 * nginx serving `site` on a free loopback port (sendfile on, no access log),
 * its files under `work`, answering before this resolves. The caller kills `child`.
 */
export async function startNginx(site: string, work: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const temp = join(work, 'nginx');
  mkdirSync(temp);
  const conf = join(temp, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
master_process off;
worker_processes 1;
error_log ${temp}/err.log;
pid ${temp}/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  client_body_temp_path ${temp}/body;
  proxy_temp_path ${temp}/proxy;
  fastcgi_temp_path ${temp}/fastcgi;
  server { listen 127.0.0.1:${port}; root ${site}; }
}
`,
  );
  const child = spawn(NGINX, ['-c', conf, '-p', temp], { stdio: ['ignore', 'ignore', 'pipe'] });
  // nginx says nothing when it is up: wait until it answers.
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null)
      throw new Error(`nginx exited with ${child.exitCode}: ${readFileSync(`${temp}/err.log`, 'utf8')}`);
    try {
      await (await fetch(`http://127.0.0.1:${port}/`, { method: 'HEAD' })).arrayBuffer();
      return { child, port };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  child.kill('SIGKILL');
  throw new Error('nginx did not answer');
}

/**
 * Puts `sizeMb` MiB of random bytes in a gateway's artifact store (its folder
 * and ledger file under `gatewayDir/data`, as a producer in another process
 * would) and grants them for an hour: the file a download bench serves.
 */
export async function grantBenchFile(
  store: FolderArtifactStore,
  sizeMb: number,
  filename: string,
): Promise<{ digest: string; downloadId: string }> {
  const chunk = randomBytes(1024 * 1024);
  const common = { mediaType: 'application/octet-stream', owner: 'bench', ttlMs: 3_600_000 };
  const info = await store.put(Readable.from(Array.from({ length: sizeMb }, () => chunk)), common);
  const { downloadId } = await store.createGrant({ digest: info.digest, filename, ...common });
  return { digest: info.digest, downloadId };
}

/** The artifact store of a gateway started by a bench in `gatewayDir`. */
export function benchStore(gatewayDir: string): FolderArtifactStore {
  return FolderArtifactStore.open({
    dir: join(gatewayDir, 'data', 'artifacts'),
    databasePath: join(gatewayDir, 'data', 'ledger.sqlite'),
  });
}

/** Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times. */
const TICKS_PER_SECOND = 100;

/**
 * The CPU time (user + system) a process has used so far, in milliseconds, from
 * /proc/<pid>/stat (Linux); with `thread`, that one thread's, from
 * /proc/<pid>/task/<thread>/stat (a process's main thread has its pid as its
 * id). Undefined where it cannot be read.
 */
export function cpuMs(pid: number, thread?: number): number | undefined {
  try {
    const stat = readFileSync(
      thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`,
      'utf8',
    );
    // The command is parenthesized and may hold spaces: utime and stime are the 12th and 13th fields after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The process and all its descendants, from the parent ids in /proc. */
export function processTree(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const siblings = children.get(parent) ?? [];
      siblings.push(Number(entry));
      children.set(parent, siblings);
    } catch {
      // It exited while we looked.
    }
  }
  const tree: number[] = [];
  const queue = [rootPid];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    tree.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return tree;
}

/** Calls/s of `total` calls of `call`, `inFlight` at a time. */
export async function callsPerSecond(
  call: () => Promise<void>,
  total: number,
  inFlight: number,
): Promise<number> {
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (issued < total) {
        issued++;
        await call();
      }
    }),
  );
  return total / ((performance.now() - started) / 1000);
}
