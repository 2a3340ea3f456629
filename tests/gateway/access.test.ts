import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSignature, loadPublicKey } from '../../src/provenance/integrity.ts';
import { type AuthServer, startAuthServer } from '../support/auth-server.ts';
import { runCli, startGatewayHttp } from './gateway-process.ts';
import { gatewayStdio, type Running } from './processes.ts';

/**
 * Authorization per identity (`access`), end to end: a real gateway process in
 * front of two copies of an upstream that writes down every request it
 * receives, one enveloped (`fs`, prov-v0.1) and one relayed untouched (`gh`,
 * passthrough); callers over stdio (anonymous), over HTTP with static tokens
 * and with OAuth access tokens oidc-provider issues with scopes and claims, on
 * both protocol revisions of the client leg. Each caller is shown only what
 * it may use, a hidden tool is answered as an unknown one, a tool a higher
 * tier would allow is refused with its upgrade hint, and no refused request
 * reaches an upstream.
 */

const PROBE = fileURLToPath(new URL('../fixtures/servers/access-probe.ts', import.meta.url));
/** Lists its tools over two pages: `echo`, then `exit`. */
const PAGED = fileURLToPath(new URL('../fixtures/servers/lifecycle.ts', import.meta.url));
const VIEWER = 'viewer-token-0123456789abcdef';
const BUILDER = 'builder-token-0123456789abcdef';
const OPERATOR = 'operator-token-0123456789abcdef';
const ERAS = ['2025-11-25', '2026-07-28'] as const;
type Era = (typeof ERAS)[number];

const ANY = {
  '~standard': { version: 1 as const, vendor: 'tests', validate: (value: unknown) => ({ value }) },
};

const dir = mkdtempSync(join(tmpdir(), 'access-'));
const LOG = join(dir, 'upstream-requests.log');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What the upstreams were asked, in order (`<method> <name or URI>`). */
function upstreamRequests(): string[] {
  try {
    return readFileSync(LOG, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

const ACCESS = {
  rules: [
    {
      name: 'basics',
      allow: ['*/read_file', '*/search', '*/list_repos', 'fs/file:///public/*', '*/review', '*/public-skill'],
    },
    { name: 'ops', when: { scopes: ['mcp:admin'] }, allow: ['*/*'] },
    { name: 'deleters', when: { tier: 'pro' }, allow: ['gh/delete_repo'] },
    { name: 'contractors', when: { claims: { groups: 'contractors' } }, deny: ['*/write_file'] },
  ],
  default: 'deny',
};

function config(
  listen: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    upstreams: [
      { name: 'fs', stdio: { command: 'node', args: [PROBE, '--log', LOG] } },
      { name: 'gh', stdio: { command: 'node', args: [PROBE, '--log', LOG] }, dialect: 'passthrough' },
    ],
    listen,
    access: ACCESS,
    ledger: { enabled: false },
    artifacts: { enabled: false },
    ...extra,
  };
}

function writeConfig(name: string, value: unknown): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(value, null, 2));
  return file;
}

function client(era: Era): Client {
  return new Client(
    { name: 'access-test', version: '1.0.0' },
    era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {},
  );
}

async function httpClient(url: string, era: Era, token: string): Promise<Client> {
  const sdk = client(era);
  await sdk.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return sdk;
}

/** A list as the gateway answered it (raw, so its cache hints are seen). */
async function list(sdk: Client, method: string): Promise<Record<string, unknown>> {
  return (await sdk.request({ method, params: {} }, ANY)) as Record<string, unknown>;
}

async function names(sdk: Client, method: string, key: string, member = 'name'): Promise<string[]> {
  const items = (await list(sdk, method))[key] as Record<string, unknown>[];
  return items.map((item) => String(item[member])).sort();
}

/** The JSON-RPC error a request was refused with. */
async function refusal(
  request: Promise<unknown>,
): Promise<{ code: number; message: string; data?: unknown }> {
  const outcome = await request.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a refusal, got ${JSON.stringify(outcome.value)}`);
  const { code, message, data } = outcome.error as { code: number; message: string; data?: unknown };
  return { code, message, data };
}

interface EnvelopeError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

function errorOf(result: unknown): EnvelopeError | undefined {
  const envelope = (result as CallToolResult).structuredContent as { errors?: EnvelopeError[] } | undefined;
  return envelope?.errors?.[0];
}

function textOf(result: unknown): string {
  const [block] = (result as CallToolResult).content;
  return block?.type === 'text' ? block.text : '';
}

/** What the anonymous (community) caller and the community token are shown, and what they are refused. */
const COMMUNITY_TOOLS = [
  'fs__list_repos',
  'fs__read_file',
  'fs__search',
  // A higher tier (pro) would allow it: listed, so its upgrade hint can be found.
  'gh__delete_repo',
  'gh__list_repos',
  'gh__read_file',
  'gh__search',
];

/** The checks every community caller passes, whatever its transport. */
async function showsCommunityView(sdk: Client): Promise<void> {
  expect(await names(sdk, 'tools/list', 'tools')).toEqual(COMMUNITY_TOOLS);
  expect(await names(sdk, 'prompts/list', 'prompts')).toEqual(['fs__review', 'gh__review']);
  // A skill's files go by its skill's name.
  expect(await names(sdk, 'resources/list', 'resources', 'uri')).toEqual([
    'file://fs//public/readme.txt',
    'skill://fs/public-skill/SKILL.md',
    'skill://gh/public-skill/SKILL.md',
  ]);
  expect(await names(sdk, 'resources/templates/list', 'resourceTemplates', 'uriTemplate')).toEqual([
    'file://fs//public/{name}',
  ]);
  const skills = (await list(sdk, 'skills/list')).skills as { name: string; uri: string }[];
  expect(skills.map((skill) => skill.uri).sort()).toEqual([
    'skill://fs/public-skill/SKILL.md',
    'skill://gh/public-skill/SKILL.md',
  ]);

  const before = upstreamRequests().length;
  // Hidden: answered as a tool no upstream has, in envelope mode and in passthrough alike.
  const unknown = await refusal(sdk.callTool({ name: 'fs__no_such_tool', arguments: {} }));
  for (const hidden of ['fs__write_file', 'gh__write_file', 'fs__delete_repo']) {
    const answer = await refusal(sdk.callTool({ name: hidden, arguments: {} }));
    const upstream = hidden.slice(0, 2);
    expect(answer).toEqual({
      code: unknown.code,
      message: unknown.message.replace('fs__no_such_tool', hidden),
      data: { ...(unknown.data as object), tool: hidden, upstream },
    });
  }
  expect(unknown.message).toContain('Unknown tool: fs__no_such_tool');
  // Under access rules a tool the passthrough upstream does not have, even one whose name the rules
  // allow (`*/review` names a prompt), is answered the same way, by the gateway: were the upstream
  // to answer it, the difference would tell which names are hidden.
  expect(await refusal(sdk.callTool({ name: 'gh__review', arguments: {} }))).toEqual({
    code: unknown.code,
    message: unknown.message.replace('fs__no_such_tool', 'gh__review'),
    data: { ...(unknown.data as object), tool: 'gh__review', upstream: 'gh' },
  });
  // Allowed at pro: UPGRADE_REQUIRED with the hint naming pro, before the upstream.
  const upgrade = await sdk.callTool({ name: 'gh__delete_repo', arguments: {} });
  expect(upgrade.isError).toBe(true);
  expect(errorOf(upgrade)).toMatchObject({
    code: 'UPGRADE_REQUIRED',
    details: { feature: 'gh__delete_repo', tier: 'pro' },
  });
  // Hidden prompts, resources and skills are unknown ones.
  expect(await refusal(sdk.getPrompt({ name: 'fs__admin' }))).toMatchObject({
    message: expect.stringContaining('Unknown name: fs__admin'),
  });
  for (const uri of [
    'file://fs//secret/keys.txt',
    'file://gh//public/readme.txt',
    'skill://fs/ops-skill/SKILL.md',
    // An allowed folder climbed out of, or a denied name spelled another way, lands where it lands.
    'file://fs//public/../secret/keys.txt',
    'file://fs//public/%2e%2e/secret/keys.txt',
    'file://fs//public/..%2Fsecret/keys.txt',
    'skill://fs/public-skill/../ops-skill/SKILL.md',
  ])
    expect(await refusal(sdk.readResource({ uri }))).toMatchObject({
      message: expect.stringContaining(`Unknown resource: ${uri}`),
    });
  // None of it reached an upstream.
  expect(upstreamRequests().slice(before)).toEqual([]);
  // What is allowed does, through either mode.
  expect(textOf(await sdk.callTool({ name: 'gh__read_file', arguments: { path: 'a' } }))).toContain(
    'read_file',
  );
  const enveloped = await sdk.callTool({ name: 'fs__search', arguments: {} });
  expect(enveloped.isError).toBeFalsy();
  expect((await sdk.readResource({ uri: 'file://fs//public/readme.txt' })).contents[0]).toMatchObject({
    text: 'contents of file:///public/readme.txt',
  });
  expect(upstreamRequests().slice(before)).toEqual([
    'tools/call read_file',
    'tools/call search',
    'resources/read file:///public/readme.txt',
  ]);
}

describe.each(ERAS)('over stdio, the anonymous caller (client on %s)', (era) => {
  let sdk: Client;

  beforeAll(async () => {
    sdk = client(era);
    await sdk.connect(
      gatewayStdio(writeConfig(`stdio-${era}`, config({ stdio: true, http: false })), { stderr: 'pipe' }),
    );
  }, 30_000);

  afterAll(() => sdk?.close());

  it('is shown what the community tier may use, and refused the rest before any upstream', async () => {
    await showsCommunityView(sdk);
  });

  if (era === '2026-07-28')
    it('marks its lists private, where the upstream called them public', async () => {
      for (const method of [
        'tools/list',
        'prompts/list',
        'resources/list',
        'resources/templates/list',
        'skills/list',
      ])
        expect((await list(sdk, method)).cacheScope, method).toBe('private');
    });
});

describe('over HTTP, static tokens and OAuth access tokens', () => {
  let as: AuthServer;
  let gateway: Running;
  const logs = join(dir, 'http-logs');

  const publicPem = join(dir, 'keys', 'gateway.public.pem');

  beforeAll(async () => {
    mkdirSync(join(dir, 'keys'));
    const keygen = await runCli(['keygen', '--out', join(dir, 'keys', 'gateway')]);
    expect(keygen.code, keygen.stderr).toBe(0);
    as = await startAuthServer();
    const file = writeConfig(
      'http',
      config(
        { stdio: false },
        {
          auth: {
            tokens: [
              { name: 'viewer', token: VIEWER, tier: 'community' },
              { name: 'builder', token: BUILDER, tier: 'pro' },
              { name: 'operator', token: OPERATOR, tier: 'community', scopes: ['mcp:admin'] },
            ],
            oauth: {
              issuer: as.issuer,
              tiers: [
                { claims: { org_role: 'admin' }, tier: 'enterprise' },
                { scope: 'mcp:pro', tier: 'pro' },
              ],
            },
          },
          logs: { dir: logs },
          // Every record signed: a record's labels name who asked, under the signature.
          signing: { keyFile: 'keys/gateway.private.pem' },
        },
      ),
    );
    gateway = await startGatewayHttp(['--config', file]);
    as.resource = gateway.url;
  }, 30_000);

  afterAll(async () => {
    await gateway?.stop();
    await as?.close();
  });

  /** An access token oidc-provider issues for the gateway with these scopes and claims. */
  async function accessToken(scope: string, claims: Record<string, unknown> = {}): Promise<string> {
    as.extraClaims = claims;
    try {
      return (await as.clientCredentials(scope)).access_token as string;
    } finally {
      as.extraClaims = {};
    }
  }

  describe.each(ERAS)('client on %s', (era) => {
    it('shows a community token the community view, and refuses the rest before any upstream', async () => {
      const sdk = await httpClient(gateway.url, era, VIEWER);
      try {
        await showsCommunityView(sdk);
        const tools = await list(sdk, 'tools/list');
        if (era === '2026-07-28') expect(tools.cacheScope).toBe('private');
      } finally {
        await sdk.close();
      }
    });

    it('lets a pro token call what pro allows, and an operator token (scope mcp:admin) everything', async () => {
      const [pro, operator] = await Promise.all([
        httpClient(gateway.url, era, BUILDER),
        httpClient(gateway.url, era, OPERATOR),
      ]);
      try {
        expect(await names(pro, 'tools/list', 'tools')).toEqual(COMMUNITY_TOOLS);
        const before = upstreamRequests().length;
        expect(textOf(await pro.callTool({ name: 'gh__delete_repo', arguments: {} }))).toContain(
          'delete_repo',
        );
        expect(await names(operator, 'tools/list', 'tools')).toHaveLength(10);
        expect(await names(operator, 'prompts/list', 'prompts')).toEqual([
          'fs__admin',
          'fs__review',
          'gh__admin',
          'gh__review',
        ]);
        const written = await operator.callTool({ name: 'fs__write_file', arguments: { path: 'x' } });
        expect(written.isError).toBeFalsy();
        expect(upstreamRequests().slice(before)).toEqual(['tools/call delete_repo', 'tools/call write_file']);
      } finally {
        await Promise.all([pro.close(), operator.close()]);
      }
    });

    it('reads scopes and claims of access tokens oidc-provider issued: deny beats allow, claims give tiers', async () => {
      // One after the other: the claims are the authorization server's state while it issues.
      const contractor = await accessToken('mcp:admin', { groups: ['staff', 'contractors'] });
      const admin = await accessToken('mcp:tools', { org_role: 'admin' });
      const [asContractor, asAdmin] = await Promise.all([
        httpClient(gateway.url, era, contractor),
        httpClient(gateway.url, era, admin),
      ]);
      try {
        // mcp:admin allows everything, but the contractors' deny wins over it: write_file is hidden.
        const tools = await names(asContractor, 'tools/list', 'tools');
        expect(tools).toHaveLength(8);
        expect(tools).not.toContain('fs__write_file');
        const before = upstreamRequests().length;
        expect(await refusal(asContractor.callTool({ name: 'gh__write_file', arguments: {} }))).toMatchObject(
          {
            message: expect.stringContaining('Unknown tool: gh__write_file'),
          },
        );
        expect(upstreamRequests().slice(before)).toEqual([]);
        // org_role admin makes the enterprise tier, at least pro: delete_repo is allowed.
        expect(textOf(await asAdmin.callTool({ name: 'gh__delete_repo', arguments: {} }))).toContain(
          'delete_repo',
        );
        expect(upstreamRequests().slice(before)).toEqual(['tools/call delete_repo']);
      } finally {
        await Promise.all([asContractor.close(), asAdmin.close()]);
      }
    });
  });

  it('names on the info page only the tools the caller may see', async () => {
    const page = await fetch(gateway.url, {
      headers: { accept: 'text/html', authorization: `Bearer ${VIEWER}` },
    });
    expect(page.status).toBe(200);
    const html = await page.text();
    for (const tool of COMMUNITY_TOOLS) expect(html).toContain(tool);
    for (const hidden of ['fs__write_file', 'gh__write_file', 'fs__delete_repo'])
      expect(html).not.toContain(hidden);
  });

  it('labels a signed record with who asked and the rule that allowed it; mcp-envelope verify passes', async () => {
    const admin = await accessToken('mcp:tools', { org_role: 'admin' });
    const jti = JSON.parse(Buffer.from(admin.split('.')[1] as string, 'base64url').toString('utf8')).jti;
    const sdk = await httpClient(gateway.url, '2025-11-25', admin);
    let answer: CallToolResult;
    try {
      answer = (await sdk.callTool({
        name: 'fs__read_file',
        arguments: { path: 'a' },
        _meta: { capture_provenance: true },
      })) as CallToolResult;
    } finally {
      await sdk.close();
    }
    type Record = { inputs: { labels?: { [label: string]: string } }[] };
    const envelope = answer.structuredContent as { provenance: Record };
    expect(envelope.provenance.inputs[0]?.labels).toEqual({
      role: 'arguments',
      principal: `oauth:${as.issuer}#mcp-test-client`,
      principal_subject: 'mcp-test-client',
      principal_issuer: as.issuer,
      principal_client_id: 'mcp-test-client',
      principal_tier: 'enterprise',
      principal_token_id: jti,
      access_decision: 'allow',
      access_rule: 'basics',
      tool_definition: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    const key = loadPublicKey(readFileSync(publicPem));
    expect(checkSignature(envelope.provenance as never, key)).toMatchObject({ status: 'pass' });
    const saved = join(dir, 'answer.json');
    writeFileSync(saved, JSON.stringify(envelope));
    const run = await runCli(['verify', saved, '--public-key', publicPem]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/VERIFIED.*signature/);
    // The labels are under the signature: a record naming someone else does not verify.
    const forged = structuredClone(envelope);
    (forged.provenance.inputs[0] as { labels: { [label: string]: string } }).labels.principal_subject =
      'mallory';
    writeFileSync(saved, JSON.stringify(forged));
    const refused = await runCli(['verify', saved, '--public-key', publicPem]);
    expect(refused.code, refused.stdout).not.toBe(0);
  });

  it('logs who asked and what the rules decided, never the token', async () => {
    const admin = await accessToken('mcp:tools', { org_role: 'admin' });
    const sdk = await httpClient(gateway.url, '2026-07-28', admin);
    await sdk.callTool({ name: 'gh__delete_repo', arguments: {} });
    await refusal(sdk.callTool({ name: 'fs__write_file', arguments: {} }));
    await sdk.close();
    await gateway.stop();
    const lines = readdirSync(logs, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.jsonl') && !file.endsWith('.latest.jsonl'))
      .flatMap((file) => readFileSync(join(logs, file), 'utf8').split('\n').filter(Boolean))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const jti = JSON.parse(Buffer.from(admin.split('.')[1] as string, 'base64url').toString('utf8')).jti;
    const oauth = lines.filter((line) => line.tokenId === jti);
    expect(oauth).toEqual([
      expect.objectContaining({
        tool: 'delete_repo',
        upstream: 'gh',
        outcome: 'ok',
        principal: `oauth:${as.issuer}#mcp-test-client`,
        subject: 'mcp-test-client',
        issuer: as.issuer,
        clientId: 'mcp-test-client',
        tier: 'enterprise',
        access: { decision: 'allow', rule: 'deleters' },
      }),
      expect.objectContaining({
        tool: 'write_file',
        upstream: 'fs',
        code: 'NOT_FOUND',
        access: { decision: 'deny', rule: 'default' },
      }),
    ]);
    const viewer = lines.find(
      (line) => line.principal === 'token:viewer' && line.tool === 'delete_repo' && line.upstream === 'gh',
    );
    expect(viewer).toMatchObject({
      tier: 'community',
      tokenId: 'viewer',
      code: 'UPGRADE_REQUIRED',
      access: { decision: 'deny', rule: 'default' },
    });
    const text = lines.map((line) => JSON.stringify(line)).join('\n');
    for (const secret of [VIEWER, BUILDER, OPERATOR, admin]) expect(text).not.toContain(secret);
  });
});

describe('pagination', () => {
  async function stdioGateway(name: string, upstreams: string[], deny: string[]): Promise<Client> {
    const sdk = client('2025-11-25');
    const file = writeConfig(name, {
      upstreams: upstreams.map((upstream) => ({
        name: upstream,
        stdio: { command: 'node', args: [PAGED] },
        protocol: '2025-11-25',
      })),
      access: { rules: [{ deny }] },
      ledger: { enabled: false },
      logs: { enabled: false },
      artifacts: { enabled: false },
    });
    await sdk.connect(gatewayStdio(file, { stderr: 'pipe' }));
    return sdk;
  }

  it("keeps one upstream's pages and cursors, a page possibly emptied by what it hid", async () => {
    const sdk = await stdioGateway('paged-one', ['one'], ['one/echo']);
    try {
      const first = await sdk.request({ method: 'tools/list', params: {} }, ANY);
      expect(first).toMatchObject({ tools: [], nextCursor: '1' });
      const second = (await sdk.request({ method: 'tools/list', params: { cursor: '1' } }, ANY)) as {
        tools: { name: string }[];
        nextCursor?: string;
      };
      expect(second.tools.map((tool) => tool.name)).toEqual(['exit']);
      expect(second.nextCursor).toBeUndefined();
    } finally {
      await sdk.close();
    }
  }, 30_000);

  it('gathers every page of several upstreams, then leaves out what the caller may not see', async () => {
    const sdk = await stdioGateway('paged-two', ['a', 'b'], ['a/echo', 'b/exit']);
    try {
      const listed = (await sdk.request({ method: 'tools/list', params: {} }, ANY)) as {
        tools: { name: string }[];
        nextCursor?: string;
      };
      expect(listed.tools.map((tool) => tool.name)).toEqual(['a__exit', 'b__echo']);
      expect(listed.nextCursor).toBeUndefined();
    } finally {
      await sdk.close();
    }
  }, 30_000);
});
