import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.ts';

/** The real launcher, run as a child process exactly as users run it (it runs the built dist/). */
export const BIN = fileURLToPath(new URL('../../bin/mcp-envelope', import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
  /** stdout and stderr as one terminal shows them, in the order written (in-process runs only). */
  output?: string;
}

export interface CliOptions {
  /** Bytes for standard input; stdin is closed empty when not given. */
  input?: string | Uint8Array;
  cwd?: string;
  /** Added to the environment the CLI runs with. */
  env?: NodeJS.ProcessEnv;
  /** The child is killed after this long, so a hang fails the test instead of stalling it (runBin only). */
  timeoutMs?: number;
}

/**
 * The CLI in-process: `main` from the TypeScript sources, so a test sees the
 * code as edited, without a build and without a process per command.
 */
export async function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const both: string[] = [];
  const code = await main(args, {
    stdout: (text) => {
      out.push(text);
      both.push(text);
    },
    stderr: (text) => {
      err.push(text);
      both.push(text);
    },
    stdin: options.input ?? '',
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    cwd: options.cwd ?? REPO_ROOT,
  });
  const stdoutBytes = Buffer.from(out.join(''), 'utf8');
  return {
    code,
    signal: null,
    stdout: out.join(''),
    stderr: err.join(''),
    stdoutBytes,
    output: both.join(''),
  };
}

/** bin/mcp-envelope as a child process: for what only a real process shows (exit status, pipes, launcher). */
export function runBin(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', ...options.env },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      resolve({
        code,
        signal,
        stdout: stdoutBytes.toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        stdoutBytes,
      });
    });
    // The child may exit before reading all of stdin (a usage error, say).
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
  });
}

/** The one-line error the CLI prints: `error[CODE]: message`, and never a stack trace. */
export function errorCode(run: CliRun): string | undefined {
  return /^error\[([^\]]+)\]: /m.exec(run.stderr)?.[1];
}

export function hasStackTrace(text: string): boolean {
  return /\n\s+at .+[:(]\d+/.test(text);
}

export interface TempDir {
  path: string;
  /** Writes a file (objects as JSON), creating folders on the way; returns its path. */
  file(name: string, content: string | Uint8Array | object): Promise<string>;
  remove(): Promise<void>;
}

export async function tempDir(prefix = 'mcp-envelope-cli-'): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return {
    path,
    async file(name, content) {
      const target = join(path, name);
      const data =
        typeof content === 'string' || content instanceof Uint8Array
          ? content
          : JSON.stringify(content, null, 2);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, data);
      return target;
    },
    remove: () => rm(path, { recursive: true, force: true }),
  };
}
