import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settingsOf } from '../../scripts/gen-config-docs.ts';
import { signDownloadId } from '../../src/artifacts/download-ids.ts';
import { FolderArtifactStore } from '../../src/artifacts/folder-store.ts';
import { Keyring } from '../../src/artifacts/keyring.ts';
import { DeterministicIds } from '../../src/ids/index.ts';

import { callToolWithRetry } from '../../src/mcp/read-tool-result.ts';
import {
  type AuthServer,
  GATEWAY_CLIENT_ID,
  GATEWAY_CLIENT_SECRET,
  INTROSPECTION_ALIAS,
  startAuthServer,
} from '../support/auth-server.ts';
import { dpopKey, dpopProof } from '../support/dpop.ts';
import { runCli } from './gateway-process.ts';
import {
  BIN,
  gatewayStdio,
  initializeMessage,
  NODE,
  ROOT,
  type Running,
  startListening,
  stopChild,
} from './processes.ts';

/**
 * Every setting of the gateway configuration changes what the gateway does.
 * The schema is the table of settings (scripts/gen-config-docs.ts walks it);
 * each setting has a case here that starts the real gateway
 * (`mcp-envelope gateway --config FILE`) with the setting away from its default
 * and observes the difference against a gateway where it is at its default. A
 * setting without a case fails the first test: a setting nothing reads is a
 * defect. Settings are grouped into a few gateways, started together.
 */

const PROBE = fileURLToPath(new URL('../fixtures/servers/settings-probe.ts', import.meta.url));
const SEED = 'every-setting';
const FREE_TOKEN = 'free-token-0123456789abcdef';
const PRO_TOKEN = 'pro-token-0123456789abcdef';
const A_TOKEN = 'a-token-0123456789abcdef';
const B_TOKEN = 'b-token-0123456789abcdef';
// Every 127/8 address is loopback on Linux; elsewhere the IPv6 one is the other loopback address.
const OTHER_LOOPBACK = process.platform === 'linux' ? '127.0.0.2' : '::1';
/** The end of the banner a gateway writes once it has started. */
const BANNER_END = /MCP client configuration \(stdio\):/;

/** Setting → the test that shows it at work, filled as the tests below are declared. */
const cases = new Map<string, string>();

/** Members of the schema that are not behaviour, and why. */
const NOT_BEHAVIOUR: Record<string, string> = {
  $schema: 'tells editors which schema the file follows; the gateway ignores it by design',
};

/** Declares the test that shows `settings` at work. */
function proves(settings: readonly string[], title: string, body: () => Promise<void>): void {
  for (const setting of settings) {
    if (cases.has(setting)) throw new Error(`setting ${setting} has two behaviour cases`);
    cases.set(setting, title);
  }
  it(title, body);
}

describe('the table of settings', () => {
  it('has a behaviour case for every setting of the schema', () => {
    const settings = settingsOf().map((setting) => setting.path);
    const problems = [
      ...settings
        .filter((path) => !cases.has(path) && !Object.hasOwn(NOT_BEHAVIOUR, path))
        .map((path) => `setting ${path} has no behaviour case: a setting nothing reads is a defect`),
      ...[...cases.keys(), ...Object.keys(NOT_BEHAVIOUR)]
        .filter((path) => !settings.includes(path))
        .map((path) => `the case for ${path} names no setting of the schema`),
    ];
    expect(problems).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// Starting gateways

const folders: string[] = [];
/** How to stop each process started here, registered as it starts, so afterAll stops it whatever failed. */
const stops: (() => Promise<unknown>)[] = [];

function folder(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `every-setting-${label}-`));
  folders.push(dir);
  return dir;
}

interface Stderr {
  text(): string;
  /** The first match of `pattern` in what was written, once it is there (bounded, so a miss fails). */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>;
}

function watchStderr(stream: Readable): Stderr {
  let text = '';
  const waiting = new Set<() => void>();
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
    for (const check of [...waiting]) check();
  });
  return {
    text: () => text,
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`the gateway wrote no ${pattern} on stderr:\n${text}`));
        }, 45_000);
        const check = () => {
          const match = pattern.exec(text);
          if (!match) return;
          waiting.delete(check);
          clearTimeout(timer);
          resolve(match);
        };
        waiting.add(check);
        check();
      }),
  };
}

interface Gateway extends Stderr {
  dir: string;
  stop(): Promise<void>;
}

interface StdioGateway extends Gateway {
  client: Client;
  call(name: string, args?: Record<string, unknown>, meta?: Record<string, unknown>): Promise<CallToolResult>;
}

interface HttpGateway extends Gateway {
  url: string;
}

function writeConfig(dir: string, config: unknown): string {
  const file = join(dir, 'gateway.config.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** `mcp-envelope gateway --config FILE` serving stdio to an SDK client. */
async function startStdio(
  dir: string,
  config: unknown,
  env: Record<string, string> = {},
): Promise<StdioGateway> {
  const transport = gatewayStdio(writeConfig(dir, config), { env, stderr: 'pipe' });
  stops.push(() => transport.close());
  const stderr = watchStderr(transport.stderr as Readable);
  const client = new Client({ name: 'every-setting', version: '1.0.0' });
  const exited = new Promise<void>((resolve) => {
    client.onclose = () => resolve();
  });
  await client.connect(transport);
  const pid = transport.pid;
  let stopping: Promise<void> | undefined;
  return {
    dir,
    client,
    ...stderr,
    call: (name, args = {}, meta) =>
      client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }) as Promise<CallToolResult>,
    stop: () => {
      // SIGTERM, as an operator stops it: the gateway flushes its call log and closes its ledger first.
      stopping ??= (async () => {
        try {
          if (pid !== null) process.kill(pid, 'SIGTERM');
        } catch {
          // Already gone.
        }
        await exited;
      })();
      return stopping;
    },
  };
}

/** `mcp-envelope gateway --config FILE` with the listener the configuration describes (no --http). */
async function startHttp(
  dir: string,
  config: unknown,
  env: Record<string, string> = {},
): Promise<HttpGateway> {
  const child = spawn(NODE, [BIN, 'gateway', '--config', writeConfig(dir, config)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stops.push(() => stopChild(child));
  const stderr = watchStderr(child.stderr);
  const early = new Promise<never>((_resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the gateway exited with ${code}:\n${stderr.text()}`)));
  });
  early.catch(() => {});
  const [, url] = await Promise.race([stderr.waitFor(/^Streamable HTTP: (http:\/\/\S+)$/m), early]);
  return { dir, url: url as string, ...stderr, stop: () => stopChild(child) };
}

// ---------------------------------------------------------------------------
// Talking to them

/** What the probe's whoami reports. */
interface Facts {
  pid: number;
  cwd: string;
  argv: string[];
  label: string | null;
  value: string | null;
  secret: string | null;
}

interface Artifact {
  digest?: { alg: string };
  size_bytes?: number;
}

/** The members of the envelopes (and of a Hosted v2 result) these cases look at. */
interface Envelope {
  schema_version?: string;
  result?: unknown;
  errors?: { code: string; message: string; details?: Record<string, unknown> }[];
  meta?: { request_id?: string };
  provenance?: { schema_version: string; outputs: Artifact[] };
  ok?: boolean;
  data?: unknown;
}

function envelope(result: unknown): Envelope {
  return (result as CallToolResult).structuredContent as Envelope;
}

function resultOf<T>(result: unknown): T {
  return envelope(result).result as T;
}

function errorOf(result: unknown): NonNullable<Envelope['errors']>[number] | undefined {
  return envelope(result).errors?.[0];
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

function initialize(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return post(url, initializeMessage(1, 'every-setting'), headers);
}

/** The status of an answer, its body read so the connection is free again. */
async function statusOf(answer: Promise<Response>): Promise<number> {
  const response = await answer;
  await response.text();
  return response.status;
}

/** A session's id from a raw initialize that opened one. */
async function openSession(url: string, headers: Record<string, string> = {}): Promise<string> {
  const answer = await initialize(url, headers);
  expect(answer.status).toBe(200);
  await answer.text();
  return answer.headers.get('mcp-session-id') as string;
}

/** The status of a ping on a session: 200 while it is open, 404 once it is closed. */
async function pingStatus(
  url: string,
  session: string,
  headers: Record<string, string> = {},
): Promise<number> {
  const answer = await post(
    url,
    { jsonrpc: '2.0', id: 2, method: 'ping' },
    { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18', ...headers },
  );
  await answer.text();
  return answer.status;
}

/** A request with headers fetch will not send (Host, Origin). */
function rawStatus(url: string, headers: Record<string, string>): Promise<number> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname.replace(/^\[|\]$/g, ''),
        port: target.port,
        path: '/healthz',
        headers: { host: target.host, ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * An SDK client that has opened its GET stream, then left: `close()` ends the
 * stream and sends no DELETE. Returns the id of the session it left behind.
 */
async function leaveSession(url: string): Promise<string> {
  const streamOpen = Promise.withResolvers<void>();
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      if ((init?.method ?? 'GET') === 'GET' && response.ok) streamOpen.resolve();
      return response;
    },
  });
  const client = new Client({ name: 'every-setting', version: '1.0.0' });
  await client.connect(transport);
  await streamOpen.promise;
  const session = transport.sessionId as string;
  await client.close();
  return session;
}

async function sdkClient(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'every-setting', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(url),
      token ? { requestInit: { headers: bearer(token) } } : undefined,
    ),
  );
  return client;
}

/** When each start of a `failing` upstream was (ms since the epoch, one clock for every process). */
function startsOf(dir: string, upstream: string): number[] {
  const file = join(dir, `${upstream}.starts`);
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : [];
}

function callLogLines(logs: string): Record<string, unknown>[] {
  return readdirSync(logs, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.jsonl') && !file.endsWith('.latest.jsonl'))
    .flatMap((file) => readFileSync(join(logs, file), 'utf8').split('\n').filter(Boolean))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// ---------------------------------------------------------------------------
// The gateways

const probe = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  stdio: { command: 'node', args: [PROBE] },
  ...extra,
});

/**
 * An upstream that exits at once, noting when each start was in `<dir>/<name>.starts`.
 * Pinned to the 2025 handshake, so each start is one process: probing an upstream
 * that has not answered yet costs a second one (see `upstreams[].protocol`).
 */
const failing = (dir: string, name: string, restart: Record<string, unknown>) => ({
  name,
  protocol: '2025-11-25',
  stdio: {
    command: 'node',
    args: [
      '-e',
      "require('node:fs').appendFileSync(process.argv[1], Date.now() + '\\n'); process.exit(3)",
      join(dir, `${name}.starts`),
    ],
  },
  restart,
});

let remote: Running;
/** Upstream settings, one upstream per variation, next to `base` with every default. */
let varied: StdioGateway;
/** Gateway-wide defaults, with upstreams that keep failing under different retry policies. */
let defaults: StdioGateway;
/** A listener, tokens and tiers away from their defaults. */
let listener: HttpGateway;
/** A listener at its defaults. */
let plain: HttpGateway;
/** Session limits. */
let limited: HttpGateway;
/** A short idle limit. */
let idle: HttpGateway;

beforeAll(async () => {
  remote = await startListening([PROBE, '--http']);
  stops.push(() => remote.stop());
  const variedDir = folder('varied');
  mkdirSync(join(variedDir, 'sub'));
  // A relative command: resolved against the configuration's folder, not the test's.
  writeFileSync(join(variedDir, 'probe.sh'), `#!/bin/sh\nexec '${NODE}' '${PROBE}' --via-script "$@"\n`, {
    mode: 0o755,
  });
  const defaultsDir = folder('defaults');
  // Every start settles before a failure is raised, so none is still starting when afterAll stops them.
  const starts = await Promise.allSettled([
    startStdio(
      variedDir,
      {
        upstreams: [
          probe('base'),
          {
            name: 'local',
            stdio: {
              command: './probe.sh',
              args: ['--label', 'configured'],
              env: { PROBE_VALUE: 'from-config' },
              envFromEnv: { PROBE_SECRET: 'EVERY_SETTING_PROBE_SECRET' },
              cwd: 'sub',
            },
          },
          {
            name: 'remote',
            url: {
              url: remote.url,
              headers: { 'x-team': 'payments' },
              headersFromEnv: { authorization: 'EVERY_SETTING_REMOTE_AUTH' },
            },
          },
          { name: 'bare', url: { url: remote.url } },
          probe('hosted', { dialect: 'hosted-v2' }),
          probe('lax', { validation: { input: 'off', output: 'off' } }),
          probe('rpc', { validation: { invalidInput: 'jsonrpc-error' } }),
          probe('unrecorded', { provenance: { enabled: false } }),
          probe('full', { provenance: { mode: 'full' } }),
          probe('digests', { provenance: { captureArtifacts: true } }),
          probe('timed', { timeouts: { callMs: 1000, tools: { slow: 20_000 } } }),
          {
            name: 'stuck',
            stdio: { command: 'node', args: [PROBE, '--hang'] },
            timeouts: { startMs: 300 },
            restart: { enabled: false },
          },
          probe('gated', {
            tiers: {
              tools: {
                echo: { tier: 'enterprise', reason: 'Echo is an enterprise feature' },
                whoami: 'enterprise',
              },
            },
          }),
        ],
        tiers: { anonymous: 'pro', tools: { base__headers: 'pro' } },
        ledger: { path: 'records/ledger.sqlite' },
        logs: { dir: 'call-logs', includeArguments: true, instance: 'desk-1' },
        ids: { seed: SEED },
      },
      { EVERY_SETTING_REMOTE_AUTH: 'Bearer remote-secret', EVERY_SETTING_PROBE_SECRET: 'from-environment' },
    ).then((gateway) => {
      varied = gateway;
    }),
    startStdio(defaultsDir, {
      upstreams: [
        probe('healthy'),
        // Retry policies, each one setting away from the one before: waits in ms before restarts 1 and 2.
        failing(defaultsDir, 'defaulted', {}),
        failing(defaultsDir, 'disabled', { enabled: false }),
        failing(defaultsDir, 'two', { maxAttempts: 2 }), // 100, 200
        failing(defaultsDir, 'late', { maxAttempts: 2, initialDelayMs: 5000 }), // 5000, 5000
        failing(defaultsDir, 'steady', { maxAttempts: 2, initialDelayMs: 500 }), // 500, 1000
        failing(defaultsDir, 'steep', { maxAttempts: 2, initialDelayMs: 500, factor: 10 }), // 500, 5000
        failing(defaultsDir, 'capped', { maxAttempts: 2, initialDelayMs: 500, factor: 10, maxDelayMs: 500 }), // 500, 500
      ],
      tiers: { tools: { healthy__headers: 'pro' } },
    }).then((gateway) => {
      defaults = gateway;
    }),
    startHttp(
      folder('listener'),
      {
        upstreams: [probe('probe')],
        listen: {
          stdio: false,
          http: {
            host: OTHER_LOOPBACK,
            port: 0,
            path: '/api/mcp',
            allowedHosts: ['127.0.0.2', 'gateway.test'],
            allowedOrigins: ['https://app.test'],
            bodyLimitBytes: 2048,
            resumable: true,
          },
        },
        auth: {
          tokens: [
            { token: FREE_TOKEN, tier: 'free' },
            { name: 'pro', tokenEnv: 'EVERY_SETTING_PRO_TOKEN', tier: 'pro' },
            { name: 'spare', tokenEnv: 'EVERY_SETTING_UNSET_TOKEN', tier: 'pro', optional: true },
          ],
        },
        tiers: {
          order: ['free', 'pro', 'enterprise'],
          tools: { whoami: { tier: 'pro', reason: 'Whoami is for pro callers' }, echo: 'pro' },
        },
        ledger: { enabled: false },
        logs: { enabled: false },
        artifacts: { enabled: false },
      },
      { EVERY_SETTING_PRO_TOKEN: PRO_TOKEN },
    ).then((gateway) => {
      listener = gateway;
    }),
    startHttp(folder('plain'), {
      upstreams: [probe('probe')],
      listen: { stdio: false, http: { port: 0 } },
    }).then((gateway) => {
      plain = gateway;
    }),
    startHttp(folder('limited'), {
      upstreams: [probe('probe')],
      listen: {
        stdio: false,
        http: { port: 0, maxSessions: 2, maxSessionsPerPrincipal: 1, abandonedSessionMs: 50 },
      },
      auth: {
        required: false,
        tokens: [
          { token: A_TOKEN, tier: 'pro' },
          { token: B_TOKEN, tier: 'pro' },
        ],
      },
    }).then((gateway) => {
      limited = gateway;
    }),
    startHttp(folder('idle'), {
      upstreams: [probe('probe')],
      listen: { stdio: false, http: { port: 0, sessionIdleMs: 1000 } },
    }).then((gateway) => {
      idle = gateway;
    }),
  ]);
  const failed = starts.find((start) => start.status === 'rejected');
  if (failed) throw failed.reason;
}, 90_000);

afterAll(async () => {
  await Promise.allSettled(stops.map((stop) => stop()));
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// Upstream settings: each varied upstream against `base`, at every default

describe('upstream settings', () => {
  // First: deterministic ids follow the sequence of calls, so this must be the gateway's first call.
  proves(['ids.seed'], 'ids.seed makes run and request ids deterministic', async () => {
    const expected = new DeterministicIds(SEED).runId({ tool: 'echo', arguments: { text: 'first' } });
    const seeded = envelope(await varied.call('base__echo', { text: 'first' }));
    expect(seeded.meta?.request_id).toBe(expected);
    const random = envelope(await defaults.call('healthy__echo', { text: 'first' }));
    expect(random.meta?.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(random.meta?.request_id).not.toBe(expected);
  });

  proves(['upstreams[].name'], 'upstreams[].name prefixes the tools of each upstream', async () => {
    const names = (await varied.client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['base__whoami', 'local__whoami', 'remote__headers']));
    await varied.waitFor(/upstream local \(prov-v0\.1\): ready/);
  });

  proves(
    [
      'upstreams[].stdio.command',
      'upstreams[].stdio.args',
      'upstreams[].stdio.env',
      'upstreams[].stdio.envFromEnv',
      'upstreams[].stdio.cwd',
    ],
    'stdio.command, args, env, envFromEnv and cwd are how the child process runs',
    async () => {
      const local = resultOf<Facts>(await varied.call('local__whoami'));
      const base = resultOf<Facts>(await varied.call('base__whoami'));
      // command: the relative script ran (it adds --via-script).
      expect(local.argv).toContain('--via-script');
      expect(base.argv).not.toContain('--via-script');
      expect(local.label).toBe('configured');
      expect(base.label).toBeNull();
      expect(local.value).toBe('from-config');
      expect(base.value).toBeNull();
      // envFromEnv: the gateway's variable reaches only the upstream that names it.
      expect(local.secret).toBe('from-environment');
      expect(base.secret).toBeNull();
      expect(local.cwd).toBe(realpathSync(join(varied.dir, 'sub')));
      expect(base.cwd).toBe(realpathSync(varied.dir));
    },
  );

  proves(
    ['upstreams[].url.url', 'upstreams[].url.headers', 'upstreams[].url.headersFromEnv'],
    'url.url is the server called, with url.headers and url.headersFromEnv on every request',
    async () => {
      const whoami = resultOf<Facts>(await varied.call('remote__whoami'));
      expect(whoami.pid).toBe(remote.child.pid);
      expect(envelope(await varied.call('remote__headers')).result).toEqual({
        team: 'payments',
        authorization: 'Bearer remote-secret',
      });
      expect(envelope(await varied.call('bare__headers')).result).toEqual({
        team: null,
        authorization: null,
      });
    },
  );

  proves(['upstreams[].dialect'], 'upstreams[].dialect is the envelope results come in', async () => {
    expect(envelope(await varied.call('base__echo', { text: 'hi' }))).toMatchObject({
      schema_version: 'mcp.envelope.v0.1',
      result: 'hi',
    });
    expect(envelope(await varied.call('hosted__echo', { text: 'hi' }))).toMatchObject({
      ok: true,
      data: 'hi',
    });
  });

  proves(
    ['upstreams[].validation.input'],
    'validation.input off forwards arguments the schema refuses',
    async () => {
      const checked = await varied.call('base__echo', {});
      expect(checked.isError).toBe(true);
      expect(errorOf(checked)?.code).toBe('INVALID_INPUT');
      const forwarded = await varied.call('lax__echo', {});
      expect(forwarded.isError).toBeFalsy();
      expect(envelope(forwarded).result).toBe('undefined');
    },
  );

  proves(
    ['upstreams[].validation.invalidInput'],
    'validation.invalidInput jsonrpc-error answers refused arguments with JSON-RPC -32602',
    async () => {
      expect(errorOf(await varied.call('base__echo', {}))?.code).toBe('INVALID_INPUT');
      const refused = await varied.call('rpc__echo', {}).then(
        () => undefined,
        (error: unknown) => error as { code?: number; data?: Record<string, unknown> },
      );
      expect(refused?.code).toBe(-32602);
      expect(refused?.data).toMatchObject({ canonical_code: 'INVALID_INPUT' });
    },
  );

  proves(
    ['upstreams[].validation.output'],
    'validation.output off passes results their output schema refuses',
    async () => {
      expect(errorOf(await varied.call('base__bad_output'))?.code).toBe('INVALID_OUTPUT');
      const passed = envelope(await varied.call('lax__bad_output'));
      expect(passed.errors).toBeUndefined();
      expect(passed.result).toEqual({ n: 'not a number' });
    },
  );

  proves(
    [
      'upstreams[].provenance.enabled',
      'upstreams[].provenance.mode',
      'upstreams[].provenance.captureArtifacts',
    ],
    'provenance.enabled, mode and captureArtifacts shape the record a caller opts into',
    async () => {
      const optIn = { capture_provenance: true };
      const record = async (upstream: string) =>
        envelope(await varied.call(`${upstream}__echo`, { text: 'p' }, optIn)).provenance;
      const [base, unrecorded, full, digests] = await Promise.all(
        ['base', 'unrecorded', 'full', 'digests'].map(record),
      );
      expect(base?.schema_version).toBe('prov.record.v0.1');
      expect(base?.outputs[0]).not.toHaveProperty('digest');
      expect(base?.outputs[0]).not.toHaveProperty('size_bytes');
      expect(unrecorded).toBeUndefined();
      // full: every artifact digested and sized.
      expect(full?.outputs[0]?.size_bytes).toBeTypeOf('number');
      // captureArtifacts: digested, in minimal mode (no sizes).
      expect(digests?.outputs[0]?.digest).toMatchObject({ alg: 'sha256' });
      expect(digests?.outputs[0]).not.toHaveProperty('size_bytes');
    },
  );

  proves(
    ['upstreams[].timeouts.callMs', 'upstreams[].timeouts.tools'],
    'timeouts.callMs bounds a call, timeouts.tools overrides it for one tool',
    async () => {
      // Each call takes twice the upstream's callMs.
      const [cut, overridden, base] = await Promise.all([
        varied.call('timed__wait', { ms: 2000 }),
        varied.call('timed__slow', { ms: 2000 }),
        varied.call('base__wait', { ms: 2000 }),
      ]);
      expect(cut.isError).toBe(true);
      expect(errorOf(cut)?.message).toContain('did not answer tools/call within 1000 ms');
      expect(envelope(overridden).result).toBe('done');
      expect(envelope(base).result).toBe('done');
    },
  );

  proves(
    ['upstreams[].timeouts.startMs'],
    'timeouts.startMs gives up on an upstream that does not answer initialize',
    async () => {
      // With the default (15 s) the gateway would still be waiting; it started, serving without it.
      await varied.waitFor(/upstream stuck did not start: no answer to initialize within \d+ ms/);
      await varied.waitFor(/upstream base \(prov-v0\.1\): ready/);
    },
  );

  proves(
    [
      'upstreams[].tiers.tools',
      'upstreams[].tiers.tools.<tool>.tier',
      'upstreams[].tiers.tools.<tool>.reason',
    ],
    "upstreams[].tiers.tools gates the upstream's own tools, saying the reason given",
    async () => {
      const echo = await varied.call('gated__echo', { text: 'x' });
      expect(errorOf(echo)).toMatchObject({
        code: 'UPGRADE_REQUIRED',
        message: 'Echo is an enterprise feature',
        details: { tier: 'enterprise' },
      });
      // No reason given: a generic sentence.
      const whoami = await varied.call('gated__whoami');
      expect(errorOf(whoami)?.code).toBe('UPGRADE_REQUIRED');
      expect(errorOf(whoami)?.message).not.toBe('Echo is an enterprise feature');
      expect(envelope(await varied.call('base__echo', { text: 'x' })).result).toBe('x');
    },
  );

  proves(['tiers.anonymous'], 'tiers.anonymous is the tier of callers without a token', async () => {
    // The same rule, "pro": anonymous is pro here, the lowest tier (community) by default.
    expect(envelope(await varied.call('base__headers')).result).toEqual({ team: null, authorization: null });
    expect(errorOf(await defaults.call('healthy__headers'))?.code).toBe('UPGRADE_REQUIRED');
  });
});

// ---------------------------------------------------------------------------
// Restarts: upstreams that exit at once, each retried under another policy

describe('upstreams[].restart', () => {
  /** How many times `upstream` had started when `other` started for the `nth` time. */
  const startsWhen = (upstream: string, other: string, nth: number): number => {
    const then = startsOf(defaults.dir, other)[nth - 1] as number;
    return startsOf(defaults.dir, upstream).filter((at) => at <= then).length;
  };

  proves(['upstreams[].restart.enabled'], 'restart.enabled false leaves a failed upstream down', async () => {
    await defaults.waitFor(/upstream disabled gave up after 0 restart attempts/);
    expect(startsOf(defaults.dir, 'disabled')).toHaveLength(1);
    await defaults.waitFor(/upstream two gave up after 2 restart attempts/);
    expect(startsOf(defaults.dir, 'two')).toHaveLength(3);
  });

  proves(
    ['upstreams[].restart.maxAttempts'],
    'restart.maxAttempts is how many restarts in a row',
    async () => {
      await defaults.waitFor(/upstream two gave up after 2 restart attempts/);
      expect(startsOf(defaults.dir, 'two')).toHaveLength(3);
      await defaults.waitFor(/upstream defaulted gave up after 5 restart attempts/);
      expect(startsOf(defaults.dir, 'defaulted')).toHaveLength(6);
    },
  );

  // Each policy below waits seconds longer than the one it is compared with, which
  // started at the same moment: by the start compared, the slower one has made fewer.
  proves(
    ['upstreams[].restart.initialDelayMs'],
    'restart.initialDelayMs delays the first restart',
    async () => {
      await defaults.waitFor(/upstream two gave up/);
      expect(startsWhen('late', 'two', 2)).toBe(1);
    },
  );

  proves(['upstreams[].restart.factor'], 'restart.factor stretches each further delay', async () => {
    await defaults.waitFor(/upstream steady gave up/);
    expect(startsWhen('steep', 'steady', 3)).toBe(2);
  });

  proves(['upstreams[].restart.maxDelayMs'], 'restart.maxDelayMs caps the delay', async () => {
    await defaults.waitFor(/upstream capped gave up/);
    expect(startsWhen('steep', 'capped', 3)).toBe(2);
  });
});

// ---------------------------------------------------------------------------
// The HTTP listener: `listener` varied against `plain`

describe('listen', () => {
  proves(['listen.stdio'], 'listen.stdio false serves nothing on stdio', async () => {
    // With the default the gateway above serves stdio; without it and without HTTP there is nothing to serve.
    const dir = folder('no-stdio');
    const run = await runCli([
      'gateway',
      '--config',
      writeConfig(dir, { upstreams: [probe('probe')], listen: { stdio: false } }),
    ]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('Nothing to serve');
    expect((await varied.client.listTools()).tools.length).toBeGreaterThan(0);
  });

  proves(['listen.http'], 'listen.http starts an HTTP listener', async () => {
    expect(listener.url).toMatch(/^http:/);
    await varied.waitFor(BANNER_END);
    expect(varied.text()).not.toContain('Streamable HTTP:');
  });

  proves(['listen.http.host'], 'listen.http.host is the address bound', async () => {
    expect(new URL(listener.url).hostname.replace(/^\[|\]$/g, '')).toBe(OTHER_LOOPBACK);
    expect(new URL(plain.url).hostname).toBe('127.0.0.1');
  });

  proves(['listen.http.port'], 'listen.http.port 0 binds a free port instead of 8787', async () => {
    expect(Number(new URL(listener.url).port)).toBeGreaterThan(0);
    expect(new URL(listener.url).port).not.toBe('8787');
  });

  proves(['listen.http.path'], 'listen.http.path is where MCP is served', async () => {
    expect(new URL(listener.url).pathname).toBe('/api/mcp');
    expect(await statusOf(initialize(new URL('/mcp', listener.url).href, bearer(PRO_TOKEN)))).toBe(404);
    expect(await statusOf(initialize(listener.url, bearer(PRO_TOKEN)))).toBe(200);
    expect(await statusOf(initialize(plain.url))).toBe(200);
    expect(new URL(plain.url).pathname).toBe('/mcp');
  });

  proves(['listen.http.allowedHosts'], 'listen.http.allowedHosts accepts another Host', async () => {
    expect(await rawStatus(listener.url, { host: 'gateway.test' })).toBe(200);
    expect(await rawStatus(plain.url, { host: 'gateway.test' })).toBe(403);
  });

  proves(['listen.http.allowedOrigins'], 'listen.http.allowedOrigins accepts another Origin', async () => {
    expect(await rawStatus(listener.url, { origin: 'https://app.test' })).toBe(200);
    expect(await rawStatus(plain.url, { origin: 'https://app.test' })).toBe(403);
  });

  proves(['listen.http.bodyLimitBytes'], 'listen.http.bodyLimitBytes refuses a larger body', async () => {
    const body = initializeMessage(1, 'x'.repeat(3000));
    expect(await statusOf(post(listener.url, body, bearer(PRO_TOKEN)))).toBe(413);
    expect(await statusOf(post(plain.url, body))).not.toBe(413);
  });

  proves(['listen.http.resumable'], 'listen.http.resumable stamps SSE events with ids', async () => {
    expect(await (await initialize(listener.url, bearer(PRO_TOKEN))).text()).toMatch(/^id: \S+/m);
    expect(await (await initialize(plain.url)).text()).not.toMatch(/^id: /m);
  });

  proves(
    ['listen.http.abandonedSessionMs'],
    'listen.http.abandonedSessionMs closes a session whose client left',
    async () => {
      const left = await leaveSession(plain.url);
      const session = await leaveSession(limited.url);
      await limited.waitFor(new RegExp(`session ${session} closed: abandoned`));
      // At the default (30 s), the session left on the other gateway is still open.
      expect(await pingStatus(plain.url, left)).toBe(200);
    },
  );

  proves(
    ['listen.http.maxSessionsPerPrincipal'],
    "listen.http.maxSessionsPerPrincipal closes a client's older session for its new one",
    async () => {
      const first = await openSession(limited.url, bearer(A_TOKEN));
      await openSession(limited.url, bearer(A_TOKEN));
      await limited.waitFor(new RegExp(`session ${first} closed: evicted`));
      expect(await pingStatus(limited.url, first, bearer(A_TOKEN))).toBe(404);
      // By default (16 per client) both stay open.
      const plainFirst = await openSession(plain.url);
      await openSession(plain.url);
      expect(await pingStatus(plain.url, plainFirst)).toBe(200);
    },
  );

  proves(
    ['auth.required'],
    'auth.required false serves callers without a token, tokens configured',
    async () => {
      // Required by default once tokens are configured.
      expect(await statusOf(initialize(listener.url))).toBe(401);
      expect(await statusOf(initialize(limited.url))).toBe(200);
    },
  );

  proves(['listen.http.maxSessions'], 'listen.http.maxSessions refuses sessions past the cap', async () => {
    // Open: A's session and the anonymous one above; B is a third.
    expect(await statusOf(initialize(limited.url, bearer(B_TOKEN)))).toBe(503);
    expect(await statusOf(initialize(plain.url))).toBe(200);
  });

  proves(['listen.http.sessionIdleMs'], 'listen.http.sessionIdleMs closes a session left idle', async () => {
    const kept = await openSession(plain.url);
    const idled = await openSession(idle.url);
    await idle.waitFor(new RegExp(`session ${idled} closed: idle`));
    expect(await pingStatus(idle.url, idled)).toBe(404);
    // Idle as long, at the default (30 minutes): still open.
    expect(await pingStatus(plain.url, kept)).toBe(200);
  });
});

// ---------------------------------------------------------------------------
// Tokens and tiers: `listener` has tokens and tiers, `plain` neither

describe('auth and tiers', () => {
  proves(
    ['auth.tokens[].token', 'auth.tokens[].tokenEnv'],
    'a token, literal or from the environment, is accepted',
    async () => {
      expect(await statusOf(initialize(listener.url, bearer(FREE_TOKEN)))).toBe(200);
      expect(await statusOf(initialize(listener.url, bearer(PRO_TOKEN)))).toBe(200);
      expect(await statusOf(initialize(listener.url, bearer('not-a-configured-token-0000')))).toBe(401);
    },
  );

  proves(
    ['auth.tokens[].tier', 'tiers.tools', 'tiers.tools.<tool>.tier', 'tiers.tools.<tool>.reason'],
    "tiers.tools gates a tool by the caller's token tier, saying the reason given",
    async () => {
      const [free, pro, anonymous] = await Promise.all([
        sdkClient(listener.url, FREE_TOKEN),
        sdkClient(listener.url, PRO_TOKEN),
        sdkClient(plain.url),
      ]);
      try {
        const refused = await free.callTool({ name: 'whoami', arguments: {} });
        expect(errorOf(refused)).toMatchObject({
          code: 'UPGRADE_REQUIRED',
          message: 'Whoami is for pro callers',
          details: { tier: 'pro' },
        });
        // A rule without a reason: a generic sentence.
        const generic = await free.callTool({ name: 'echo', arguments: { text: 'x' } });
        expect(errorOf(generic)?.code).toBe('UPGRADE_REQUIRED');
        expect(errorOf(generic)?.message).not.toBe('Whoami is for pro callers');
        // The tier of the token decides.
        const allowed = await pro.callTool({ name: 'whoami', arguments: {} });
        expect(resultOf<Facts>(allowed).pid).toBeTypeOf('number');
        // Without tiers, nothing is gated.
        const open = await anonymous.callTool({ name: 'whoami', arguments: {} });
        expect(resultOf<Facts>(open).pid).toBeTypeOf('number');
      } finally {
        await Promise.all([free.close(), pro.close(), anonymous.close()]);
      }
    },
  );

  proves(['tiers.order'], 'tiers.order names the tiers tokens and rules may use', async () => {
    // `listener` runs with tier "free" in its order; the default order has no such tier.
    const dir = folder('no-order');
    const run = await runCli([
      'gateway',
      '--config',
      writeConfig(dir, {
        upstreams: [probe('probe')],
        auth: { tokens: [{ token: FREE_TOKEN, tier: 'free' }] },
        tiers: { tools: {} },
      }),
    ]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/CONFIG_INVALID.*"free"/);
  });

  proves(
    ['auth.tokens[].optional', 'auth.tokens[].name'],
    'an unset tokenEnv is skipped when optional, else refused, naming the token',
    async () => {
      // `listener` started with its optional token's variable unset.
      const dir = folder('refusals');
      const entry = { tokenEnv: 'EVERY_SETTING_UNSET_TOKEN', tier: 'pro' };
      const [named, unnamed] = await Promise.all(
        [{ name: 'spare', ...entry }, entry].map((token, index) =>
          runCli([
            'gateway',
            '--config',
            writeConfig(mkdtempSync(join(dir, `${index}-`)), {
              upstreams: [probe('probe')],
              auth: { tokens: [token] },
            }),
          ]),
        ),
      );
      expect(named?.code).not.toBe(0);
      expect(named?.stderr).toContain('EVERY_SETTING_UNSET_TOKEN (bearer token "spare"');
      expect(unnamed?.stderr).toContain('EVERY_SETTING_UNSET_TOKEN (bearer token "token-1"');
    },
  );
});

// ---------------------------------------------------------------------------
// What each gateway leaves on disk: stopped first, so call logs are flushed

describe('ledger and logs', () => {
  proves(
    ['ledger.enabled', 'logs.enabled'],
    'ledger.enabled and logs.enabled false write neither',
    async () => {
      await Promise.all([listener.waitFor(BANNER_END), defaults.waitFor(BANNER_END)]);
      expect(listener.text()).not.toMatch(/^(Ledger|Call log):/m);
      expect(existsSync(join(listener.dir, 'data'))).toBe(false);
      expect(existsSync(join(listener.dir, 'runs'))).toBe(false);
      expect(defaults.text()).toMatch(/^Ledger: /m);
      expect(defaults.text()).toMatch(/^Call log: /m);
    },
  );

  proves(
    ['ledger.path', 'logs.dir', 'logs.includeArguments'],
    'ledger.path and logs.dir are where they go, logs.includeArguments puts arguments in the log',
    async () => {
      await Promise.all([varied.stop(), defaults.stop()]);
      expect(existsSync(join(varied.dir, 'records', 'ledger.sqlite'))).toBe(true);
      expect(existsSync(join(varied.dir, 'data'))).toBe(false);
      expect(existsSync(join(defaults.dir, 'data', 'ledger.sqlite'))).toBe(true);
      expect(existsSync(join(varied.dir, 'runs'))).toBe(false);
      expect(callLogLines(join(varied.dir, 'call-logs'))).toContainEqual(
        expect.objectContaining({ tool: 'echo', arguments: { text: 'first' } }),
      );
      const defaultLines = callLogLines(join(defaults.dir, 'runs'));
      expect(defaultLines).toContainEqual(
        expect.objectContaining({ tool: 'echo', argumentsDigest: expect.stringMatching(/^sha256:/) }),
      );
      expect(defaultLines.filter((line) => 'arguments' in line)).toEqual([]);
    },
  );

  proves(['logs.instance'], 'logs.instance names the log file and its link', async () => {
    await Promise.all([varied.stop(), defaults.stop()]);
    const named = readdirSync(join(varied.dir, 'call-logs'), { recursive: true, encoding: 'utf8' });
    expect(named).toContain('gateway/calls-desk-1.latest.jsonl');
    expect(named.filter((file) => /\/calls-desk-1\.jsonl$/.test(file))).toHaveLength(1);
    // Unnamed, the instance is this host and the gateway's pid.
    const unnamed = readdirSync(join(defaults.dir, 'runs'), { recursive: true, encoding: 'utf8' });
    expect(unnamed.filter((file) => /calls-desk-1/.test(file))).toEqual([]);
    expect(unnamed.filter((file) => /^gateway\/calls-.+-\d+\.latest\.jsonl$/.test(file))).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------
// Tool pinning

const SHIFTING = fileURLToPath(new URL('../fixtures/servers/shifting-tools.ts', import.meta.url));

describe('pinning', () => {
  proves(
    ['pinning.mode', 'pinning.file', 'upstreams[].pin'],
    'pinning.mode enforce hides a changed tool, upstreams[].pin off exempts one upstream, pinning.file keeps the pins',
    async () => {
      const dir = folder('pinning');
      const gateway = await startStdio(dir, {
        upstreams: [
          { name: 'strict', stdio: { command: 'node', args: [SHIFTING, join(dir, 'strict.variant')] } },
          {
            name: 'loose',
            stdio: { command: 'node', args: [SHIFTING, join(dir, 'loose.variant')] },
            pin: 'off',
          },
        ],
        ledger: { enabled: false },
        pinning: { mode: 'enforce', file: 'pins/pins.sqlite' },
        listen: { stdio: true },
      });
      try {
        const names = async () => (await gateway.client.listTools()).tools.map((tool) => tool.name).sort();
        expect(await names()).toEqual([
          'loose__control',
          'loose__search',
          'strict__control',
          'strict__search',
        ]);
        await gateway.call('strict__control', { variant: 'changed' });
        await gateway.call('loose__control', { variant: 'changed' });
        const listed = await gateway.client.listTools();
        expect(listed.tools.map((tool) => tool.name).sort()).toEqual([
          'loose__control',
          'loose__search',
          'strict__control',
        ]);
        expect(listed._meta?.['mcp-envelope/pins']).toEqual({
          changed: [
            expect.objectContaining({ name: 'strict__search', upstream: 'strict', action: 'hidden' }),
          ],
        });
      } finally {
        await gateway.stop();
      }
      const pins = new DatabaseSync(join(dir, 'pins', 'pins.sqlite'), { readOnly: true });
      try {
        const rows = pins.prepare('SELECT DISTINCT upstream FROM definition_pins').all();
        expect(rows).toEqual([{ upstream: 'strict' }]);
      } finally {
        pins.close();
      }
    },
  );
});

describe('upstreams[].pinKeys', () => {
  proves(
    ['upstreams[].pinKeys'],
    'upstreams[].pinKeys serves the tools of a list signed by one of them, and hides those of one signed by another key',
    async () => {
      const dir = folder('pin-keys');
      const ours = generateKeyPairSync('ed25519');
      const theirs = generateKeyPairSync('ed25519');
      writeFileSync(join(dir, 'ours.pem'), ours.privateKey.export({ type: 'pkcs8', format: 'pem' }));
      writeFileSync(join(dir, 'theirs.pem'), theirs.privateKey.export({ type: 'pkcs8', format: 'pem' }));
      writeFileSync(join(dir, 'ours.pub.pem'), ours.publicKey.export({ type: 'spki', format: 'pem' }));
      const signing = (name: string, key: string) => ({
        name,
        stdio: {
          command: 'node',
          args: [SHIFTING, join(dir, `${name}.variant`), '--sign-key', join(dir, key)],
        },
        pinKeys: ['ours.pub.pem'],
      });
      const gateway = await startStdio(dir, {
        upstreams: [signing('signed', 'ours.pem'), signing('forged', 'theirs.pem')],
        pinning: { mode: 'enforce' },
        ledger: { path: 'ledger.sqlite' },
        listen: { stdio: true },
      });
      try {
        const listed = await gateway.client.listTools();
        expect(listed.tools.map((tool) => tool.name).sort()).toEqual(['signed__control', 'signed__search']);
        expect(listed._meta?.['mcp-envelope/pins']).toEqual({
          changed: [
            expect.objectContaining({ name: 'forged__search', reason: 'unsigned' }),
            expect.objectContaining({ name: 'forged__control', reason: 'unsigned' }),
          ],
        });
        await gateway.waitFor(
          /TOOL_SIGNATURE_INVALID: upstream forged tools\/list: the signature does not verify/,
        );
      } finally {
        await gateway.stop();
      }
    },
  );
});

// ---------------------------------------------------------------------------
// The protocol revision spoken to an upstream

const MODERN_ONLY = fileURLToPath(new URL('../fixtures/servers/modern-only.ts', import.meta.url));

describe('upstreams[].protocol', () => {
  proves(
    ['upstreams[].protocol'],
    'protocol: auto speaks 2026-07-28 to a server that speaks only that; a pin to 2025-11-25 cannot start it',
    async () => {
      const gateway = await startStdio(folder('protocol'), {
        upstreams: [
          { name: 'probed', stdio: { command: 'node', args: [MODERN_ONLY] }, dialect: 'passthrough' },
          {
            name: 'pinned',
            stdio: { command: 'node', args: [MODERN_ONLY] },
            protocol: '2025-11-25',
            restart: { enabled: false },
          },
          probe('legacy', { protocol: '2026-07-28', restart: { enabled: false } }),
        ],
        listen: { stdio: true },
      });
      try {
        const answer = await gateway.call('probed__echo', { text: 'spoken to in 2026-07-28' });
        expect(answer.content).toEqual([{ type: 'text', text: 'spoken to in 2026-07-28' }]);
        await gateway.waitFor(/upstream pinned did not start: .*protocol 2025-11-25 only/);
        await gateway.waitFor(/upstream legacy did not start: .*protocol 2026-07-28 only/);
      } finally {
        await gateway.stop();
      }
    },
  );
});

// ---------------------------------------------------------------------------
// How an upstream is shared: its processes among HTTP sessions, the gateway's artifact store.

const SHARING_TOKEN = 'sharing-token-0123456789';

describe('upstreams[].sharing', () => {
  proves(
    ['upstreams[].sharing'],
    'sharing: shared, two sessions of one client reach one upstream process; per-session, one each',
    async () => {
      const perSession = await startHttp(folder('per-session'), {
        upstreams: [probe('probe', { sharing: 'per-session' })],
        listen: { stdio: false, http: { port: 0 } },
      });
      // One client is one bearer token: an anonymous session is a principal of its own.
      const shared = await startHttp(folder('shared'), {
        upstreams: [probe('probe')],
        listen: { stdio: false, http: { port: 0 } },
        auth: { tokens: [{ token: SHARING_TOKEN, tier: 'community' }] },
      });
      const pidsOf = async (url: string) => {
        const clients = await Promise.all([sdkClient(url, SHARING_TOKEN), sdkClient(url, SHARING_TOKEN)]);
        try {
          return await Promise.all(
            clients.map(
              async (client) => resultOf<Facts>(await client.callTool({ name: 'whoami', arguments: {} })).pid,
            ),
          );
        } finally {
          await Promise.all(clients.map((client) => client.close()));
        }
      };
      try {
        const [one, own] = await Promise.all([pidsOf(shared.url), pidsOf(perSession.url)]);
        expect(new Set(one).size).toBe(1);
        expect(new Set(own).size).toBe(2);
      } finally {
        await Promise.all([perSession.stop(), shared.stop()]);
      }
    },
  );
});

describe('upstreams[].artifacts', () => {
  proves(
    ['upstreams[].artifacts'],
    'artifacts: shared gives a stdio upstream a capability to put files the gateway serves; own, nothing',
    async () => {
      const dir = folder('shared-store');
      const gateway = await startHttp(dir, {
        upstreams: [probe('sharing', { artifacts: 'shared' }), probe('owning')],
        listen: { stdio: false, http: { port: 0 } },
        logs: { enabled: false },
      });
      const client = await sdkClient(gateway.url);
      try {
        const storeOf = async (name: string) =>
          resultOf<{
            names: string[];
            url: string | null;
            put: { download_id: string; download_url: string | null } | null;
          }>(await client.callTool({ name, arguments: {} }));
        // The put API's loopback URL and a bearer capability: no folder, database or key.
        const sharing = await storeOf('sharing__artifact_store');
        expect(sharing.names).toEqual(['MCP_ENVELOPE_ARTIFACTS_TOKEN', 'MCP_ENVELOPE_ARTIFACTS_URL']);
        expect(sharing.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/artifacts$/);
        // What it put is the gateway's: linked to and served at the gateway's own route.
        const id = sharing.put?.download_id as string;
        const link = `${new URL(gateway.url).origin}/api/download?id=${encodeURIComponent(id)}`;
        expect(sharing.put?.download_url).toBe(link);
        const served = await fetch(link);
        expect([served.status, await served.text()]).toEqual([200, 'put by the probe']);
        expect(await storeOf('owning__artifact_store')).toEqual({ names: [], url: null, put: null });
      } finally {
        await client.close();
        await gateway.stop();
      }
    },
  );
});

// ---------------------------------------------------------------------------
// Artifacts: `downloads` with every artifact setting away from its default,
// `kept` with a longer link lifetime, against `plain` (defaults) and `listener`
// (artifacts off). This file stores the bytes itself, through the gateway's
// folder and ledger file, as a producer in another process would.

describe('artifacts', () => {
  const FILE_SECRET = 'file-download-secret-0123456789abcdef';
  /** An upstream answering with texts and images of the size asked for. */
  const BINARY_UPSTREAM = {
    name: 'files',
    stdio: {
      command: 'node',
      args: [fileURLToPath(new URL('../fixtures/servers/binary.ts', import.meta.url))],
    },
  };
  const ENV_SECRET = 'env-download-secret-0123456789abcdefgh';
  let downloads: HttpGateway;
  let kept: HttpGateway;

  beforeAll(async () => {
    const dir = folder('downloads');
    mkdirSync(join(dir, 'keys'));
    writeFileSync(join(dir, 'keys', 'download.key'), `${FILE_SECRET}\n`, { mode: 0o600 });
    const started = await Promise.allSettled([
      startHttp(
        dir,
        {
          upstreams: [BINARY_UPSTREAM],
          listen: { stdio: false, http: { port: 0 } },
          logs: { enabled: false },
          artifacts: {
            // Small enough that a 10 KB text becomes an artifact (its own case is below).
            inlineMaxBytes: 1000,
            dir: 'files',
            ttlMs: 7_200_000,
            maxBytes: 65_536,
            downloadPath: '/files',
            publicUrl: 'https://downloads.test/base',
            keys: [
              { id: 'file-key', keyFile: 'keys/download.key' },
              { id: 'env-key', keyEnv: 'EVERY_SETTING_DOWNLOAD_KEY' },
            ],
          },
        },
        { EVERY_SETTING_DOWNLOAD_KEY: ENV_SECRET },
      ).then((gateway) => {
        downloads = gateway;
      }),
      startHttp(folder('kept'), {
        upstreams: [BINARY_UPSTREAM],
        listen: { stdio: false, http: { port: 0 } },
        logs: { enabled: false },
        artifacts: { ttlMs: 10_800_000 },
      }).then((gateway) => {
        kept = gateway;
      }),
    ]);
    const failed = started.find((start) => start.status === 'rejected');
    if (failed) throw failed.reason;
  }, 60_000);

  /** Stores bytes in a gateway's folder and ledger file and grants a download, signed by `keyring`. */
  async function publish(gateway: HttpGateway, dir: string, keyring: Keyring | undefined, text: string) {
    const store = FolderArtifactStore.open({
      dir: join(gateway.dir, dir),
      databasePath: join(gateway.dir, 'data', 'ledger.sqlite'),
      ...(keyring ? { keyring } : {}),
    });
    try {
      const info = await store.put(Buffer.from(text), {
        mediaType: 'text/plain',
        owner: 'test',
        ttlMs: 60_000,
      });
      const { downloadId } = await store.createGrant({
        digest: info.digest,
        filename: 'a.txt',
        mediaType: 'text/plain',
        owner: 'test',
        ttlMs: 60_000,
      });
      return downloadId;
    } finally {
      await store.close();
    }
  }

  const keyed = (id: string, secret: string) => Keyring.fromKeys([{ id, secret }]);
  /** Status and error code of a download from a gateway. */
  async function download(gateway: HttpGateway, path: string, id?: string) {
    const response = await fetch(new URL(id === undefined ? path : `${path}?id=${id}`, gateway.url));
    return {
      status: response.status,
      code: response.headers.get('x-download-error-code'),
      body: await response.text(),
    };
  }

  proves(['artifacts.enabled'], 'artifacts.enabled false serves no download route', async () => {
    expect(await download(listener, '/api/download')).toMatchObject({ status: 404, code: null });
    expect(await download(plain, '/api/download')).toMatchObject({
      status: 400,
      code: 'DOWNLOAD_ID_MISSING',
    });
  });

  proves(['artifacts.downloadPath'], 'artifacts.downloadPath is where downloads are served', async () => {
    expect(await download(downloads, '/files')).toMatchObject({ status: 400, code: 'DOWNLOAD_ID_MISSING' });
    expect((await download(downloads, '/api/download')).code).toBeNull();
    expect((await download(plain, '/files')).code).toBeNull();
  });

  proves(['artifacts.dir'], 'artifacts.dir is the folder downloads are served from', async () => {
    const id = await publish(downloads, 'files', keyed('file-key', FILE_SECRET), 'from files/');
    expect(await download(downloads, '/files', id)).toMatchObject({ status: 200, body: 'from files/' });
    expect(existsSync(join(downloads.dir, 'files', 'blobs'))).toBe(true);
    expect(existsSync(join(downloads.dir, 'data', 'artifacts'))).toBe(false);
    // By default, data/artifacts, with a key generated there (by the first to sign: here, this test).
    const plainId = await publish(plain, join('data', 'artifacts'), undefined, 'from data/artifacts/');
    expect(await download(plain, '/api/download', plainId)).toMatchObject({
      status: 200,
      body: 'from data/artifacts/',
    });
    expect(existsSync(join(plain.dir, 'data', 'artifacts', 'keys.json'))).toBe(true);
  });

  proves(
    ['artifacts.keys[].id', 'artifacts.keys[].keyFile', 'artifacts.keys[].keyEnv'],
    'artifacts.keys: the keys from a file and from a variable verify ids signed with them, by id',
    async () => {
      const fromFile = await publish(downloads, 'files', keyed('file-key', FILE_SECRET), 'file key');
      const fromEnv = await publish(downloads, 'files', keyed('env-key', ENV_SECRET), 'env key');
      expect(await download(downloads, '/files', fromFile)).toMatchObject({ status: 200, body: 'file key' });
      expect(await download(downloads, '/files', fromEnv)).toMatchObject({ status: 200, body: 'env key' });
      // The right secret under another id, and the right id with another secret: refused.
      const grant = fromFile.split('.')[0] as string;
      for (const keyring of [
        keyed('env-key', FILE_SECRET),
        keyed('other', FILE_SECRET),
        keyed('file-key', ENV_SECRET),
      ]) {
        const forged = signDownloadId(grant, Date.now() + 60_000, keyring);
        expect(await download(downloads, '/files', forged)).toMatchObject({
          status: 403,
          code: 'DOWNLOAD_SIGNATURE_INVALID',
        });
      }
      // A gateway with generated keys does not know them.
      expect((await download(plain, '/api/download', fromFile)).code).toBe('DOWNLOAD_SIGNATURE_INVALID');
    },
  );

  proves(
    ['artifacts.ttlMs'],
    'artifacts.ttlMs is how long a rotated-out key keeps verifying the links it signed',
    async () => {
      // A key retired two hours ago: past the default hour, within kept's three.
      const retired = { id: 'kold', secret: 'r'.repeat(43) };
      for (const gateway of [plain, kept]) {
        const file = join(gateway.dir, 'data', 'artifacts', 'keys.json');
        mkdirSync(join(gateway.dir, 'data', 'artifacts'), { recursive: true });
        const stored = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : { keys: [] };
        stored.keys.push({
          id: retired.id,
          secret: Buffer.from(retired.secret).toString('base64url'),
          created_at: new Date(Date.now() - 5 * 3_600_000).toISOString(),
          retired_at: new Date(Date.now() - 2 * 3_600_000).toISOString(),
        });
        writeFileSync(file, JSON.stringify(stored), { mode: 0o600 });
      }
      const id = signDownloadId('a'.repeat(32), Date.now() + 60_000, keyed(retired.id, retired.secret));
      // Verified, so the store is asked (and knows no such grant) ...
      expect((await download(kept, '/api/download', id)).code).toBe('DOWNLOAD_NOT_FOUND');
      // ... where at the default the key is pruned and the id refused.
      expect((await download(plain, '/api/download', id)).code).toBe('DOWNLOAD_SIGNATURE_INVALID');
    },
  );

  /** `large_text` of `bytes` characters over HTTP, asking for a download link. */
  async function largeText(gateway: HttpGateway, bytes: number): Promise<CallToolResult> {
    const client = await sdkClient(gateway.url);
    try {
      return (await client.callTool({
        name: 'large_text',
        arguments: { bytes },
        _meta: { return_mode: 'url' },
      })) as CallToolResult;
    } finally {
      await client.close();
    }
  }

  proves(['artifacts.publicUrl'], 'artifacts.publicUrl starts the download links', async () => {
    const behind = resultOf<{ download_url: string }>(await largeText(downloads, 10_000)).download_url;
    expect(behind).toMatch(/^https:\/\/downloads\.test\/base\/files\?id=/);
    // The proxy's address mapped back to the gateway's: the link works.
    const served = await fetch(behind.replace('https://downloads.test/base', new URL(downloads.url).origin));
    expect([served.status, (await served.text()).length]).toEqual([200, 10_000]);
    // By default, links start with the listener's own address.
    const own = resultOf<{ download_url: string }>(await largeText(kept, 2_000_000)).download_url;
    expect(own.startsWith(`${new URL(kept.url).origin}/api/download?id=`)).toBe(true);
  });

  proves(['artifacts.maxBytes'], 'artifacts.maxBytes is the largest artifact stored', async () => {
    // 100 KB: over downloads' 64 KiB, refused; 2 MB at the default (256 MiB): stored.
    expect(errorOf(await largeText(downloads, 100_000))?.code).toBe('TOO_LARGE');
    expect(resultOf<{ size_bytes: number }>(await largeText(kept, 2_000_000)).size_bytes).toBe(2_000_000);
  });
});

// ---------------------------------------------------------------------------
// Signing: a gateway per way of giving the key, against `plain`, which has none

describe('signing', () => {
  let keys: string;
  let fromFile: StdioGateway;
  let fromEnv: StdioGateway;
  const signingConfig = (signing: Record<string, string>) => ({
    upstreams: [probe('probe')],
    ledger: { enabled: false },
    logs: { enabled: false },
    signing,
  });

  beforeAll(async () => {
    keys = folder('keys');
    const keygen = await runCli(['keygen', '--out', join(keys, 'gateway')]);
    expect(keygen.code, keygen.stderr).toBe(0);
    const fileDir = folder('signing-file');
    // Relative to the configuration's folder, not the working directory (the repository).
    mkdirSync(join(fileDir, 'keys'));
    writeFileSync(join(fileDir, 'keys', 'gw.pem'), readFileSync(join(keys, 'gateway.private.pem')), {
      mode: 0o600,
    });
    const started = await Promise.allSettled([
      startStdio(fileDir, signingConfig({ keyFile: 'keys/gw.pem' })).then((gateway) => {
        fromFile = gateway;
      }),
      startStdio(folder('signing-env'), signingConfig({ keyEnv: 'EVERY_SETTING_SIGNING_KEY' }), {
        EVERY_SETTING_SIGNING_KEY: readFileSync(join(keys, 'gateway.private.pem'), 'utf8'),
      }).then((gateway) => {
        fromEnv = gateway;
      }),
    ]);
    const failed = started.find((start) => start.status === 'rejected');
    if (failed) throw failed.reason;
  }, 60_000);

  /** The envelope of an echo with provenance, checked by `mcp-envelope verify --public-key`: its exit code. */
  async function verifiedUnderKey(answer: CallToolResult, name: string): Promise<number> {
    const file = join(keys, `${name}.json`);
    writeFileSync(file, JSON.stringify(answer.structuredContent));
    return (await runCli(['verify', file, '--public-key', join(keys, 'gateway.public.pem')])).code;
  }

  const signatureOf = (answer: CallToolResult) =>
    (answer.structuredContent as { provenance?: { integrity?: { signature?: unknown } } }).provenance
      ?.integrity?.signature;

  proves(['signing.keyFile'], 'signing.keyFile signs every record with the key in that file', async () => {
    const signed = await fromFile.call('echo', { text: 'signed' }, { capture_provenance: true });
    expect(signatureOf(signed)).toMatchObject({ alg: 'ed25519' });
    expect(await verifiedUnderKey(signed, 'from-file')).toBe(0);
    // Without the setting, records carry no signature, and a key asks for one.
    const client = await sdkClient(plain.url);
    try {
      const unsigned = (await client.callTool({
        name: 'echo',
        arguments: { text: 'unsigned' },
        _meta: { capture_provenance: true },
      })) as CallToolResult;
      expect(signatureOf(unsigned)).toBeUndefined();
      expect(await verifiedUnderKey(unsigned, 'unsigned')).toBe(1);
    } finally {
      await client.close();
    }
  });

  proves(['signing.keyEnv'], 'signing.keyEnv signs every record with the key in that variable', async () => {
    const signed = await fromEnv.call('echo', { text: 'signed' }, { capture_provenance: true });
    expect(signatureOf(signed)).toMatchObject({ alg: 'ed25519' });
    expect(await verifiedUnderKey(signed, 'from-env')).toBe(0);
    await Promise.all([fromFile.stop(), fromEnv.stop()]);
    // The key's text is never written where the operator's terminal would show it.
    const body = readFileSync(join(keys, 'gateway.private.pem'), 'utf8').split('\n')[1] as string;
    expect(fromEnv.text() + fromFile.text()).not.toContain(body);
  });
});

describe('ledger.checkpointIntervalMs', () => {
  /** The tree sizes of the checkpoints kept in a ledger file, oldest first. */
  const checkpointSizes = (file: string): number[] => {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      return (
        db.prepare('SELECT tree_size FROM log_checkpoints ORDER BY id').all() as { tree_size: number }[]
      ).map((row) => Number(row.tree_size));
    } finally {
      db.close();
    }
  };

  proves(
    ['ledger.checkpointIntervalMs'],
    'ledger.checkpointIntervalMs: with signing, the log is checkpointed as it grows and when the gateway stops',
    async () => {
      const keys = folder('checkpoint-keys');
      const keygen = await runCli(['keygen', '--out', join(keys, 'gateway')]);
      expect(keygen.code, keygen.stderr).toBe(0);
      const configFor = (interval?: number) => ({
        upstreams: [probe('probe')],
        logs: { enabled: false },
        ledger: {
          path: 'ledger.sqlite',
          ...(interval === undefined ? {} : { checkpointIntervalMs: interval }),
        },
        signing: { keyEnv: 'EVERY_SETTING_CHECKPOINT_KEY' },
      });
      const env = { EVERY_SETTING_CHECKPOINT_KEY: readFileSync(join(keys, 'gateway.private.pem'), 'utf8') };
      const [frequent, usual] = await Promise.all([
        startStdio(folder('checkpoints-frequent'), configFor(1000), env),
        startStdio(folder('checkpoints-usual'), configFor(), env),
      ]);
      for (const gateway of [frequent, usual])
        await gateway.call('echo', { text: 'logged' }, { capture_provenance: true });
      // Every second, the frequent one checkpoints the entry it logged (bounded wait for another process).
      const frequentFile = join(frequent.dir, 'ledger.sqlite');
      for (let attempt = 0; attempt < 100 && !checkpointSizes(frequentFile).includes(1); attempt++)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(checkpointSizes(frequentFile)).toContain(1);
      // The default (a minute) has not come round: only the gateway's stop writes one.
      const usualFile = join(usual.dir, 'ledger.sqlite');
      expect(checkpointSizes(usualFile)).toEqual([]);
      await Promise.all([frequent.stop(), usual.stop()]);
      expect(checkpointSizes(usualFile)).toEqual([1]);
      const verified = await runCli([
        'ledger',
        'verify',
        '--db',
        usualFile,
        '--public-key',
        join(keys, 'gateway.public.pem'),
      ]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    },
  );
});

// ---------------------------------------------------------------------------
// Rate limits: one gateway with a rule per way of scoping a bucket, two callers
// (bearer tokens A and B). Buckets keep their state from case to case, in order.

describe('rateLimits', () => {
  const RATE_META = 'mcp-envelope/rate_limit';
  const LONG = 600_000;
  /** Long enough that two calls made one after the other fall in one window, even on a loaded machine. */
  const QUICK_MS = 4000;
  interface RateInfo {
    limit: number;
    remaining: number;
    reset_at: string;
    bucket: string;
  }
  let metered: HttpGateway;
  let a: Client;
  let b: Client;

  beforeAll(async () => {
    metered = await startHttp(folder('rate-limits'), {
      upstreams: [probe('metered'), probe('spare')],
      listen: { stdio: false, http: { port: 0 } },
      auth: {
        tokens: [
          { token: A_TOKEN, tier: 'pro' },
          { token: B_TOKEN, tier: 'pro' },
        ],
      },
      ledger: { enabled: false },
      logs: { enabled: false },
      rateLimits: [
        // Per caller (the default), every tool of one upstream.
        { bucket: 'metered:calls', limit: 2, windowMs: LONG, upstream: 'metered' },
        // One bucket for every caller, one tool of every upstream.
        { bucket: 'headers:everyone', limit: 1, windowMs: LONG, per: 'global', tool: 'headers' },
        // One call a second.
        { bucket: 'whoami:quick', limit: 1, windowMs: QUICK_MS, upstream: 'spare', tool: 'whoami' },
      ],
    });
    [a, b] = await Promise.all([sdkClient(metered.url, A_TOKEN), sdkClient(metered.url, B_TOKEN)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
    client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
  /** The binding bucket's metadata: prov-v0.1 puts it in `_meta` on a success, in the error's details on a denial. */
  const rateOf = (result: CallToolResult) =>
    (result.isError ? errorOf(result)?.details : result._meta?.[RATE_META]) as RateInfo | undefined;

  proves(
    ['rateLimits[].limit', 'rateLimits[].upstream'],
    'rateLimits[].limit admits that many calls, then RATE_LIMITED; .upstream counts only its upstream',
    async () => {
      const admitted = [await call(a, 'metered__echo', { text: 'first' }), await call(a, 'metered__whoami')];
      expect(resultOf(admitted[0])).toBe('first');
      expect(admitted.map((result) => rateOf(result)?.remaining)).toEqual([1, 0]);
      expect(rateOf(admitted[0] as CallToolResult)?.limit).toBe(2);
      const denied = await call(a, 'metered__echo', { text: 'third' });
      expect(denied.isError).toBe(true);
      expect(errorOf(denied)).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
      // The same tools of another upstream: no rule applies, nothing is counted or said.
      for (const text of ['one', 'two', 'three']) {
        const free = await call(a, 'spare__echo', { text });
        expect(resultOf(free)).toBe(text);
        expect(rateOf(free)).toBeUndefined();
      }
    },
  );

  proves(
    ['rateLimits[].per'],
    'rateLimits[].per: a bucket per bearer token by default, one shared by every caller when global',
    async () => {
      // A has emptied its metered:calls bucket (above); B's is its own.
      const own = await call(b, 'metered__echo', { text: 'b' });
      expect(resultOf(own)).toBe('b');
      expect(rateOf(own)).toMatchObject({ bucket: 'metered:calls', remaining: 1 });
      expect(errorOf(await call(a, 'metered__echo', { text: 'a' }))?.code).toBe('RATE_LIMITED');
      // Global: A's call takes the one call B would have had.
      expect(rateOf(await call(a, 'spare__headers'))).toMatchObject({
        bucket: 'headers:everyone',
        remaining: 0,
      });
      const shared = await call(b, 'spare__headers');
      expect(errorOf(shared)?.code).toBe('RATE_LIMITED');
      expect(rateOf(shared)?.bucket).toBe('headers:everyone');
    },
  );

  proves(
    ['rateLimits[].tool'],
    'rateLimits[].tool counts only calls of that tool, on every upstream when none is named',
    async () => {
      // headers:everyone is empty (above): headers is refused on the other upstream too ...
      const other = await call(b, 'metered__headers');
      expect(errorOf(other)?.code).toBe('RATE_LIMITED');
      expect(rateOf(other)?.bucket).toBe('headers:everyone');
      // ... while another tool of the same upstream is not counted.
      const echo = await call(b, 'spare__echo', { text: 'still' });
      expect(resultOf(echo)).toBe('still');
      expect(rateOf(echo)).toBeUndefined();
    },
  );

  proves(
    ['rateLimits[].windowMs'],
    'rateLimits[].windowMs is how long a bucket takes to refill',
    async () => {
      const before = Date.now();
      const quick = await call(a, 'spare__whoami');
      const after = Date.now();
      // Full again one window after the call.
      const full = Date.parse(rateOf(quick)?.reset_at as string);
      expect(full - before).toBeGreaterThanOrEqual(QUICK_MS);
      expect(full - after).toBeLessThanOrEqual(QUICK_MS);
      const denied = await call(a, 'spare__whoami');
      expect(errorOf(denied)?.code).toBe('RATE_LIMITED');
      // Waiting until the denial's reset_at, the bucket has refilled: the retry gets in.
      const retried = await callToolWithRetry(a, { name: 'spare__whoami', arguments: {} });
      expect(retried.ok).toBe(true);
      // metered:calls refills over ten minutes: its reset_at is further away than the 30 s a retry waits.
      const stuck = await callToolWithRetry(a, { name: 'metered__whoami', arguments: {} });
      expect(stuck.ok).toBe(false);
      expect(stuck.attempts).toBe(1);
      expect(Date.parse(rateOf(stuck.result)?.reset_at as string) - Date.now()).toBeGreaterThan(60_000);
    },
  );

  proves(
    ['rateLimits[].bucket'],
    "rateLimits[].bucket names the bucket in an answer's rate metadata",
    async () => {
      const answers = [
        await call(b, 'metered__whoami'),
        await call(b, 'spare__whoami'),
        await call(b, 'spare__headers'),
        await call(b, 'spare__echo', { text: 'x' }),
      ];
      expect(answers.map((answer) => [answer.isError ?? false, rateOf(answer)?.bucket])).toEqual([
        [false, 'metered:calls'],
        [false, 'whoami:quick'],
        [true, 'headers:everyone'],
        // No rule applies: no bucket to name.
        [false, undefined],
      ]);
    },
  );
});

describe('return modes (artifacts.inlineMaxBytes, artifacts.defaultReturnMode)', () => {
  const BINARY = fileURLToPath(new URL('../fixtures/servers/binary.ts', import.meta.url));
  const files = { name: 'files', stdio: { command: 'node', args: [BINARY] } };
  /** Everything at its default; and both settings away from theirs. */
  let defaulted: StdioGateway;
  let varied: StdioGateway;

  beforeAll(async () => {
    [defaulted, varied] = await Promise.all([
      startStdio(folder('artifacts-defaults'), { upstreams: [files] }),
      startStdio(folder('artifacts-varied'), {
        upstreams: [files],
        artifacts: { inlineMaxBytes: 1000, defaultReturnMode: 'base64' },
      }),
    ]);
  }, 60_000);

  /** The envelope's result: the tool's content blocks (the image's replaced by a descriptor's text, or not). */
  const payload = (result: CallToolResult) => resultOf<{ type: string; text?: string }[]>(result);

  proves(
    ['artifacts.inlineMaxBytes'],
    'artifacts.inlineMaxBytes stores a larger text as an artifact',
    async () => {
      const asked = { return_mode: 'url' };
      // 4000 characters: within the default 1 MiB, over 1000.
      expect(resultOf(await defaulted.call('large_text', { bytes: 4000 }, asked))).toBe('x'.repeat(4000));
      const stored = resultOf<{ return_mode: string; size_bytes: number; content_type: string }>(
        await varied.call('large_text', { bytes: 4000 }, asked),
      );
      // Over stdio there is no download URL: `url` falls back to mcp_resource.
      expect(stored).toMatchObject({
        return_mode: 'mcp_resource',
        size_bytes: 4000,
        content_type: 'text/plain',
      });
      expect(resultOf(await varied.call('large_text', { bytes: 900 }, asked))).toBe('x'.repeat(900));
    },
  );

  proves(
    ['artifacts.defaultReturnMode'],
    'artifacts.defaultReturnMode is the mode of an oversized result whose caller names none',
    async () => {
      // A caller that names no mode keeps a small image inline, whatever the default.
      expect(payload(await defaulted.call('image'))[1]).toMatchObject({ type: 'image' });
      // Over the default 1 MiB: stored, in the default mode (url, which stdio serves as mcp_resource).
      const stored = resultOf<{ return_mode: string }>(
        await defaulted.call('large_text', { bytes: 1_100_000 }),
      );
      expect(stored).toMatchObject({ return_mode: 'mcp_resource' });
      // Over this gateway's 1000, with base64 as its default: left inline.
      expect(resultOf(await varied.call('large_text', { bytes: 4000 }))).toBe('x'.repeat(4000));
    },
  );
});

// ---------------------------------------------------------------------------
// OAuth: gateways that are resource servers of a real authorization server (oidc-provider).
// `configured` has most settings away from their defaults, `oauthDefaults` has the contrast (and a
// resource and default tier of its own), `tenant` an issuer without metadata and DPoP required,
// `eddsa` other algorithms.

describe('auth.oauth', () => {
  const AUDIENCE = 'urn:mcp-envelope:every-setting';
  const RESOURCE = 'http://mcp.example.test/mcp';
  let as: AuthServer;
  let configured: HttpGateway;
  let oauthDefaults: HttpGateway;
  let tenant: HttpGateway;
  let eddsa: HttpGateway;
  const gated = { tools: { whoami: 'pro' } };
  const inSeconds = (seconds: number): number => Math.floor(Date.now() / 1000) + seconds;

  beforeAll(async () => {
    as = await startAuthServer();
    stops.push(() => as.close());
    const http = { stdio: false, http: { port: 0 } };
    const quiet = { ledger: { enabled: false }, logs: { enabled: false }, artifacts: { enabled: false } };
    [configured, oauthDefaults, tenant, eddsa] = await Promise.all([
      startHttp(
        folder('oauth-configured'),
        {
          upstreams: [probe('probe')],
          listen: http,
          auth: {
            oauth: {
              issuer: as.issuer,
              audience: AUDIENCE,
              requiredScopes: ['mcp:tools'],
              ledgerScope: 'mcp:ledger',
              tiers: [{ scope: 'mcp:pro', tier: 'pro' }],
              clockSkewSeconds: 0,
              introspection: {
                endpoint: `${as.issuer}${INTROSPECTION_ALIAS}`,
                clientId: GATEWAY_CLIENT_ID,
                clientSecretEnv: 'EVERY_SETTING_INTROSPECTION_SECRET',
              },
            },
          },
          tiers: gated,
          ...quiet,
          ledger: { enabled: true, path: 'ledger.sqlite' },
        },
        { EVERY_SETTING_INTROSPECTION_SECRET: GATEWAY_CLIENT_SECRET },
      ),
      startHttp(folder('oauth-defaults'), {
        upstreams: [probe('probe')],
        listen: http,
        auth: { oauth: { issuer: as.issuer, resource: RESOURCE, defaultTier: 'pro' } },
        tiers: gated,
        ...quiet,
        ledger: { enabled: true, path: 'ledger.sqlite' },
      }),
      startHttp(folder('oauth-tenant'), {
        upstreams: [probe('probe')],
        listen: http,
        auth: { oauth: { issuer: `${as.issuer}/tenant`, jwksUri: `${as.issuer}/jwks`, dpop: 'required' } },
        ...quiet,
      }),
      startHttp(folder('oauth-eddsa'), {
        upstreams: [probe('probe')],
        listen: http,
        auth: { oauth: { issuer: as.issuer, algorithms: ['EdDSA'] } },
        ...quiet,
      }),
    ]);
  });

  /** The status and error code of an initialize with `headers`. */
  async function refusalOf(
    url: string,
    headers: Record<string, string>,
  ): Promise<[number, string | undefined]> {
    const answer = await initialize(url, headers);
    if (answer.status === 200) {
      await answer.text();
      return [200, undefined];
    }
    return [answer.status, ((await answer.json()) as { error: { code: string } }).error.code];
  }

  proves(
    ['auth.oauth.issuer', 'auth.oauth.audience', 'auth.oauth.requiredScopes'],
    'auth.oauth.issuer, audience and requiredScopes decide which access tokens are accepted',
    async () => {
      const token = (claims: Record<string, unknown>) =>
        as.sign({ aud: AUDIENCE, sub: 'alice', scope: 'mcp:tools', exp: inSeconds(300), ...claims });
      // The configured audience is accepted beside the resource; the default gateway wants its resource.
      expect(await refusalOf(configured.url, bearer(await token({})))).toEqual([200, undefined]);
      expect(await refusalOf(oauthDefaults.url, bearer(await token({})))).toEqual([401, 'TOKEN_AUDIENCE']);
      expect(await refusalOf(configured.url, bearer(await token({ aud: configured.url })))).toEqual([
        200,
        undefined,
      ]);
      // Another issuer's token, signed with the same key, is not this issuer's.
      expect(await refusalOf(configured.url, bearer(await token({ iss: `${as.issuer}/other` })))).toEqual([
        401,
        'TOKEN_ISSUER',
      ]);
      // Without the required scope: 403 here, accepted where no scope is required.
      const unscoped = await token({ scope: 'mcp:read' });
      const refused = await initialize(configured.url, bearer(unscoped));
      expect(refused.status).toBe(403);
      expect(refused.headers.get('www-authenticate')).toContain('error="insufficient_scope", ');
      expect(refused.headers.get('www-authenticate')).toContain('scope="mcp:tools"');
      await refused.text();
      expect(
        await refusalOf(oauthDefaults.url, bearer(await token({ aud: RESOURCE, scope: 'mcp:read' }))),
      ).toEqual([200, undefined]);
    },
  );

  proves(
    ['auth.oauth.ledgerScope'],
    "auth.oauth.ledgerScope opens the ledger's pages to access tokens carrying it; unset, only static tokens do",
    async () => {
      const pages = async (url: string, token: string) => {
        const answer = await fetch(new URL('/ledger', url), { headers: bearer(token) });
        await answer.text();
        return answer.status;
      };
      const token = (aud: string, scope: string) =>
        as.sign({ aud, sub: 'auditor', scope, exp: inSeconds(300) });
      expect(await pages(configured.url, await token(configured.url, 'mcp:tools mcp:ledger'))).toBe(200);
      // The scopes every request needs are still needed, and the ledger's scope is.
      expect(await pages(configured.url, await token(configured.url, 'mcp:tools'))).toBe(401);
      expect(await pages(configured.url, await token(configured.url, 'mcp:ledger'))).toBe(401);
      // Unset: no access token opens them, whatever its scopes.
      expect(await pages(oauthDefaults.url, await token(RESOURCE, 'mcp:tools mcp:ledger'))).toBe(401);
    },
  );

  proves(
    ['auth.oauth.resource'],
    'auth.oauth.resource is the resource of the metadata and the audience tokens need',
    async () => {
      const metadataOf = async (url: string) =>
        (await (await fetch(new URL('/.well-known/oauth-protected-resource/mcp', url))).json()) as {
          resource: string;
        };
      expect((await metadataOf(oauthDefaults.url)).resource).toBe(RESOURCE);
      // By default, the URL the gateway listens on.
      expect((await metadataOf(configured.url)).resource).toBe(configured.url);
      const forResource = await as.sign({ aud: RESOURCE, sub: 'alice', exp: inSeconds(300) });
      expect(await refusalOf(oauthDefaults.url, bearer(forResource))).toEqual([200, undefined]);
      const forUrl = await as.sign({ aud: oauthDefaults.url, sub: 'alice', exp: inSeconds(300) });
      expect(await refusalOf(oauthDefaults.url, bearer(forUrl))).toEqual([401, 'TOKEN_AUDIENCE']);
    },
  );

  proves(
    ['auth.oauth.tiers[].scope', 'auth.oauth.tiers[].tier', 'auth.oauth.defaultTier'],
    "auth.oauth.tiers give a token's tier by its scopes, defaultTier when none matches",
    async () => {
      const [pro, plain, defaulted] = await Promise.all([
        as.sign({ aud: configured.url, sub: 'alice', scope: 'mcp:tools mcp:pro', exp: inSeconds(300) }),
        as.sign({ aud: configured.url, sub: 'bob', scope: 'mcp:tools', exp: inSeconds(300) }),
        as.sign({ aud: RESOURCE, sub: 'carol', exp: inSeconds(300) }),
      ]);
      const clients = await Promise.all([
        sdkClient(configured.url, pro),
        sdkClient(configured.url, plain),
        sdkClient(oauthDefaults.url, defaulted),
      ]);
      try {
        const [asPro, asPlain, asDefaulted] = await Promise.all(
          clients.map((client) => client.callTool({ name: 'whoami', arguments: {} })),
        );
        expect(resultOf<Facts>(asPro).pid).toBeTypeOf('number');
        // No tier scope: the anonymous tier by default, below the gate.
        expect(errorOf(asPlain)?.code).toBe('UPGRADE_REQUIRED');
        // defaultTier pro: through the gate without a tier scope.
        expect(resultOf<Facts>(asDefaulted).pid).toBeTypeOf('number');
      } finally {
        await Promise.all(clients.map((client) => client.close()));
      }
    },
  );

  proves(
    ['auth.oauth.clockSkewSeconds'],
    'auth.oauth.clockSkewSeconds is how long past exp a token is still accepted',
    async () => {
      const lately = (aud: string) => as.sign({ aud, sub: 'alice', scope: 'mcp:tools', exp: inSeconds(-10) });
      expect(await refusalOf(configured.url, bearer(await lately(configured.url)))).toEqual([
        401,
        'TOKEN_EXPIRED',
      ]);
      expect(await refusalOf(oauthDefaults.url, bearer(await lately(RESOURCE)))).toEqual([200, undefined]);
    },
  );

  proves(
    ['auth.oauth.algorithms'],
    'auth.oauth.algorithms are the only signature algorithms accepted',
    async () => {
      const es256 = (aud: string) => as.sign({ aud, sub: 'alice', exp: inSeconds(300) });
      expect(await refusalOf(eddsa.url, bearer(await es256(eddsa.url)))).toEqual([401, 'TOKEN_ALGORITHM']);
      expect(await refusalOf(oauthDefaults.url, bearer(await es256(RESOURCE)))).toEqual([200, undefined]);
    },
  );

  proves(
    ['auth.oauth.jwksUri', 'auth.oauth.dpop'],
    'auth.oauth.jwksUri is where the keys are when the issuer publishes no metadata; dpop required wants bound tokens',
    async () => {
      // No metadata under the tenant issuer: only the configured key set can check its tokens.
      expect((await fetch(`${as.issuer}/tenant/.well-known/openid-configuration`)).status).toBe(404);
      const key = await dpopKey();
      const claims = { iss: `${as.issuer}/tenant`, aud: tenant.url, sub: 'alice', exp: inSeconds(300) };
      const bound = await as.sign({ ...claims, cnf: { jkt: key.jkt } });
      const proof = await dpopProof(key, bound, { htu: tenant.url });
      expect(await refusalOf(tenant.url, { authorization: `DPoP ${bound}`, dpop: proof })).toEqual([
        200,
        undefined,
      ]);
      // A bearer token where DPoP is required; accepted where it is off (the default).
      expect(await refusalOf(tenant.url, bearer(await as.sign(claims)))).toEqual([401, 'DPOP_INVALID']);
      const plain = await as.sign({ ...claims, iss: as.issuer, aud: RESOURCE });
      expect(await refusalOf(oauthDefaults.url, bearer(plain))).toEqual([200, undefined]);
      expect(await refusalOf(oauthDefaults.url, { authorization: `DPoP ${plain}`, dpop: proof })).toEqual([
        401,
        'DPOP_INVALID',
      ]);
    },
  );

  proves(
    [
      'auth.oauth.introspection.endpoint',
      'auth.oauth.introspection.clientId',
      'auth.oauth.introspection.clientSecretEnv',
    ],
    'auth.oauth.introspection checks opaque tokens at the endpoint configured, with the gateway client',
    async () => {
      as.resource = configured.url;
      as.format = 'opaque';
      let token: string;
      try {
        token = (await as.clientCredentials('mcp:tools')).access_token as string;
      } finally {
        as.format = 'jwt';
      }
      expect(token.includes('.')).toBe(false);
      const before = as.requests.filter((path) => path === INTROSPECTION_ALIAS).length;
      expect(await refusalOf(configured.url, bearer(token))).toEqual([200, undefined]);
      expect(as.requests.filter((path) => path === INTROSPECTION_ALIAS).length).toBe(before + 1);
      // Without introspection an opaque token is not one the gateway can read.
      expect(await refusalOf(oauthDefaults.url, bearer(token))).toEqual([401, 'UNAUTHORIZED']);
    },
  );
});

// ---------------------------------------------------------------------------
// Telemetry: one gateway with every telemetry setting away from its default,
// exporting to an OTLP/HTTP receiver in this process; `plain` is at the defaults.

describe('telemetry', () => {
  interface Export {
    path: string;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }
  const exports: Export[] = [];
  const arrivals = new Set<() => void>();
  let receiverUrl: string;
  let traced: HttpGateway;

  /** Settles once the exports received satisfy `done`, checked at each arrival. */
  function exportsUntil(done: (received: Export[]) => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (!done(exports)) return;
        arrivals.delete(check);
        resolve();
      };
      arrivals.add(check);
      check();
    });
  }

  beforeAll(async () => {
    const receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => {
        body += chunk;
      });
      req.on('end', () => {
        exports.push({ path: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        for (const check of [...arrivals]) check();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    stops.push(
      () =>
        new Promise((resolve) => {
          receiver.closeAllConnections();
          receiver.close(resolve);
        }),
    );
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    traced = await startHttp(
      folder('telemetry'),
      {
        upstreams: [probe('probe')],
        listen: { stdio: false, http: { port: 0 } },
        ledger: { enabled: false },
        logs: { enabled: false },
        telemetry: {
          serviceName: 'every-setting-service',
          // No trace the gateway starts itself is recorded; a caller's sampled one is.
          traces: { enabled: true, sampleRatio: 0 },
          metrics: { prometheus: true, otlp: true, exportIntervalMs: 200 },
          otlp: {
            endpoint: receiverUrl,
            headers: { 'x-static': 'configured' },
            headersFromEnv: { 'x-secret': 'EVERY_SETTING_OTLP_SECRET' },
          },
        },
      },
      { EVERY_SETTING_OTLP_SECRET: 'from-the-environment' },
    );
    const client = await sdkClient(traced.url);
    await client.callTool({
      name: 'echo',
      arguments: { text: 'traced' },
      _meta: { traceparent: `00-${SAMPLED_TRACE}-00f067aa0ba902b7-01` },
    });
    // No trace context: the gateway starts the trace, and at sampleRatio 0 records none of it.
    await client.callTool({ name: 'echo', arguments: { text: 'not sampled' } });
    await client.callTool({
      name: 'echo',
      arguments: { text: 'traced last' },
      _meta: { traceparent: `00-${LAST_TRACE}-00f067aa0ba902b7-01` },
    });
    await client.close();
    // The spans of those calls, exported within the batch delay, in the order they ended.
    await exportsUntil((received) => received.some((entry) => entry.body.includes(LAST_TRACE)));
  }, 60_000);

  const SAMPLED_TRACE = '5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a';
  const LAST_TRACE = '6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b';

  const traceExport = () => exports.find((entry) => entry.path === '/v1/traces') as Export;

  proves(
    ['telemetry.traces.enabled', 'telemetry.otlp.endpoint'],
    'telemetry.traces.enabled exports a span per call to <otlp.endpoint>/v1/traces',
    async () => {
      expect(traceExport().body).toContain('"name":"tools/call echo"');
      // At its defaults (`plain`) the gateway has no telemetry: no /metrics, nothing exported anywhere.
      expect(await statusOf(fetch(new URL('/metrics', plain.url)))).toBe(404);
    },
  );

  proves(
    ['telemetry.traces.sampleRatio'],
    'telemetry.traces.sampleRatio 0 records no trace the gateway starts, and every trace a caller sampled',
    async () => {
      const roots = exports
        .filter((entry) => entry.path === '/v1/traces')
        .flatMap(
          (entry) =>
            (
              JSON.parse(entry.body) as {
                resourceSpans: {
                  scopeSpans: { spans: { name: string; kind: number; traceId: string }[] }[];
                }[];
              }
            ).resourceSpans,
        )
        .flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))
        .filter((span) => span.name === 'tools/call echo' && span.kind === 2);
      expect(roots.map((span) => span.traceId)).toEqual([SAMPLED_TRACE, LAST_TRACE]);
    },
  );

  proves(['telemetry.serviceName'], 'telemetry.serviceName names the exported service', async () => {
    expect(traceExport().body).toContain('"stringValue":"every-setting-service"');
  });

  proves(['telemetry.otlp.headers'], 'telemetry.otlp.headers are sent with every export', async () => {
    expect(traceExport().headers['x-static']).toBe('configured');
  });

  proves(
    ['telemetry.otlp.headersFromEnv'],
    'telemetry.otlp.headersFromEnv sends a header read from the environment',
    async () => {
      expect(traceExport().headers['x-secret']).toBe('from-the-environment');
    },
  );

  proves(
    ['telemetry.metrics.prometheus'],
    'telemetry.metrics.prometheus serves /metrics (no token required here, as configured)',
    async () => {
      const answer = await fetch(new URL('/metrics', traced.url));
      expect(answer.status).toBe(200);
      // Every call is counted, whether or not its trace was recorded.
      expect(await answer.text()).toMatch(/^mcp_envelope_gateway_calls_total\{[^}]*tool="echo"[^}]*\} 3$/m);
    },
  );

  proves(
    ['telemetry.metrics.otlp', 'telemetry.metrics.exportIntervalMs'],
    'telemetry.metrics.otlp exports metrics to /v1/metrics every exportIntervalMs',
    async () => {
      // Two exports while the gateway runs: at the default interval (60 s) the first would not yet have come.
      await exportsUntil((received) => received.filter((entry) => entry.path === '/v1/metrics').length >= 2);
      // The latest is cumulative: it counts the call made before the span's export was awaited.
      const metrics = exports.filter((entry) => entry.path === '/v1/metrics').at(-1) as Export;
      expect(metrics.body).toContain('"name":"mcp_envelope.gateway.calls"');
    },
  );
});

// ---------------------------------------------------------------------------
// Authorization per identity: `ruled` denies by default and names its callers
// every way a rule can; `lenient` keeps the default (allow) with one deny.

describe('access', () => {
  const SCOPED_TOKEN = 'scoped-token-0123456789abcdef';
  const PLAIN_TOKEN = 'plain-token-0123456789abcdef';
  let as: AuthServer;
  let ruled: HttpGateway;
  let lenient: HttpGateway;
  const inSeconds = (seconds: number): number => Math.floor(Date.now() / 1000) + seconds;
  const PROBE_TOOLS = ['artifact_store', 'bad_output', 'echo', 'headers', 'parent', 'slow', 'wait', 'whoami'];

  beforeAll(async () => {
    as = await startAuthServer();
    stops.push(() => as.close());
    const quiet = { ledger: { enabled: false }, logs: { enabled: false }, artifacts: { enabled: false } };
    [ruled, lenient] = await Promise.all([
      startHttp(folder('access-ruled'), {
        upstreams: [probe('probe')],
        listen: { stdio: false, http: { port: 0 } },
        auth: {
          required: false,
          tokens: [
            { name: 'scoped', token: SCOPED_TOKEN, tier: 'community', scopes: ['ops'] },
            { name: 'plain', token: PLAIN_TOKEN, tier: 'community' },
            { name: 'pro', token: PRO_TOKEN, tier: 'pro' },
          ],
          oauth: { issuer: as.issuer, tiers: [{ claims: { org_role: 'admin' }, tier: 'enterprise' }] },
        },
        access: {
          rules: [
            { name: 'scoped', when: { scopes: ['ops'] }, allow: ['probe/headers'] },
            { when: { claims: { team: 'blue' } }, allow: ['probe/wait'] },
            { name: 'pro', when: { tier: 'pro' }, allow: ['probe/slow'] },
            { name: 'exact', when: { tier: { exactly: 'community' } }, deny: ['probe/bad_output'] },
            { name: 'by-token', when: { token: 'plain' }, allow: ['probe/parent'] },
            { name: 'by-issuer', when: { issuer: as.issuer }, allow: ['probe/artifact_store'] },
            { name: 'signed-in', when: { anonymous: false }, allow: ['probe/echo'] },
            { name: 'everyone', allow: ['probe/whoami', 'probe/bad_output'] },
          ],
          default: 'deny',
        },
        ...quiet,
      }),
      startHttp(folder('access-lenient'), {
        upstreams: [probe('probe')],
        listen: { stdio: false, http: { port: 0 } },
        access: { rules: [{ deny: ['probe/parent'] }] },
        ...quiet,
      }),
    ]);
  });

  async function toolsOf(url: string, token?: string): Promise<string[]> {
    const client = await sdkClient(url, token);
    try {
      return (await client.listTools()).tools.map((tool) => tool.name).sort();
    } finally {
      await client.close();
    }
  }

  const accessToken = (claims: Record<string, unknown>) =>
    as.sign({ aud: ruled.url, sub: 'alice', scope: 'mcp:tools', exp: inSeconds(300), ...claims });

  proves(
    [
      'access.rules[].allow',
      'access.rules[].when.scopes',
      'auth.tokens[].scopes',
      'access.rules[].when.token',
      'access.rules[].when.anonymous',
      'access.rules[].when.tier',
      'access.rules[].when.tier.exactly',
      'access.default',
    ],
    'access rules show each static token, and the anonymous caller, what its scopes, name and tier allow',
    async () => {
      const [scoped, plain, pro, anonymous] = await Promise.all([
        toolsOf(ruled.url, SCOPED_TOKEN),
        toolsOf(ruled.url, PLAIN_TOKEN),
        toolsOf(ruled.url, PRO_TOKEN),
        toolsOf(ruled.url),
      ]);
      // `slow` (pro allows it) and `bad_output` (denied to exactly community) are listed with an upgrade.
      expect(scoped).toEqual(['bad_output', 'echo', 'headers', 'slow', 'whoami']);
      expect(plain).toEqual(['bad_output', 'echo', 'parent', 'slow', 'whoami']);
      expect(pro).toEqual(['bad_output', 'echo', 'slow', 'whoami']);
      expect(anonymous).toEqual(['bad_output', 'slow', 'whoami']);
      const client = await sdkClient(ruled.url, PLAIN_TOKEN);
      try {
        const upgrade = await client.callTool({ name: 'slow', arguments: { ms: 1 } });
        expect(errorOf(upgrade)).toMatchObject({ code: 'UPGRADE_REQUIRED', details: { tier: 'pro' } });
        // Hidden (the default denies it): as unknown as a tool no upstream has.
        const hidden = await client
          .callTool({ name: 'headers', arguments: {} })
          .catch((error: Error) => error);
        expect((hidden as Error).message).toContain('Unknown tool: headers');
      } finally {
        await client.close();
      }
    },
  );

  proves(
    ['access.rules[].deny'],
    'access.rules[].deny hides what it names, everything else staying allowed by default',
    async () => {
      expect(await toolsOf(lenient.url)).toEqual(PROBE_TOOLS.filter((tool) => tool !== 'parent'));
    },
  );

  proves(
    ['access.rules[].when.claims', 'access.rules[].when.issuer', 'auth.oauth.tiers[].claims'],
    "access rules and auth.oauth.tiers read an access token's claims and issuer",
    async () => {
      const [blueAdmin, bare] = await Promise.all([
        accessToken({ team: 'blue', org_role: 'admin' }),
        accessToken({ team: ['red'] }),
      ]);
      // org_role admin: enterprise, at least pro; team blue: wait; the issuer: artifact_store.
      expect(await toolsOf(ruled.url, blueAdmin)).toEqual([
        'artifact_store',
        'bad_output',
        'echo',
        'slow',
        'wait',
        'whoami',
      ]);
      expect(await toolsOf(ruled.url, bare)).toEqual([
        'artifact_store',
        'bad_output',
        'echo',
        'slow',
        'whoami',
      ]);
    },
  );

  proves(
    ['access.rules[].name'],
    'access.rules[].name is what a record says allowed the call (else the rule’s pointer)',
    async () => {
      const client = await sdkClient(ruled.url, await accessToken({ team: 'blue' }));
      try {
        const labelsOf = async (name: string) => {
          const answer = await client.callTool({ name, arguments: {}, _meta: { capture_provenance: true } });
          const record = envelope(answer).provenance as unknown as {
            inputs: { labels: Record<string, string> }[];
          };
          return record.inputs[0]?.labels;
        };
        expect(await labelsOf('whoami')).toMatchObject({ access_decision: 'allow', access_rule: 'everyone' });
        expect(await labelsOf('wait')).toMatchObject({
          access_decision: 'allow',
          access_rule: '/access/rules/1',
        });
      } finally {
        await client.close();
      }
    },
  );
});
