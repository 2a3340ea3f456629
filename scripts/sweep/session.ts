/**
 * One MCP client session of the sweep: straight to the upstream over stdio,
 * or to the project's proxy (`bin/mcp-envelope proxy`) over stdio or
 * Streamable HTTP, with the official SDK client. The client declares
 * sampling, elicitation and roots (some servers register tools only then) and
 * answers those requests with fixed, harmless values. Calls go out as plain
 * `tools/call` requests and the answer is read off the wire, before the SDK's
 * own checks (output-schema validation would otherwise turn a gateway's
 * answer into a client-side exception and hide it).
 *
 * The client speaks one of two eras: `2025-11-25` (the SDK's default, the
 * 2025 `initialize` handshake everywhere) or `2026-07-28` (pinned to that
 * revision through the gateway; `auto` negotiation straight to the upstream,
 * so that a server that speaks only the 2025 revision is still reached).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  Client,
  StreamableHTTPClientTransport,
  type Tool,
  type VersionNegotiationOptions,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { SAFE_ENVIRONMENT } from '../../src/gateway/upstreams/child-transport.ts';
import { minimalValue } from './arguments.ts';
import type { Outcome } from './classify.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The gateway's CLI: this repository's (running its dist/), or another build named by $SWEEP_GATEWAY_BIN. */
export const BIN =
  process.env.SWEEP_GATEWAY_BIN || fileURLToPath(new URL('../../bin/mcp-envelope', import.meta.url));
export const NODE = process.execPath;

/** The gateway's dialects, passthrough first (the others' tools/list sizes are relative to it). */
export const MODES = ['passthrough', 'prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'] as const;
export type Mode = (typeof MODES)[number];
export const TRANSPORTS = ['stdio', 'http'] as const;
export type Transport = (typeof TRANSPORTS)[number];
/** The protocol eras the sweep's client speaks, the default first. */
export const CLIENT_ERAS = ['2025-11-25', '2026-07-28'] as const;
export type ClientEra = (typeof CLIENT_ERAS)[number];

/** What an upstream inherits, as the gateway's proxy gives it: the same safe base. */
const SAFE_NAMES: readonly string[] = SAFE_ENVIRONMENT.posix;

export function baseEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || value.startsWith('()')) continue;
    if (SAFE_NAMES.includes(name) || name.startsWith('LC_')) env[name] = value;
  }
  return { ...env, ...extra };
}

export interface Upstream {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

export type Target = { kind: 'direct' } | { kind: 'gateway'; mode: Mode; transport: Transport };

export interface SessionOptions {
  upstream: Upstream;
  target: Target;
  /** The folder handed out as the client's one root. */
  root: string;
  timeoutMs: number;
  name: string;
  era: ClientEra;
}

export interface Session {
  tools: Tool[];
  /** The protocol revision the client negotiated (with the upstream, or with the gateway). */
  protocol: string | undefined;
  call(name: string, args: Record<string, unknown>): Promise<Outcome>;
  close(): Promise<void>;
  /** The last lines the server (or proxy) wrote on stderr. */
  stderr(): string;
}

const STDERR_KEEP = 16 * 1024;

function keepTail(into: { text: string }, chunk: string): void {
  into.text = (into.text + chunk).slice(-STDERR_KEEP);
}

function stopChild(child: ChildProcess): Promise<void> {
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

/** The proxy's command line for one mode, the upstream after `--`, its variables as `--env`. */
export function proxyArgs(upstream: Upstream, mode: Mode, http: boolean, name: string): string[] {
  const env = Object.entries(upstream.env).flatMap(([key, value]) => ['--env', `${key}=${value}`]);
  return [
    BIN,
    'proxy',
    '--dialect',
    mode,
    '--name',
    name,
    ...(http ? ['--http', '127.0.0.1:0'] : []),
    ...env,
    '--',
    upstream.command,
    ...upstream.args,
  ];
}

/** Starts the proxy on HTTP and waits (bounded) for its `listening on URL` line. */
function startHttpProxy(
  args: string[],
  cwd: string,
  timeoutMs: number,
  log: { text: string },
): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], env: process.env });
    let seen = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`proxy printed no URL within ${timeoutMs} ms: ${seen.slice(-2000)}`));
    }, timeoutMs);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      keepTail(log, text);
      if (seen.length < 64 * 1024) seen += text;
      const match = /listening on (http:\/\/\S+)/.exec(seen);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: match[1] });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`proxy exited with ${code} before listening: ${seen.slice(-2000)}`));
    });
  });
}

/**
 * How the client negotiates: the SDK's default (the 2025 handshake) in the
 * 2025 era; in the 2026 era pinned to 2026-07-28 through the gateway and
 * `auto` straight to the upstream (the newest revision it speaks).
 */
function negotiationOf(era: ClientEra, target: Target): VersionNegotiationOptions | undefined {
  if (era === '2025-11-25') return undefined;
  return target.kind === 'direct' ? { mode: 'auto' } : { mode: { pin: era } };
}

function newClient(root: string, negotiation: VersionNegotiationOptions | undefined): Client {
  const client = new Client(
    { name: 'mcp-envelope-sweep', version: '1.0.0' },
    {
      capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } },
      ...(negotiation ? { versionNegotiation: negotiation } : {}),
    },
  );
  client.setRequestHandler('sampling/createMessage', async () => ({
    role: 'assistant' as const,
    content: { type: 'text' as const, text: 'A fixed answer from the sweep client.' },
    model: 'sweep-fixed',
    stopReason: 'endTurn',
  }));
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params as { requestedSchema?: unknown };
    const content = minimalValue(params.requestedSchema ?? {}, undefined, true);
    return { action: 'accept' as const, content: content as Record<string, string | number | boolean> };
  });
  client.setRequestHandler('roots/list', async () => ({
    roots: [{ uri: pathToFileURL(root).href, name: 'sweep-work' }],
  }));
  return client;
}

/**
 * What `Client.callTool` would throw for this answer, checked as it checks
 * (see its source): the tool's listed outputSchema must compile; a result
 * that is not an error must then carry structuredContent valid against it.
 */
export function sdkRejection(
  tool: Tool | undefined,
  result: Record<string, unknown>,
  provider: AjvJsonSchemaValidator,
): string | undefined {
  if (!tool?.outputSchema) return undefined;
  let validate: ReturnType<AjvJsonSchemaValidator['getValidator']>;
  try {
    validate = provider.getValidator(tool.outputSchema);
  } catch (error) {
    return `invalid outputSchema: ${((error as Error).message ?? String(error)).slice(0, 300)}`;
  }
  if (result.isError === true) return undefined;
  if (result.structuredContent === undefined) return 'an output schema but no structured content';
  const verdict = validate(result.structuredContent);
  return verdict.valid
    ? undefined
    : `structuredContent does not match the outputSchema: ${verdict.errorMessage}`;
}

/** The two members of a transport the sweep listens on (the SDK client has set onmessage by then). */
interface Wiretap {
  send(message: unknown, options?: unknown): Promise<void>;
  onmessage?: (message: unknown, extra?: unknown) => void;
}

type Wire = {
  id?: unknown;
  method?: string;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
};

/** Opens a session, lists the tools (bounded by the timeout). */
export async function openSession(options: SessionOptions): Promise<Session> {
  const { upstream, target, root, timeoutMs } = options;
  const log = { text: '' };
  const client = newClient(root, negotiationOf(options.era, target));
  let child: ChildProcess | undefined;
  let transport: StdioClientTransport | StreamableHTTPClientTransport;

  if (target.kind === 'gateway' && target.transport === 'http') {
    const args = proxyArgs(upstream, target.mode, true, options.name);
    const started = await startHttpProxy(args, upstream.cwd, timeoutMs, log);
    child = started.child;
    transport = new StreamableHTTPClientTransport(new URL(started.url));
  } else {
    const stdio =
      target.kind === 'direct'
        ? { command: upstream.command, args: upstream.args, env: baseEnvironment(upstream.env) }
        : {
            command: NODE,
            args: proxyArgs(upstream, target.mode, false, options.name),
            env: Object.fromEntries(
              Object.entries(process.env).filter(
                (entry): entry is [string, string] => entry[1] !== undefined,
              ),
            ),
          };
    const stdioTransport = new StdioClientTransport({ ...stdio, cwd: upstream.cwd, stderr: 'pipe' });
    stdioTransport.stderr?.on('data', (chunk: Buffer) => keepTail(log, chunk.toString('utf8')));
    transport = stdioTransport;
  }

  // Every answer to a tools/call, as it came off the wire.
  let pending: unknown;
  let answer: Wire | undefined;
  try {
    await client.connect(transport, { timeout: timeoutMs });
  } catch (error) {
    await client.close().catch(() => {});
    if (child) await stopChild(child);
    throw new Error(`connect failed: ${(error as Error).message}; stderr: ${log.text.slice(-1500)}`);
  }
  const tap = transport as unknown as Wiretap;
  const send = tap.send.bind(tap);
  tap.send = (message, sendOptions) => {
    const wire = message as Wire;
    if (wire.method === 'tools/call') pending = wire.id;
    return send(message, sendOptions);
  };
  const receive = tap.onmessage;
  tap.onmessage = (message, extra) => {
    const wire = message as Wire;
    if (wire.method === undefined && wire.id !== undefined && wire.id === pending) answer = wire;
    receive?.(message, extra);
  };

  const close = async () => {
    await client.close().catch(() => {});
    if (child) await stopChild(child);
  };

  let tools: Tool[];
  try {
    tools = (await client.listTools(undefined, { timeout: timeoutMs })).tools;
  } catch (error) {
    await close();
    throw new Error(`tools/list failed: ${(error as Error).message}; stderr: ${log.text.slice(-1500)}`);
  }

  const provider = new AjvJsonSchemaValidator();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  return {
    tools,
    protocol: client.getNegotiatedProtocolVersion(),
    stderr: () => log.text,
    close,
    async call(name, args) {
      pending = undefined;
      answer = undefined;
      let failure: unknown;
      try {
        await client.request(
          { method: 'tools/call', params: { name, arguments: args } },
          { timeout: timeoutMs },
        );
      } catch (error) {
        failure = error;
      }
      const wire = answer as Wire | undefined;
      if (wire?.result !== undefined) {
        const result = wire.result as Record<string, unknown>;
        const rejected = sdkRejection(byName.get(name), result, provider);
        return { kind: 'result', result, ...(rejected === undefined ? {} : { rejected }) };
      }
      if (wire?.error !== undefined) {
        const { code, message, data } = wire.error;
        return { kind: 'error', source: 'jsonrpc', code, message, ...(data === undefined ? {} : { data }) };
      }
      const message = failure instanceof Error ? failure.message : String(failure);
      const code = (failure as { code?: unknown } | undefined)?.code;
      return {
        kind: 'error',
        source: /timed? ?out/i.test(message) ? 'timeout' : 'client',
        code: typeof code === 'number' ? code : null,
        message,
      };
    },
  };
}

/**
 * The newest revision a server speaks: what a client in `auto` negotiation
 * reaches straight over stdio (a `server/discover` probe, the 2025 handshake
 * when the server does not know it), as the gateway's own upstream client does.
 */
export async function upstreamProtocol(upstream: Upstream, root: string, timeoutMs: number): Promise<string> {
  const client = newClient(root, { mode: 'auto' });
  const transport = new StdioClientTransport({
    command: upstream.command,
    args: upstream.args,
    env: baseEnvironment(upstream.env),
    cwd: upstream.cwd,
    stderr: 'ignore',
  });
  try {
    await client.connect(transport, { timeout: timeoutMs });
    return client.getNegotiatedProtocolVersion() ?? 'unknown';
  } finally {
    await client.close().catch(() => {});
  }
}
