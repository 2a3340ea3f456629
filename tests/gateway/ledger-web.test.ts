/**
 * The gateway serves its ledger's viewer under /ledger, behind its bearer
 * tokens or a login session, with the signing key's public half for the
 * checks; its info page lists the ledger's latest calls. A real gateway
 * process, called through the official SDK client.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../../src/ledger/web/html.ts';
import { keyIdFor } from '../../src/provenance/integrity.ts';
import { raw } from '../unit/ledger/web-support.ts';
import { EXAMPLES, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import type { Running } from './processes.ts';

const TOKEN = 'ledger-viewer-token-5d1c';
const keys = generateKeyPairSync('ed25519');
const keyDir = mkdtempSync(join(tmpdir(), 'ledger-web-key-'));
const keyFile = join(keyDir, 'signing.pem');
writeFileSync(keyFile, keys.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });

const LEGACY = {
  name: 'legacy',
  stdio: { command: 'node', args: ['legacy-server.ts'], cwd: EXAMPLES },
  dialect: 'prov-v0.1',
};

let gateway: Running;
let origin: string;
let runId: string;

beforeAll(async () => {
  const dir = gatewayDir((config) => {
    config.upstreams = [LEGACY];
    config.auth = { required: true, tokens: [{ name: 'ops', token: TOKEN, tier: 'pro' }] };
    config.signing = { keyFile };
  });
  gateway = await startGatewayHttp(['--config', dir.config, '--no-stdio']);
  origin = new URL(gateway.url).origin;
  const client = new Client({ name: 'ledger-web', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gateway.url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  );
  const result = (await client.callTool({
    name: 'plain_text',
    arguments: {},
    _meta: { capture_provenance: true },
  })) as CallToolResult;
  runId = (result.structuredContent as { provenance: { run_id: string } }).provenance.run_id;
  await client.close();
});

afterAll(async () => {
  await gateway?.stop();
  removeGatewayDirs();
  rmSync(keyDir, { recursive: true, force: true });
});

const bearer = { authorization: `Bearer ${TOKEN}` };

describe('the gateway’s /ledger', () => {
  it('is closed without a token: pages go to the login form, the API answers 401, a wrong token 401', async () => {
    // The gateway says where the pages are when it starts.
    expect(gateway.stderr()).toMatch(/^Ledger pages: +http:\/\/127\.0\.0\.1:\d+\/ledger \(in a browser\)$/m);
    const page = await raw(origin, '/ledger');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/ledger/login');
    const api = await raw(origin, `/ledger/api/runs/${runId}`);
    expect(api.status).toBe(401);
    expect(JSON.parse(api.body).error.code).toBe('AUTH_REQUIRED');
    expect((await raw(origin, '/ledger', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
  });

  it('shows the call with the caller as principal and its signature checked under the signing key', async () => {
    const page = await raw(origin, '/ledger', { headers: bearer });
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(page.body).toContain(`<a href="/ledger/runs/${runId}">${runId}</a>`);
    expect(page.body).toContain('<td><code>plain_text</code></td>');
    expect(page.body).toContain('<td>token:ops</td>');
    expect(page.body).toMatch(
      /<td class="state state-pass">pass<\/td>\s*<td class="state state-pass">pass<\/td>/,
    );
    const record = await raw(origin, `/ledger/runs/${runId}`, { headers: bearer });
    expect(record.status).toBe(200);
    expect(record.body).toContain(`key id <code>${keyIdFor(keys.publicKey)}</code>: <strong>pass</strong>`);
    const proof = JSON.parse((await raw(origin, `/ledger/api/runs/${runId}`, { headers: bearer })).body);
    expect(proof.leaf_index).toBe(0);
    expect(proof.keys[0]).toMatchObject({ purpose: 'record', key_id: keyIdFor(keys.publicKey) });
  });

  it('gives a session cookie for a token posted from its own pages, and refuses a foreign Origin', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const body = new URLSearchParams({ token: TOKEN }).toString();
    const foreign = await raw(origin, '/ledger/login', {
      method: 'POST',
      headers: { ...form, origin: 'http://evil.example' },
      body,
    });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['set-cookie']).toBeUndefined();
    const ok = await raw(origin, '/ledger/login', { method: 'POST', headers: { ...form, origin }, body });
    expect(ok.status).toBe(303);
    const cookie = String((ok.headers['set-cookie'] as string[])[0]).split(';')[0] as string;
    const page = await raw(origin, '/ledger', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain(runId);
  });

  it('puts the latest calls and the ledger’s link on the info page, styled and under the same policy', async () => {
    const page = await raw(origin, '/mcp', { headers: { ...bearer, accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(page.body).toContain('<link rel="stylesheet" href="/ledger/assets/ledger.css">');
    expect(page.body).toContain('<h2>Recent calls</h2>');
    expect(page.body).toContain(`<a href="/ledger/runs/${runId}">${runId}</a>`);
    expect(page.body).toContain('<a href="/ledger">All calls, with their checks</a>');
    // No host paths: the upstream's command, arguments and folder stay out.
    for (const hidden of ['legacy-server.ts', EXAMPLES, keyFile]) expect(page.body).not.toContain(hidden);
    const css = await raw(origin, '/ledger/assets/ledger.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  });
});

describe('a gateway without a ledger', () => {
  it('still serves the stylesheet, and no viewer', async () => {
    const dir = gatewayDir((config) => {
      config.upstreams = [LEGACY];
      config.ledger = { enabled: false };
    });
    const bare = await startGatewayHttp(['--config', dir.config, '--no-stdio']);
    try {
      const base = new URL(bare.url).origin;
      expect((await raw(base, '/ledger/assets/ledger.css')).status).toBe(200);
      expect((await raw(base, '/ledger')).status).toBe(404);
      const page = await raw(base, '/mcp', { headers: { accept: 'text/html' } });
      expect(page.body).toContain('This gateway keeps no ledger of its calls.');
    } finally {
      await bare.stop();
    }
  });
});
