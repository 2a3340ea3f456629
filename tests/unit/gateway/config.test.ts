import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DOCS_FILE, membersOf, renderConfigDocs } from '../../../scripts/gen-config-docs.ts';
import { DEFAULT_TIERS } from '../../../src/envelope/tiers.ts';
import { EnvelopeError } from '../../../src/errors/index.ts';
import { DEFAULT_HTTP_PATH } from '../../../src/gateway/http/endpoint.ts';
import {
  callTimeoutMs,
  GATEWAY_CONFIG_SCHEMA,
  loadGatewayConfig,
  resolveGatewayConfig,
  UPSTREAM_DIALECTS,
} from '../../../src/gateway/operations/config.ts';
import { DEFAULT_RESTART_POLICY, restartDelayMs } from '../../../src/gateway/upstreams/restart-policy.ts';
import { keyIdFor } from '../../../src/provenance/integrity.ts';
import schema from '../../../src/schemas/data/gateway.config.schema.json' with { type: 'json' };

const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
}

function failure(run: () => unknown): EnvelopeError {
  try {
    run();
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
  throw new Error('expected an EnvelopeError');
}

const minimal = { upstreams: [{ name: 'one', stdio: { command: 'node', args: ['server.ts'] } }] };
const twoUpstreams = {
  upstreams: [
    { name: 'a', stdio: { command: 'x' } },
    { name: 'b', stdio: { command: 'y' } },
  ],
};
const TOKEN = 'a-token-of-sixteen-or-more';

describe('loadGatewayConfig', () => {
  it('fills every default and resolves paths against the file’s folder', () => {
    const config = loadGatewayConfig(write('minimal.json', minimal), { env: {} });
    expect(config.file).toBe(join(dir, 'minimal.json'));
    expect(config.upstreams).toEqual([
      {
        name: 'one',
        transport: { kind: 'stdio', command: process.execPath, args: ['server.ts'], env: {}, cwd: dir },
        dialect: 'prov-v0.1',
        validation: { input: 'enforce', output: 'enforce', invalidInput: 'result' },
        provenance: { enabled: true, mode: 'minimal', captureArtifacts: false },
        timeouts: { callMs: 60_000, startMs: 15_000, tools: {} },
        tiers: { tools: {} },
        restart: { enabled: true, initialDelayMs: 100, maxDelayMs: 5000, factor: 2, maxAttempts: 5 },
        protocol: 'auto',
        sharing: 'shared',
        artifacts: 'own',
        pin: 'warn',
        pinKeys: [],
      },
    ]);
    expect(config.tiers).toBeUndefined();
    // Without an access section nothing is decided: every item is allowed, and lists stay shared.
    expect(config.access).toBeUndefined();
    expect(config.listen).toEqual({ stdio: true, http: undefined });
    expect(config.auth).toEqual({ required: false, tokens: [] });
    expect(config.ledger).toEqual({
      enabled: true,
      path: join(dir, 'data/ledger.sqlite'),
      checkpointIntervalMs: 60_000,
    });
    expect(config.logs).toEqual({ enabled: true, dir: join(dir, 'runs'), includeArguments: false });
    expect(config.ids).toEqual({ seed: undefined });
    expect(config.telemetry).toEqual({
      serviceName: 'mcp-envelope-gateway',
      traces: { enabled: false, sampleRatio: 1 },
      metrics: { prometheus: false, otlp: false, exportIntervalMs: 60_000 },
      otlp: { headers: {} },
    });
    expect(config.pinning).toEqual({ mode: 'warn', file: undefined });
  });

  it('serves /metrics by default only where the HTTP listener requires a token', () => {
    const guarded = resolveGatewayConfig(
      { ...minimal, listen: { http: { port: 0 } }, auth: { tokens: [{ token: TOKEN, tier: 'pro' }] } },
      dir,
    );
    expect(guarded.telemetry.metrics.prometheus).toBe(true);
    const open = resolveGatewayConfig({ ...minimal, listen: { http: { port: 0 } } }, dir);
    expect(open.telemetry.metrics.prometheus).toBe(false);
    const asked = resolveGatewayConfig(
      { ...minimal, listen: { http: { port: 0 } }, telemetry: { metrics: { prometheus: true } } },
      dir,
    );
    expect(asked.telemetry.metrics.prometheus).toBe(true);
  });

  it('reads telemetry settings, headers from the environment, and refuses an export with no endpoint', () => {
    const config = resolveGatewayConfig(
      {
        ...minimal,
        telemetry: {
          serviceName: 'svc',
          traces: { enabled: true, sampleRatio: 0.25 },
          metrics: { otlp: true, exportIntervalMs: 1000 },
          otlp: {
            endpoint: 'http://127.0.0.1:4318/',
            headers: { 'x-a': '1' },
            headersFromEnv: { 'x-b': 'B' },
          },
        },
      },
      dir,
      { env: { B: 'two' } },
    );
    expect(config.telemetry).toEqual({
      serviceName: 'svc',
      traces: { enabled: true, sampleRatio: 0.25 },
      metrics: { prometheus: false, otlp: true, exportIntervalMs: 1000 },
      otlp: { endpoint: 'http://127.0.0.1:4318', headers: { 'x-a': '1', 'x-b': 'two' } },
    });
    const noEndpoint = failure(() =>
      resolveGatewayConfig({ ...minimal, telemetry: { traces: { enabled: true } } }, dir),
    );
    expect(noEndpoint.code).toBe('CONFIG_INVALID');
    expect(noEndpoint.details?.pointer).toBe('/telemetry/traces/enabled');
    const noMetricsEndpoint = failure(() =>
      resolveGatewayConfig({ ...minimal, telemetry: { metrics: { otlp: true } } }, dir),
    );
    expect(noMetricsEndpoint.details?.pointer).toBe('/telemetry/metrics/otlp');
    const unset = failure(() =>
      resolveGatewayConfig(
        {
          ...minimal,
          telemetry: { otlp: { endpoint: 'http://127.0.0.1:4318', headersFromEnv: { 'x-b': 'UNSET_B' } } },
        },
        dir,
        { env: {} },
      ),
    );
    expect(unset.code).toBe('CONFIG_INVALID');
    expect(unset.message).toContain('UNSET_B');
    expect(unset.details?.pointer).toBe('/telemetry/otlp/headersFromEnv/x-b');
  });

  it("resolves each upstream's pinning mode, and refuses enforce with pins kept in memory only", () => {
    const both = (pinning: unknown, pin?: string, ledger = true) => ({
      upstreams: [
        { name: 'a', stdio: { command: 'x' }, ...(pin ? { pin } : {}) },
        { name: 'b', stdio: { command: 'y' } },
      ],
      ...(pinning ? { pinning } : {}),
      ledger: { enabled: ledger },
    });
    const mixed = loadGatewayConfig(
      write('pins.json', both({ mode: 'off', file: 'p/pins.sqlite' }, 'enforce')),
    );
    expect(mixed.upstreams.map((upstream) => upstream.pin)).toEqual(['enforce', 'off']);
    expect(mixed.pinning).toEqual({ mode: 'off', file: join(dir, 'p/pins.sqlite') });
    // Enforce with the ledger on keeps pins in the ledger's file.
    expect(() => loadGatewayConfig(write('pins-ledger.json', both({ mode: 'enforce' })))).not.toThrow();
    const memory = failure(() =>
      loadGatewayConfig(write('pins-memory.json', both(undefined, 'enforce', false))),
    );
    expect(memory.code).toBe('CONFIG_INVALID');
    expect(memory.details?.pointer).toBe('/upstreams/0/pin');
    expect(memory.message).toMatch(/tools accept/);
    const global = failure(() =>
      loadGatewayConfig(write('pins-global.json', both({ mode: 'enforce' }, undefined, false))),
    );
    expect(global.details?.pointer).toBe('/pinning/mode');
    // A key that cannot be read stops the gateway rather than leaving lists unchecked.
    const keyless = failure(() =>
      loadGatewayConfig(
        write('pins-keys.json', {
          upstreams: [{ name: 'a', stdio: { command: 'x' }, pinKeys: ['nope.pem'] }],
        }),
      ),
    );
    expect(keyless).toMatchObject({ code: 'CONFIG_INVALID', details: { pointer: '/upstreams/0/pinKeys/0' } });
    writeFileSync(join(dir, 'not-a-pin-key.pem'), 'hello');
    const garbage = failure(() =>
      loadGatewayConfig(
        write('pins-garbage.json', {
          upstreams: [{ name: 'a', stdio: { command: 'x' }, pinKeys: ['not-a-pin-key.pem'] }],
        }),
      ),
    );
    expect(garbage.message).toMatch(/holds no public key/);
  });

  it('reads tokens and headers from the environment and defaults the HTTP listener', () => {
    const file = write('full.json', {
      upstreams: [
        {
          name: 'remote',
          url: {
            url: 'http://127.0.0.1:9/mcp',
            headers: { 'x-a': '1' },
            headersFromEnv: { authorization: 'UP' },
          },
          dialect: 'hosted-v2',
          timeouts: { tools: { slow: 5 } },
        },
        { name: 'local', stdio: { command: './bin/server', cwd: 'sub' } },
      ],
      listen: { stdio: false, http: { port: 0 } },
      auth: {
        tokens: [
          { tokenEnv: 'PRO_TOKEN', tier: 'pro', name: 'ci' },
          { token: 'a-literal-token-0123', tier: 'free' },
          { tokenEnv: 'UNSET_TOKEN', tier: 'team', optional: true },
        ],
      },
      ledger: { path: '/var/tmp/ledger.sqlite' },
      ids: { seed: 'seed-1' },
    });
    const config = loadGatewayConfig(file, { env: { PRO_TOKEN: 'from-env', UP: 'Bearer up' } });
    const [remote, local] = config.upstreams;
    if (!remote) throw new Error('no upstream');
    expect(remote?.transport).toEqual({
      kind: 'http',
      url: 'http://127.0.0.1:9/mcp',
      headers: { 'x-a': '1', authorization: 'Bearer up' },
    });
    expect(local?.transport).toMatchObject({ command: join(dir, 'bin/server'), cwd: join(dir, 'sub') });
    expect(config.listen).toEqual({
      stdio: false,
      http: {
        host: '127.0.0.1',
        port: 0,
        path: '/mcp',
        allowedHosts: ['127.0.0.1', 'localhost', '[::1]'],
        allowedOrigins: [],
        bodyLimitBytes: 4 * 1024 * 1024,
        resumable: false,
        maxSessions: 64,
        maxSessionsPerPrincipal: 16,
        sessionIdleMs: 30 * 60_000,
        abandonedSessionMs: 30_000,
      },
    });
    expect(config.auth).toEqual({
      required: true,
      tokens: [
        { name: 'ci', token: 'from-env', tier: 'pro', scopes: [] },
        { name: 'token-2', token: 'a-literal-token-0123', tier: 'free', scopes: [] },
      ],
    });
    expect(config.ledger.path).toBe('/var/tmp/ledger.sqlite');
    expect(config.ids.seed).toBe('seed-1');
    expect(callTimeoutMs(remote, 'slow')).toBe(5);
    expect(callTimeoutMs(remote, 'other')).toBe(60_000);
    // The function the upstream itself runs, on the configured policy.
    expect([1, 2, 3, 20].map((attempt) => restartDelayMs(remote.restart, attempt))).toEqual([
      100, 200, 400, 5000,
    ]);
  });

  it('loads the bundled example configuration', () => {
    const file = fileURLToPath(new URL('../../../examples/gateway.config.json', import.meta.url));
    const config = loadGatewayConfig(file, { env: {} });
    expect(config.upstreams.map((upstream) => [upstream.name, upstream.dialect])).toEqual([
      ['legacy', 'prov-v0.1'],
      ['envelopes', 'prov-v0.1'],
      ['python', 'hosted-v2'],
      ['templates', 'hosted-v2'],
    ]);
    expect(config.ledger.path).toBe(join(config.baseDir, 'data/ledger.sqlite'));
  });
});

describe('bad configuration', () => {
  it('reports a missing file with CONFIG_NOT_FOUND', () => {
    expect(failure(() => loadGatewayConfig(join(dir, 'absent.json'))).code).toBe('CONFIG_NOT_FOUND');
  });

  it('reports malformed JSON with CONFIG_INVALID', () => {
    const error = failure(() => loadGatewayConfig(write('broken.json', '{"upstreams": [')));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.details?.cause_code).toBe('JSON_MALFORMED');
  });

  it('reports duplicate keys and invalid UTF-8 with CONFIG_INVALID', () => {
    const duplicate = failure(() =>
      loadGatewayConfig(write('dup.json', '{"upstreams": [], "upstreams": []}')),
    );
    expect(duplicate.code).toBe('CONFIG_INVALID');
    expect(duplicate.details?.cause_code).toBe('JSON_DUPLICATE_KEY');
    const file = join(dir, 'latin1.json');
    writeFileSync(file, Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x3a, 0x31, 0x7d]));
    const latin1 = failure(() => loadGatewayConfig(file));
    expect(latin1.code).toBe('CONFIG_INVALID');
    expect(latin1.details?.cause_code).toBe('INPUT_INVALID_UTF8');
  });

  const cases: Array<[string, unknown, string, RegExp]> = [
    ['no upstreams', {}, '', /upstreams/],
    ['an unknown member', { ...minimal, extra: 1 }, '/extra', /not allowed/],
    [
      'a bad dialect',
      { upstreams: [{ name: 'a', stdio: { command: 'x' }, dialect: 'soap' }] },
      '/upstreams/0/dialect',
      /must be one of/,
    ],
    [
      'neither stdio nor url',
      { upstreams: [{ name: 'a' }] },
      '/upstreams/0',
      /exactly one of "stdio" or "url"/,
    ],
    [
      'an artifact store shared while artifacts are off',
      {
        upstreams: [{ name: 'a', stdio: { command: 'x' }, artifacts: 'shared' }],
        artifacts: { enabled: false },
      },
      '/upstreams/0/artifacts',
      /artifacts\.enabled is false/,
    ],
    [
      'an artifact store shared with an upstream reached by URL',
      { upstreams: [{ name: 'a', url: { url: 'http://h/' }, artifacts: 'shared' }] },
      '/upstreams/0/artifacts',
      /only stdio upstreams share it/,
    ],
    [
      'both stdio and url',
      { upstreams: [{ name: 'a', stdio: { command: 'x' }, url: { url: 'http://h/' } }] },
      '/upstreams/0',
      /exactly one/,
    ],
    ['a stdio without command', { upstreams: [{ name: 'a', stdio: {} }] }, '/upstreams/0/stdio', /command/],
    [
      'a bad port',
      { ...minimal, listen: { http: { port: 70000 } } },
      '/listen/http/port',
      /must be <= 65535/,
    ],
    [
      'a bad validation mode',
      { upstreams: [{ name: 'a', stdio: { command: 'x' }, validation: { input: 'strict' } }] },
      '/upstreams/0/validation/input',
      /must be one of/,
    ],
    [
      'a duplicate upstream name',
      { upstreams: [...minimal.upstreams, ...minimal.upstreams] },
      '/upstreams/1/name',
      /used twice/,
    ],
    [
      'an unset token variable',
      { ...minimal, auth: { tokens: [{ tokenEnv: 'NOPE_TOKEN', tier: 'pro' }] } },
      '/auth/tokens/0/tokenEnv',
      /NOPE_TOKEN/,
    ],
    [
      'a backoff that shrinks',
      {
        upstreams: [
          { name: 'a', stdio: { command: 'x' }, restart: { initialDelayMs: 500, maxDelayMs: 100 } },
        ],
      },
      '/upstreams/0/restart/maxDelayMs',
      /below/,
    ],
    [
      'a tool rule naming an unknown tier',
      { ...twoUpstreams, tiers: { order: ['free', 'pro'], tools: { a__x: 'gold' } } },
      '/tiers/tools/a__x',
      /tier "gold", which is not one of free, pro \(tiers\.order\)/,
    ],
    [
      'an upstream rule naming an unknown tier',
      {
        upstreams: [{ ...minimal.upstreams[0], tiers: { tools: { stats: { tier: 'gold', reason: 'r' } } } }],
      },
      '/upstreams/0/tiers/tools/stats/tier',
      /"gold", which is not one of community, pro, enterprise \(the default order; set tiers\.order/,
    ],
    [
      'a token whose tier is not in the order',
      {
        ...minimal,
        tiers: { order: ['free', 'pro'] },
        auth: { tokens: [{ token: TOKEN, tier: 'enterprise' }] },
      },
      '/auth/tokens/0/tier',
      /"enterprise"/,
    ],
    [
      'an anonymous tier not in the order',
      { ...minimal, tiers: { order: ['free', 'pro'], anonymous: 'guest' } },
      '/tiers/anonymous',
      /"guest"/,
    ],
    [
      'a tool rule that names no upstream',
      { ...twoUpstreams, tiers: { tools: { c__x: 'pro' } } },
      '/tiers/tools/c__x',
      /names no configured upstream.*a, b/,
    ],
    [
      'a tool rule that is neither a tier nor an object',
      { ...minimal, tiers: { tools: { stats: 3 } } },
      '/tiers/tools/stats',
      /tier name .* or an object/,
    ],
    [
      'an OAuth issuer that is not an http(s) URL',
      { ...minimal, auth: { oauth: { issuer: 'auth.example.com' } } },
      '/auth/oauth/issuer',
      /pattern/,
    ],
    [
      'HS256 among the OAuth algorithms',
      { ...minimal, auth: { oauth: { issuer: 'https://auth.example.com', algorithms: ['HS256'] } } },
      '/auth/oauth/algorithms/0',
      /RS256/,
    ],
    [
      'an OAuth tier not in the order',
      {
        ...minimal,
        auth: { oauth: { issuer: 'https://auth.example.com', tiers: [{ scope: 'a', tier: 'gold' }] } },
        tiers: {},
      },
      '/auth/oauth/tiers/0/tier',
      /"gold"/,
    ],
    [
      'an unset introspection secret',
      {
        ...minimal,
        auth: {
          oauth: {
            issuer: 'https://auth.example.com',
            introspection: { clientId: 'gw', clientSecretEnv: 'UNSET_INTROSPECTION_SECRET' },
          },
        },
      },
      '/auth/oauth/introspection/clientSecretEnv',
      /UNSET_INTROSPECTION_SECRET/,
    ],
    [
      'a tier order with a duplicate',
      { ...minimal, tiers: { order: ['free', 'free'] } },
      '/tiers/order',
      /duplicate/,
    ],
  ];

  it.each(cases)('rejects %s with CONFIG_INVALID and a JSON Pointer', (_label, value, pointer, message) => {
    const error = failure(() => resolveGatewayConfig(value, dir, { env: {} }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.details?.pointer).toBe(pointer);
    expect(error.message).toMatch(message);
  });

  it('never echoes a token in an error', () => {
    const value = { ...minimal, auth: { tokens: [{ token: 'short', tier: 'pro' }] } };
    const error = failure(() => resolveGatewayConfig(value, dir, { env: {} }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(JSON.stringify(error.toJSON())).not.toContain('"short"');
  });
});

describe('auth.oauth', () => {
  it('resolves with its defaults, required by default, the default tier the anonymous one', () => {
    const config = resolveGatewayConfig(
      { ...minimal, auth: { oauth: { issuer: 'https://auth.example.com' } }, tiers: { anonymous: 'pro' } },
      dir,
      { env: {} },
    );
    expect(config.auth.required).toBe(true);
    expect(config.auth.oauth).toEqual({
      issuer: 'https://auth.example.com',
      algorithms: ['RS256', 'ES256', 'EdDSA', 'PS256'],
      clockSkewSeconds: 30,
      requiredScopes: [],
      tiers: [],
      defaultTier: 'pro',
      claimPaths: [],
      dpop: 'off',
    });
  });

  it('reads only the claims the access rules and the tier entries name', () => {
    const config = resolveGatewayConfig(
      {
        ...minimal,
        auth: {
          oauth: {
            issuer: 'https://auth.example.com',
            tiers: [
              { claims: { 'org.role': 'admin' }, tier: 'enterprise' },
              { scope: 'mcp:pro', tier: 'pro' },
            ],
          },
        },
        access: { rules: [{ when: { claims: { groups: 'ops', 'org.role': 'admin' } }, allow: ['one/*'] }] },
      },
      dir,
      { env: {} },
    );
    expect(config.auth.oauth?.claimPaths).toEqual(['groups', 'org.role']);
    expect(config.auth.oauth?.tiers).toEqual([
      { claims: { 'org.role': 'admin' }, tier: 'enterprise' },
      { scope: 'mcp:pro', tier: 'pro' },
    ]);
  });

  it('reads the introspection secret from its variable', () => {
    const config = resolveGatewayConfig(
      {
        ...minimal,
        auth: {
          oauth: {
            issuer: 'https://auth.example.com',
            introspection: { clientId: 'gw', clientSecretEnv: 'INTROSPECTION_SECRET' },
          },
        },
      },
      dir,
      { env: { INTROSPECTION_SECRET: 'the-secret' } },
    );
    expect(config.auth.oauth?.introspection).toEqual({ clientId: 'gw', clientSecret: 'the-secret' });
  });
});

describe('tiers', () => {
  it('resolves gateway-wide rules by the name clients call, upstream rules by the tool’s own name', () => {
    const config = resolveGatewayConfig(
      {
        upstreams: [
          { ...twoUpstreams.upstreams[0], tiers: { tools: { both: { tier: 'enterprise', reason: 'own' } } } },
          twoUpstreams.upstreams[1],
        ],
        tiers: {
          order: ['free', 'pro', 'enterprise'],
          tools: { a__stats: 'pro', a__both: 'pro', b__x__y: { tier: 'pro', reason: 'Pro only' } },
        },
        auth: { tokens: [{ token: TOKEN, tier: 'free' }] },
      },
      dir,
      { env: {} },
    );
    expect(config.tiers).toEqual({ order: ['free', 'pro', 'enterprise'], anonymous: 'free' });
    expect(config.upstreams.map((upstream) => upstream.tiers.tools)).toEqual([
      // The upstream's own rule wins over the gateway-wide one for the same tool.
      { stats: { tier: 'pro' }, both: { tier: 'enterprise', reason: 'own' } },
      // Split at the first separator, as the relay routes names.
      { x__y: { tier: 'pro', reason: 'Pro only' } },
    ]);
  });

  it('takes a single upstream’s tool names as they are, and the default tier order', () => {
    const config = resolveGatewayConfig(
      { ...minimal, tiers: { anonymous: 'pro', tools: { stats: 'enterprise' } } },
      dir,
      { env: {} },
    );
    expect(config.tiers).toEqual({ order: ['community', 'pro', 'enterprise'], anonymous: 'pro' });
    expect(config.upstreams[0]?.tiers.tools).toEqual({ stats: { tier: 'enterprise' } });
  });

  it('checks the tiers of tokens skipped for an unset variable too', () => {
    const error = failure(() =>
      resolveGatewayConfig(
        {
          ...minimal,
          tiers: { order: ['free'] },
          auth: { tokens: [{ tokenEnv: 'UNSET_TOKEN', tier: 'pro', optional: true }] },
        },
        dir,
        { env: {} },
      ),
    );
    expect(error.details?.pointer).toBe('/auth/tokens/0/tier');
  });
});

describe('the configuration schema', () => {
  it('offers exactly the upstream dialects the code knows', () => {
    const defs = GATEWAY_CONFIG_SCHEMA.$defs as { upstream: { properties: { dialect: { enum: string[] } } } };
    expect(defs.upstream.properties.dialect.enum).toEqual([...UPSTREAM_DIALECTS]);
  });
});

/**
 * A configuration with every section present (a stdio and a url upstream, a
 * listener, a token, a tiers section), so that each member's default can be
 * set explicitly, or left out, at its place.
 */
function everySection(): Record<string, unknown> {
  return {
    upstreams: [
      { name: 'local', stdio: { command: 'x' }, tiers: {} },
      { name: 'remote', url: { url: 'http://127.0.0.1:9/mcp' } },
    ],
    listen: { http: {} },
    auth: { tokens: [{ tokenEnv: 'SOME_TOKEN', tier: 'pro' }], oauth: { issuer: 'http://127.0.0.1:9' } },
    tiers: {},
    access: { rules: [{ allow: ['local/*'], deny: ['remote/*'] }] },
    ledger: {},
    logs: {},
    ids: {},
    rateLimits: [{ bucket: 'b', limit: 1, windowMs: 1000 }],
  };
}

/** The object that holds a member at `path` (`[]` picks the item that can hold it), and the member's name. */
function holderOf(config: Record<string, unknown>, path: string): [Record<string, unknown>, string] {
  const steps = path.split('.');
  const name = steps.pop() as string;
  let at: Record<string, unknown> = config;
  for (const step of steps) {
    if (step.endsWith('[]')) {
      const items = at[step.slice(0, -2)] as Record<string, unknown>[];
      at = (path.includes('].url.') ? items.at(-1) : items[0]) as Record<string, unknown>;
    } else {
      at[step] ??= {};
      at = at[step] as Record<string, unknown>;
    }
  }
  return [at, name];
}

describe('defaults: the schema is where they are written', () => {
  const env = { SOME_TOKEN: TOKEN };
  const withDefaults = membersOf().filter((member) => 'default' in member.node);

  it('declares a default or says how one is computed for every optional setting', () => {
    const silent = membersOf().filter(
      (member) =>
        member.setting &&
        !member.required &&
        !('default' in member.node) &&
        typeof member.node['x-default'] !== 'string',
    );
    // A member without a default is one whose absence means "not given" to the code that reads it.
    expect(silent.map((member) => member.path).sort()).toEqual([
      '$schema',
      'artifacts.keys[].keyEnv',
      'artifacts.keys[].keyFile',
      'auth.tokens[].token',
      'auth.tokens[].tokenEnv',
      'signing.keyEnv',
      'signing.keyFile',
      'tiers.tools.<tool>.reason',
      'upstreams[].tiers.tools.<tool>.reason',
    ]);
  });

  it.each(withDefaults.map((member) => [member.path, member.node.default]))(
    '%s: writing the default %j is the same as leaving it out',
    (path, value) => {
      const explicit = everySection();
      const [holder, name] = holderOf(explicit, path);
      holder[name] = structuredClone(value);
      const absent = everySection();
      const [from, member] = holderOf(absent, path);
      delete from[member];
      expect(resolveGatewayConfig(explicit, dir, { env })).toEqual(
        resolveGatewayConfig(absent, dir, { env }),
      );
    },
  );

  it('agrees with the code that keeps its own copy of a default', () => {
    const restart = schema.$defs.upstream.properties.restart.properties;
    expect(DEFAULT_RESTART_POLICY).toMatchObject({
      maxRestarts: restart.maxAttempts.default,
      initialDelayMs: restart.initialDelayMs.default,
      maxDelayMs: restart.maxDelayMs.default,
      factor: restart.factor.default,
    });
    // The schema says how long an upstream must stay up to earn its budget back.
    expect(restart.maxAttempts.description).toContain(`${DEFAULT_RESTART_POLICY.stableAfterMs / 1000} s`);
    expect(schema.$defs.http.properties.path.default).toBe(DEFAULT_HTTP_PATH);
    expect(schema.properties.tiers.properties.order.default).toEqual([...DEFAULT_TIERS]);
  });
});

describe('docs/gateway-config.md', () => {
  const docs = readFileSync(DOCS_FILE, 'utf8');

  it('has the settings tables the schema generates (npm run docs:config)', () => {
    expect(docs === renderConfigDocs(docs), 'docs/gateway-config.md is stale: run npm run docs:config').toBe(
      true,
    );
  });

  it('shows only configurations the gateway accepts', () => {
    const examples = [...docs.matchAll(/```json\n([\s\S]*?)```/g)].map((match) =>
      JSON.parse(match[1] as string),
    );
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) {
      // Every variable the example names is set, as an operator would.
      const env = Object.fromEntries(
        [...JSON.stringify(example).matchAll(/"(?:tokenEnv|authorization)":"([A-Z_]+)"/g)].map((match) => [
          match[1],
          TOKEN,
        ]),
      );
      expect(() => resolveGatewayConfig(example, dir, { env })).not.toThrow();
    }
  });
});

describe('signing', () => {
  const pair = generateKeyPairSync('ed25519');
  const pem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const ecPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const keyId = keyIdFor(pair.publicKey);
  // The base64 body of the private key: no error may carry any of it.
  const secret = pem.split('\n')[1] as string;

  it('loads the key once, from a file relative to the configuration or from the environment', () => {
    mkdirSync(join(dir, 'keys'), { recursive: true });
    writeFileSync(join(dir, 'keys', 'gw.private.pem'), pem, { mode: 0o600 });
    const fromFile = loadGatewayConfig(
      write('signed.json', { ...twoUpstreams, signing: { keyFile: 'keys/gw.private.pem' } }),
      { env: {} },
    );
    expect(fromFile.signing?.keyId).toBe(keyId);
    expect(fromFile.signing?.key.asymmetricKeyType).toBe('ed25519');
    // Every upstream's pipeline gets the one key the configuration loaded.
    for (const upstream of fromFile.upstreams)
      expect(upstream.provenance.signingKey).toBe(fromFile.signing?.key);
    const fromEnv = resolveGatewayConfig({ ...minimal, signing: { keyEnv: 'GW_SIGNING_KEY' } }, dir, {
      env: { GW_SIGNING_KEY: pem },
    });
    expect(fromEnv.signing?.keyId).toBe(keyId);
    const unsigned = resolveGatewayConfig(minimal, dir, { env: {} });
    expect(unsigned.signing).toBeUndefined();
    expect(unsigned.upstreams[0]?.provenance.signingKey).toBeUndefined();
  });

  it.skipIf(process.platform === 'win32')(
    'refuses a key file others may read, as ssh does, naming the member and the mode, never the key',
    () => {
      mkdirSync(join(dir, 'keys'), { recursive: true });
      writeFileSync(join(dir, 'keys', 'loose.pem'), pem, { mode: 0o644 });
      const error = failure(() =>
        loadGatewayConfig(write('loose.json', { ...twoUpstreams, signing: { keyFile: 'keys/loose.pem' } }), {
          env: {},
        }),
      );
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.details?.pointer).toBe('/signing/keyFile');
      expect(error.message).toMatch(/mode 0644.*chmod 600/);
      expect(error.message).not.toContain(secret);
    },
  );

  const failures: Array<[string, unknown, Record<string, string>, string, RegExp]> = [
    ['neither keyFile nor keyEnv', { signing: {} }, {}, '/signing', /exactly one of "keyFile" or "keyEnv"/],
    [
      'both keyFile and keyEnv',
      { signing: { keyFile: 'k.pem', keyEnv: 'K' } },
      {},
      '/signing',
      /exactly one of "keyFile" or "keyEnv"/,
    ],
    [
      'a missing key file',
      { signing: { keyFile: 'absent.pem' } },
      {},
      '/signing/keyFile',
      /cannot be read \(ENOENT\)/,
    ],
    [
      'a file that holds no key',
      { signing: { keyFile: 'not-a-key.pem' } },
      {},
      '/signing/keyFile',
      /not-a-key\.pem is not an unencrypted PKCS#8 PEM private key/,
    ],
    [
      'a public key where the private one belongs',
      { signing: { keyFile: 'public.pem' } },
      {},
      '/signing/keyFile',
      /is not an unencrypted PKCS#8 PEM private key/,
    ],
    [
      'a key that is not Ed25519',
      { signing: { keyFile: 'ec.pem' } },
      {},
      '/signing/keyFile',
      /holds a key of type ec, not Ed25519/,
    ],
    [
      'an unset key variable',
      { signing: { keyEnv: 'GW_UNSET_KEY' } },
      {},
      '/signing/keyEnv',
      /Environment variable GW_UNSET_KEY \(signing\.keyEnv\) is not set/,
    ],
    [
      'a variable whose key is cut short',
      { signing: { keyEnv: 'GW_CUT_KEY' } },
      { GW_CUT_KEY: pem.slice(0, 60) },
      '/signing/keyEnv',
      /GW_CUT_KEY \(signing\.keyEnv\) is not an unencrypted PKCS#8 PEM private key/,
    ],
  ];

  it.each(failures)(
    'stops the gateway on %s with CONFIG_INVALID naming the member',
    (_label, extra, env, pointer, message) => {
      writeFileSync(join(dir, 'not-a-key.pem'), `${secret}\n`, { mode: 0o600 });
      writeFileSync(join(dir, 'public.pem'), publicPem, { mode: 0o600 });
      writeFileSync(join(dir, 'ec.pem'), ecPem, { mode: 0o600 });
      const error = failure(() => resolveGatewayConfig({ ...minimal, ...(extra as object) }, dir, { env }));
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.details?.pointer).toBe(pointer);
      expect(error.message).toMatch(message);
      expect(JSON.stringify(error.toJSON())).not.toContain(secret.slice(0, 20));
    },
  );
});

describe('access', () => {
  const threeUpstreams = {
    upstreams: [...twoUpstreams.upstreams, { name: 'c', stdio: { command: 'z' } }],
    auth: { tokens: [{ name: 'ci', token: TOKEN, tier: 'pro' }] },
  };

  it('resolves an empty section to no rules and the default allow', () => {
    const config = resolveGatewayConfig({ ...threeUpstreams, access: {} }, dir, { env: {} });
    expect(config.access?.fallback).toBe('allow');
    expect(config.access?.ruleIds).toEqual([]);
    expect(config.access?.anonymousTier).toBe('community');
    expect(config.access?.claimPaths).toEqual([]);
    expect(config.auth.tokens[0]?.scopes).toEqual([]);
  });

  it('names each rule by its name, else its pointer, and takes the tiers section’s anonymous tier', () => {
    const config = resolveGatewayConfig(
      {
        ...threeUpstreams,
        tiers: { order: ['free', 'paid'], anonymous: 'free' },
        auth: { tokens: [{ name: 'ci', token: TOKEN, tier: 'paid', scopes: ['ops'] }] },
        access: {
          rules: [
            { name: 'ops', when: { scopes: ['ops'], token: 'ci' }, allow: ['*/*'] },
            { when: { tier: { exactly: 'free' } }, deny: ['a/write_*'] },
          ],
          default: 'deny',
        },
      },
      dir,
      { env: {} },
    );
    expect(config.access?.ruleIds).toEqual(['ops', '/access/rules/1']);
    expect(config.access?.fallback).toBe('deny');
    expect(config.access?.anonymousTier).toBe('free');
    expect(config.auth.tokens[0]?.scopes).toEqual(['ops']);
  });

  it('refuses an auth.oauth.tiers entry with neither scope nor claims, saying so', () => {
    const error = failure(() =>
      resolveGatewayConfig(
        { ...minimal, auth: { oauth: { issuer: 'https://auth.example.com', tiers: [{ tier: 'pro' }] } } },
        dir,
        { env: {} },
      ),
    );
    expect(error.details?.pointer).toBe('/auth/oauth/tiers/0');
    expect(error.message).toContain('must have "scope" or "claims" (or both)');
  });

  it.each([
    [{ rules: [{ allow: ['nowhere'] }] }, '/access/rules/0/allow/0', /must be an <upstream>\/<name> pattern/],
    [{ rules: [{ allow: ['a/'] }] }, '/access/rules/0/allow/0'],
    [{ rules: [{ deny: ['d/x'] }] }, '/access/rules/0/deny/0', /names upstream "d", which is not configured/],
    [{ rules: [{ when: { tier: 'gold' }, allow: ['a/*'] }] }, '/access/rules/0/when/tier', /tier "gold"/],
    [
      { rules: [{ when: { tier: { exactly: 'gold' } }, allow: ['a/*'] }] },
      '/access/rules/0/when/tier/exactly',
      /tier "gold"/,
    ],
    [
      { rules: [{ when: { token: 'nobody' }, allow: ['a/*'] }] },
      '/access/rules/0/when/token',
      /token "nobody"/,
    ],
    [
      { rules: [{ when: { issuer: 'https://elsewhere.example' }, allow: ['a/*'] }] },
      '/access/rules/0/when/issuer',
      /no auth\.oauth is configured/,
    ],
    [
      {
        rules: [
          { name: 'x', allow: ['a/*'] },
          { name: 'x', deny: ['b/*'] },
        ],
      },
      '/access/rules/1/name',
      /"x"/,
    ],
    [{ rules: [{ when: { anonymous: true } }] }, '/access/rules/0', /allows and denies nothing/],
    [{ rules: [{ when: { claims: { 'a..b': 'x' } }, allow: ['a/*'] }] }, '/access/rules/0/when/claims'],
    [{ default: 'maybe' }, '/access/default'],
  ])('refuses %j with CONFIG_INVALID at %s', (access, pointer, message?: RegExp) => {
    const error = failure(() => resolveGatewayConfig({ ...threeUpstreams, access }, dir, { env: {} }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.details?.pointer).toBe(pointer);
    if (message) expect(error.message).toMatch(message);
  });
});
