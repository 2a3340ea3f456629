import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = fileURLToPath(new URL('../../bin/mcp-envelope', import.meta.url));
export const FIXTURE = fileURLToPath(new URL('../fixtures/servers/everything.ts', import.meta.url));
export const NODE = process.execPath;

export interface Running {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  stop(): Promise<void>;
}

/**
 * An SDK client's transport to `mcp-envelope gateway --config CONFIG` over stdio, from the build,
 * with `args` after the config; its stderr ignored unless asked for.
 */
export function gatewayStdio(
  config: string,
  options: {
    args?: readonly string[];
    stderr?: 'ignore' | 'pipe' | 'inherit';
    env?: Record<string, string>;
  } = {},
): StdioClientTransport {
  return new StdioClientTransport({
    command: NODE,
    args: [BIN, 'gateway', '--config', config, ...(options.args ?? [])],
    cwd: ROOT,
    stderr: options.stderr ?? 'ignore',
    ...(options.env ? { env: options.env } : {}),
  });
}

/** Starts a process that prints `listening on URL` on stderr and waits (bounded) for that line. */
export function startListening(args: readonly string[], timeoutMs = 15_000): Promise<Running> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no listening line within ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      err += text;
      const match = /listening on (http:\/\/\S+)/.exec(err);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({
          child,
          url: match[1],
          stderr: () => err,
          stop: () => stopChild(child),
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening: ${err}`));
    });
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(hard);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** `bin/mcp-envelope proxy [flags] -- node fixture` over HTTP on an ephemeral port. */
export function startProxyHttp(flags: readonly string[] = []): Promise<Running> {
  return startListening([BIN, 'proxy', '--http', '127.0.0.1:0', ...flags, '--', NODE, FIXTURE]);
}

/** A 2025-era initialize request, as a client without the SDK writes it. */
export function initializeMessage(id = 1, clientName = 'raw', protocolVersion = '2025-06-18') {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: clientName, version: '1' } },
  };
}

/** A raw 2025-era initialize POST. */
export function postInitialize(url: string, clientName = 'raw'): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(initializeMessage(1, clientName)),
  });
}
