import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, type JSONRPCMessage, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, it } from 'vitest';
import { gatewayDir, removeGatewayDirs, runCli, startGatewayHttp } from './gateway-process.ts';
import { BIN, FIXTURE, initializeMessage, NODE, ROOT, type Running } from './processes.ts';

/**
 * Settings an operator relies on do what they say: `listen.http.path` is where
 * MCP is served, and `auth.required` fails closed. Every setting's own case
 * (against its default) is in every-setting.test.ts; these are the scenarios
 * around them.
 */

const TOKEN = 'ops-token-0123456789abcdef';
const running: Running[] = [];

afterAll(async () => {
  await Promise.all(running.map((gateway) => gateway.stop()));
  removeGatewayDirs();
});

function post(url: string, token?: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(initializeMessage(1, 'settings-test')),
  });
}

describe('listen.http.path and auth.required', () => {
  it('serves MCP at the configured path only, and refuses callers without a valid token', async () => {
    const { config } = gatewayDir((raw) => {
      raw.listen = { stdio: false, http: { path: '/api/mcp' } };
      raw.auth = { required: true, tokens: [{ name: 'ops', tokenEnv: 'SETTINGS_TEST_TOKEN', tier: 'pro' }] };
    });
    const gateway = await startGatewayHttp(['--config', config], {
      ...process.env,
      SETTINGS_TEST_TOKEN: TOKEN,
    });
    running.push(gateway);
    expect(new URL(gateway.url).pathname).toBe('/api/mcp');
    const elsewhere = new URL('/mcp', gateway.url).href;
    expect((await post(elsewhere, TOKEN)).status).toBe(404);
    const anonymous = await post(gateway.url);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe('AUTH_REQUIRED');
    expect((await post(gateway.url, 'not-the-token-at-all-0000')).status).toBe(401);
    const client = new Client({ name: 'settings-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });

  it('refuses to start when auth is required and no token is usable, naming the variable', async () => {
    for (const auth of [
      { required: true, tokens: [{ tokenEnv: 'SETTINGS_UNSET_TOKEN', tier: 'pro', optional: true }] },
      // Tokens configured, required left out: closed by default, also when the variable is unset.
      { tokens: [{ tokenEnv: 'SETTINGS_UNSET_TOKEN', tier: 'pro', optional: true }] },
    ]) {
      const { config } = gatewayDir((raw) => {
        raw.auth = auth;
      });
      const run = await runCli(['gateway', '--config', config, '--http', '127.0.0.1:0', '--no-stdio']);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('CONFIG_INVALID');
      expect(run.stderr).toContain('SETTINGS_UNSET_TOKEN');
    }
  });

  it('with auth.required false, serves anonymous callers and still refuses a wrong token', async () => {
    const { config } = gatewayDir((raw) => {
      raw.auth = { required: false, tokens: [{ tokenEnv: 'SETTINGS_TEST_TOKEN', tier: 'pro' }] };
    });
    const gateway = await startGatewayHttp(['--config', config, '--no-stdio'], {
      ...process.env,
      SETTINGS_TEST_TOKEN: TOKEN,
    });
    running.push(gateway);
    expect((await post(gateway.url)).status).toBe(200);
    expect((await post(gateway.url, TOKEN)).status).toBe(200);
    expect((await post(gateway.url, 'not-the-token-at-all-0000')).status).toBe(401);
  });
});

describe('the call log', () => {
  it('logs a call the client cancelled as cancelled, not as a failed execution', async () => {
    const logs = mkdtempSync(join(tmpdir(), 'cancelled-logs-'));
    const client = new Client({ name: 'cancelling', version: '1.0.0' });
    const args = [BIN, 'proxy', '--dialect', 'prov-v0.1', '--logs', logs, '--', NODE, FIXTURE];
    const transport = new StdioClientTransport({ command: NODE, args, cwd: ROOT });
    // Cancel only once the call has been written to the gateway.
    const { promise: sent, resolve: markSent } = Promise.withResolvers<void>();
    const send = transport.send.bind(transport);
    transport.send = async (message: JSONRPCMessage) => {
      await send(message);
      if ('method' in message && message.method === 'tools/call') markSent();
    };
    await client.connect(transport);
    const controller = new AbortController();
    const slow = client.callTool({ name: 'slow', arguments: { ms: 20_000 } }, { signal: controller.signal });
    await sent;
    controller.abort();
    await expect(slow).rejects.toThrow();
    // Requests are handled in order: once this answers, the cancelled call has been handled too.
    await client.callTool({ name: 'echo', arguments: { text: 'after' } });
    // Closing ends the gateway, which flushes its call log.
    await client.close();
    const lines = readdirSync(logs, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.jsonl'))
      .flatMap((file) => readFileSync(join(logs, file), 'utf8').trim().split('\n'))
      .map((line) => JSON.parse(line) as { tool: string; outcome: string; code: string | null });
    expect(lines.find((line) => line.tool === 'slow')).toMatchObject({ outcome: 'cancelled', code: null });
    expect(lines.find((line) => line.tool === 'echo')).toMatchObject({ outcome: 'ok' });
  });
});

describe('upstream state, where the operator looks', () => {
  it('shows an upstream that did not start, with why and its stderr, in the banner, /healthz and the info page', async () => {
    const { config } = gatewayDir((raw) => {
      raw.upstreams = [
        { name: 'alpha', stdio: { command: 'node', args: [FIXTURE] }, dialect: 'prov-v0.1' },
        {
          name: 'broken',
          stdio: {
            command: 'node',
            // The printed name is built at run time, so the command line itself does not hold it.
            args: ['-e', 'console.error("missing setting", ["FOO", "URL"].join("_")); process.exit(3)'],
          },
          dialect: 'prov-v0.1',
          restart: { initialDelayMs: 60_000, maxDelayMs: 60_000, factor: 2, maxAttempts: 1 },
        },
      ];
      raw.auth = { required: false, tokens: [] };
    });
    const gateway = await startGatewayHttp(['--config', config, '--no-stdio']);
    running.push(gateway);
    const banner = gateway.stderr();
    expect(banner).toContain('degraded: 1 of 2 upstreams not ready');
    expect(banner).toContain('upstream alpha (prov-v0.1): ready');
    expect(banner).toMatch(/upstream broken \(prov-v0\.1\): NOT READY, retrying: .*exited with code 3/);
    expect(banner).toContain('stderr: missing setting FOO_URL');
    const health = (await (await fetch(new URL('/healthz', gateway.url))).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ status: 'degraded', upstreams: { alpha: 'ready', broken: 'retrying' } });
    // The unauthenticated surfaces say the state, never what the process wrote.
    expect(JSON.stringify(health)).not.toContain('FOO_URL');
    const page = await (await fetch(gateway.url, { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('<code>broken</code>');
    expect(page).toContain('<strong>retrying</strong>');
    expect(page).not.toContain('FOO_URL');
  });

  // Node prints the module's name, then a stack and more: the last lines alone do not hold it.
  const MISSING = ['-e', "require('mcp-envelope-no-such-module')"];
  const NAMED = "Error: Cannot find module 'mcp-envelope-no-such-module'";

  it('shows the stderr line that names why it did not start, though a stack follows it', async () => {
    const { config } = gatewayDir((raw) => {
      raw.upstreams = [
        { name: 'alpha', stdio: { command: 'node', args: [FIXTURE] }, dialect: 'prov-v0.1' },
        {
          name: 'unbuilt',
          stdio: { command: 'node', args: MISSING },
          dialect: 'prov-v0.1',
          restart: { initialDelayMs: 60_000, maxDelayMs: 60_000, factor: 2, maxAttempts: 1 },
        },
      ];
      raw.auth = { required: false, tokens: [] };
    });
    const gateway = await startGatewayHttp(['--config', config, '--no-stdio']);
    running.push(gateway);
    const banner = gateway.stderr();
    expect(banner).toMatch(/upstream unbuilt \(prov-v0\.1\): NOT READY, retrying: .*exited with code 1/);
    expect(banner).toContain(`    stderr: ${NAMED}\n`);
    // Bounded: the cause, and the last lines after it.
    expect(banner.match(/^ {4}stderr: /gm)).toHaveLength(6);
  });

  it('says it in the one line a proxy prints when its upstream did not start', async () => {
    const run = await runCli(['proxy', '--name', 'unbuilt', '--', NODE, ...MISSING]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `error[ADAPTER.EXECUTION.FAILED]: upstream unbuilt did not start: exited with code 1 (stderr: ${NAMED})\n`,
    );
  });
});

describe('finding your way around the HTTP surface', () => {
  it('says at / where things are, and says how to see the page when a plain GET is refused', async () => {
    const { config } = gatewayDir();
    const gateway = await startGatewayHttp(['--config', config, '--no-stdio']);
    running.push(gateway);
    const root = await fetch(new URL('/', gateway.url));
    expect(root.status).toBe(200);
    expect(await root.json()).toMatchObject({ mcp: '/mcp', health: '/healthz' });
    const plain = await fetch(gateway.url);
    expect(plain.status).toBe(405);
    expect(((await plain.json()) as { error: { message: string } }).error.message).toContain(
      'Accept: text/html',
    );
    const unknown = await fetch(new URL('/nowhere', gateway.url));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain('/mcp');
  });
});
