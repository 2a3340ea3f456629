import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, NODE, ROOT, type Running, stopChild } from './processes.ts';

export const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

export interface GatewayDir {
  dir: string;
  config: string;
  ledger: string;
  logs: string;
}

const created: string[] = [];

/** Removes every folder gatewayDir made in this test file (call once the gateways have stopped). */
export function removeGatewayDirs(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * A copy of examples/gateway.config.json that works from any folder: the
 * upstreams run in the repository's examples/, ledger and logs go to a fresh
 * temp dir. `edit` adjusts the configuration before it is written.
 */
export function gatewayDir(edit?: (config: Record<string, unknown>) => void): GatewayDir {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-envelope-gateway-'));
  created.push(dir);
  const config = JSON.parse(readFileSync(join(EXAMPLES, 'gateway.config.json'), 'utf8')) as {
    $schema?: string;
    upstreams: { stdio: { cwd: string } }[];
    ledger: { path: string };
    logs: { dir: string };
  };
  delete config.$schema;
  for (const upstream of config.upstreams) upstream.stdio.cwd = EXAMPLES;
  const paths = { ledger: join(dir, 'ledger.sqlite'), logs: join(dir, 'runs') };
  config.ledger.path = paths.ledger;
  config.logs.dir = paths.logs;
  edit?.(config as unknown as Record<string, unknown>);
  const file = join(dir, 'gateway.config.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { dir, config: file, ...paths };
}

/** `bin/mcp-envelope gateway` over HTTP on an ephemeral port; resolves on the printed URL line. */
export function startGatewayHttp(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 20_000,
): Promise<Running> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [BIN, 'gateway', '--http', '127.0.0.1:0', ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no URL line within ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      err += text;
      const match = /^Streamable HTTP: (http:\/\/\S+)$/m.exec(err);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: match[1], stderr: () => err, stop: () => stopChild(child) });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening: ${err}`));
    });
  });
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion (bounded). */
export function runCli(args: readonly string[], timeoutMs = 20_000): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(NODE, [BIN, ...args], { cwd: ROOT, timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
