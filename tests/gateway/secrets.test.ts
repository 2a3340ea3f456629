import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactSecrets } from '../../src/gateway/upstreams/redact.ts';
import { type GatewayDir, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { gatewayStdio, type Running } from './processes.ts';

/**
 * An upstream's stderr reaches callers as the excerpt of its failure (a
 * JSON-RPC error's data in passthrough, the error envelope's details in
 * envelope mode). Secrets it printed must not: they are redacted before the
 * failure leaves the gateway, whatever the mode and transport.
 */

const LEAKY = fileURLToPath(new URL('../fixtures/servers/leaky.ts', import.meta.url));

/** A configured bearer token, which the upstream also prints (under an innocent label). */
const TOKEN = 'configured-token-7f3a9c1e5b2d4f60';

/** What the fixture prints that must never reach a caller. */
const SECRETS = [
  'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  'hunter2-correct-horse',
  'sk-live-51Habcdefghijklmnopqrstuv',
  'eyJhbGciOiJIUzI1NiJ9',
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
  TOKEN,
];

function leakyConfig(): GatewayDir {
  const env = { LEAKY_ECHO: TOKEN, NOISE: 'port 3000 ready' };
  return gatewayDir((config) => {
    config.upstreams = [
      { name: 'env', stdio: { command: 'node', args: [LEAKY], env }, dialect: 'prov-v0.1' },
      { name: 'pass', stdio: { command: 'node', args: [LEAKY], env }, dialect: 'passthrough' },
    ];
    config.auth = { required: false, tokens: [{ name: 'ops', token: TOKEN, tier: 'pro' }] };
  });
}

/** Everything the caller got back from a call, as one string: the result, or the error with its data. */
async function whatTheCallerSees(client: Client, name: string): Promise<string> {
  try {
    return JSON.stringify(await client.callTool({ name, arguments: {} }));
  } catch (error) {
    const { message, code, data } = error as { message: string; code: unknown; data: unknown };
    return JSON.stringify({ message, code, data });
  }
}

function expectRedacted(seen: string): void {
  expect(seen).toContain('[redacted]');
  // What is not secret still helps: the failure says what the process wrote.
  expect(seen).toContain('port 3000 ready');
  expect(seen).toContain('fatal: cannot continue');
  for (const secret of SECRETS) expect(seen).not.toContain(secret);
}

afterAll(() => removeGatewayDirs());

describe('secrets an upstream wrote on stderr, over HTTP', () => {
  let gateway: Running;
  let client: Client;

  beforeAll(async () => {
    gateway = await startGatewayHttp(['--config', leakyConfig().config, '--no-stdio']);
    client = new Client({ name: 'secrets', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
  });

  it('are redacted from the error envelope (envelope mode)', async () => {
    const seen = await whatTheCallerSees(client, 'env__crash');
    expect(seen).toContain('ADAPTER.EXECUTION.FAILED');
    expectRedacted(seen);
  });

  it('are redacted from the JSON-RPC error (passthrough)', async () => {
    const seen = await whatTheCallerSees(client, 'pass__crash');
    expect(seen).toContain('ADAPTER.EXECUTION.FAILED');
    expectRedacted(seen);
  });
});

describe('secrets an upstream wrote on stderr, over stdio', () => {
  let client: Client;

  beforeAll(async () => {
    const { config } = leakyConfig();
    client = new Client({ name: 'secrets', version: '1.0.0' });
    await client.connect(gatewayStdio(config, { args: ['--stdio', '--no-http'] }));
  });

  afterAll(async () => {
    await client?.close();
  });

  it('are redacted from the error envelope (envelope mode)', async () => {
    expectRedacted(await whatTheCallerSees(client, 'env__crash'));
  });

  it('are redacted from the JSON-RPC error (passthrough)', async () => {
    expectRedacted(await whatTheCallerSees(client, 'pass__crash'));
  });
});

describe('the operator’s view of an upstream that did not start', () => {
  let gateway: Running;
  let client: Client;

  beforeAll(async () => {
    const { config } = gatewayDir((raw) => {
      raw.upstreams = [
        { name: 'alpha', stdio: { command: 'node', args: [LEAKY] }, dialect: 'prov-v0.1' },
        {
          name: 'broken',
          stdio: {
            command: 'node',
            // Built at run time, so the command line itself does not hold it.
            args: [
              '-e',
              'console.error("db password=" + ["hunter2", "correct", "horse"].join("-")); process.exit(3)',
            ],
          },
          dialect: 'prov-v0.1',
          restart: { initialDelayMs: 60_000, maxDelayMs: 60_000, factor: 2, maxAttempts: 1 },
        },
      ];
      raw.auth = { required: false, tokens: [] };
    });
    gateway = await startGatewayHttp(['--config', config, '--no-stdio']);
    client = new Client({ name: 'secrets', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
  });

  it('keeps the full text in the banner, while a caller gets it redacted', async () => {
    expect(gateway.stderr()).toContain('stderr: db password=hunter2-correct-horse');
    const seen = await whatTheCallerSees(client, 'broken__anything');
    expect(seen).toContain('ADAPTER.EXECUTION.FAILED');
    expect(seen).toContain('db password=[redacted]');
    expect(seen).not.toContain('hunter2');
  });
});

describe('redactSecrets', () => {
  it.each([
    ['PASSWORD=abc123', 'PASSWORD=[redacted]'],
    ['db_passwd: "s3cr3t value"', 'db_passwd: "[redacted]"'],
    ['GITHUB_TOKEN=ghp_abcdefghijklmnop', 'GITHUB_TOKEN=[redacted]'],
    ['x-api-key: abcdef', 'x-api-key: [redacted]'],
    ['client_secret=abc', 'client_secret=[redacted]'],
    ['"accessKey":"AKIAIOSFODNN7EXAMPLE"', '"accessKey":"[redacted]"'],
    ['authorization: Basic dXNlcjpwYXNz', 'authorization: [redacted]'],
    ['sent Bearer abc.def-ghi_jkl', 'sent Bearer [redacted]'],
    ['fetch https://user:hunter2@example.com/x', 'fetch https://user:[redacted]@example.com/x'],
    ['GET /v1?token=abc&page=2', 'GET /v1?token=[redacted]&page=2'],
    ['using api key sk-proj-ABCDEF0123456789abcdef now', 'using api key [redacted] now'],
    ['GITHUB_TOKEN ghp_16C7e42F292c6912E7710c838347Ae178B4a', 'GITHUB_TOKEN [redacted]'],
  ])('redacts %j', (text, redacted) => {
    expect(redactSecrets(text)).toBe(redacted);
  });

  it('redacts a private key block whole', () => {
    const text = 'before\n-----BEGIN PRIVATE KEY-----\nAAAA\nBBBB\n-----END PRIVATE KEY-----\nafter';
    expect(redactSecrets(text)).toBe('before\n[redacted]\nafter');
  });

  it('redacts configured values wherever they appear, and leaves plain text alone', () => {
    expect(redactSecrets('the value is tok-0123456789abcdef, ok', ['tok-0123456789abcdef'])).toBe(
      'the value is [redacted], ok',
    );
    const plain =
      'listening on port 3000; token count 4; author: ada; authorized: false; tokenizer loaded\n' +
      '    at load (/srv/app/token-store.js:10:5)';
    expect(redactSecrets(plain)).toBe(plain);
  });
});
