/**
 * The ledger pages as the gateway and `ledger serve` serve them, in Chromium:
 * a real gateway process (bearer tokens, signing key, ledger) fronting an
 * upstream whose tool descriptions, answers and errors are markup and script,
 * called through the official SDK client; then its info page at GET /mcp, its
 * /ledger behind the login form, a record verified in the browser with the
 * server's key and with the key a person pastes, and the same ledger under
 * `ledger serve`. No script of the content runs, no CSP violation or axe-core
 * violation is reported.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from '../gateway/gateway-process.ts';
import { BIN, NODE, ROOT, type Running, stopChild } from '../gateway/processes.ts';
import {
  axeViolations,
  freshContext,
  keepScreenshot,
  launchChromium,
  type PageWatch,
  SKIP_BROWSER,
  watchPage,
} from '../support/chromium.ts';

const MARKUP_SERVER = fileURLToPath(new URL('../fixtures/servers/markup.ts', import.meta.url));
const TOKEN = 'gateway-pages-token-7f3a';
const keys = generateKeyPairSync('ed25519');
const keyDir = mkdtempSync(join(tmpdir(), 'gateway-pages-key-'));
const keyFile = join(keyDir, 'signing.pem');
const publicFile = join(keyDir, 'signing.pub.pem');
const PUBLIC_PEM = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
writeFileSync(keyFile, keys.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
writeFileSync(publicFile, PUBLIC_PEM);

let browser: Browser;
let gateway: Running | undefined;
let ledgerFile: string;
let configFile: string;
const runIds: Record<string, string> = {};

async function callAll(url: string): Promise<void> {
  const client = new Client({ name: 'gateway-pages', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  );
  for (const name of ['plain', 'markup', 'markup_error', 'plain']) {
    const result = (await client.callTool({
      name,
      arguments: {},
      _meta: { capture_provenance: true },
    })) as CallToolResult;
    const record = (result.structuredContent as { provenance?: { run_id: string } } | undefined)?.provenance;
    if (record) runIds[name] = record.run_id;
  }
  await client.close();
}

beforeAll(async () => {
  const dir = gatewayDir((config) => {
    config.upstreams = [
      { name: 'markup', stdio: { command: NODE, args: [MARKUP_SERVER], cwd: ROOT }, dialect: 'prov-v0.1' },
    ];
    config.auth = { required: true, tokens: [{ name: 'ops', token: TOKEN, tier: 'pro' }] };
    config.signing = { keyFile };
  });
  ledgerFile = dir.ledger;
  configFile = dir.config;
  // The gateway writes a signed checkpoint when it stops: the second one serves a ledger whose calls it covers.
  const first = await startGatewayHttp(['--config', configFile, '--no-stdio']);
  await callAll(first.url);
  await first.stop();
  gateway = await startGatewayHttp(['--config', configFile, '--no-stdio']);
  if (!SKIP_BROWSER) browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  removeGatewayDirs();
  rmSync(keyDir, { recursive: true, force: true });
});

async function expectClean(page: Page, watch: PageWatch): Promise<void> {
  expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
  expect(watch.dialogs).toEqual([]);
  expect(watch.pageErrors).toEqual([]);
  expect(watch.cspViolations()).toEqual([]);
  expect(watch.consoleErrors).toEqual([]);
  expect(await axeViolations(page)).toEqual([]);
}

async function runVerification(
  page: Page,
  key?: string,
): Promise<{ outcome: string; checks: Record<string, string>; text: string }> {
  if (key !== undefined) await page.fill('#trusted-key', key);
  await page.click('#verify-button');
  const list = page.locator('#verification-result[data-outcome]');
  await list.waitFor();
  const items = await page
    .locator('#verification-result > li')
    .evaluateAll((lis) =>
      lis.map((li) => [li.getAttribute('data-check') as string, li.getAttribute('data-status') as string]),
    );
  return {
    outcome: (await list.getAttribute('data-outcome')) as string,
    checks: Object.fromEntries(items),
    text: await list.innerText(),
  };
}

// The gateway files records without their envelopes: there is no envelope text to check.
const ALL_PASS = {
  leaf: 'pass',
  inclusion: 'pass',
  'checkpoint-signature': 'pass',
  'record-digest': 'pass',
  'record-signature': 'pass',
  'envelope-digest': 'not-checked',
};

describe.skipIf(SKIP_BROWSER)('the gateway’s pages in Chromium', () => {
  it('shows its info page at GET /mcp with the markup of tool descriptions as text', async () => {
    // The info page is behind the gateway's tokens like the endpoint itself; a browser that has one sends it.
    const context = await freshContext(browser);
    await context.setExtraHTTPHeaders({ authorization: `Bearer ${TOKEN}` });
    const page = await context.newPage();
    const watch = watchPage(page);
    const response = await page.goto((gateway as Running).url);
    expect(response?.status()).toBe(200);
    expect(await page.locator('body').innerText()).toContain('Answers markup: <script>');
    await expectClean(page, watch);
    await keepScreenshot(page, 'info');
    await context.close();
  });

  it('logs in at /ledger, opens the markup call’s record and verifies it with the server’s key and a pasted one', async () => {
    expect(Object.keys(runIds).sort()).toEqual(['markup', 'markup_error', 'plain']);
    const origin = new URL((gateway as Running).url).origin;
    const context = await freshContext(browser);
    const page = await context.newPage();
    const watch = watchPage(page);
    await page.goto(`${origin}/ledger`);
    expect(page.url()).toBe(`${origin}/ledger/login`);
    await page.fill('#token', TOKEN);
    await Promise.all([
      page.waitForURL(`${origin}/ledger`),
      page.getByRole('button', { name: 'Log in' }).click(),
    ]);
    await expectClean(page, watch);
    await keepScreenshot(page, 'gateway-runs');
    for (const tool of ['markup', 'markup_error']) {
      await Promise.all([
        page.waitForURL(`${origin}/ledger/runs/${runIds[tool]}`),
        page.click(`a[href="/ledger/runs/${runIds[tool]}"]`),
      ]);
      const served = await runVerification(page);
      expect(served.checks, tool).toEqual(ALL_PASS);
      expect(served.outcome).toBe('pass');
      expect(served.text).toMatch(/Nothing to check: The stored envelope[^\n]*stored without its envelope/);
      expect(served.text).toMatch(/a key the server sent, so untrusted/);
      const pasted = await runVerification(page, PUBLIC_PEM);
      expect(pasted.checks, tool).toEqual({ 'trusted-key': 'pass', ...ALL_PASS });
      expect(pasted.text).toMatch(/\(the key you gave\)/);
      await expectClean(page, watch);
      if (tool === 'markup_error') await keepScreenshot(page, 'gateway-record-verified');
      await page.goBack();
    }
    await context.close();
  });
});

describe.skipIf(SKIP_BROWSER)('ledger serve’s pages in Chromium', () => {
  let child: ChildProcess;
  let origin: string;

  beforeAll(async () => {
    if (SKIP_BROWSER) return;
    await gateway?.stop();
    gateway = undefined;
    child = spawn(
      NODE,
      [BIN, 'ledger', 'serve', '--db', ledgerFile, '--http', '127.0.0.1:0', '--public-key', publicFile],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    origin = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout?.setEncoding('utf8').on('data', (text: string) => {
        out += text;
        const match = /^ledger viewer: (http:\/\/\S+) /m.exec(out);
        if (match?.[1]) resolve(new URL(match[1]).origin);
      });
      child.once('exit', (code) => reject(new Error(`ledger serve exited with ${code}`)));
    });
  });
  afterAll(() => (child ? stopChild(child) : undefined));

  it('verifies a record of the gateway’s ledger, open on loopback without a login', async () => {
    const context = await freshContext(browser);
    const page = await context.newPage();
    const watch = watchPage(page);
    await page.goto(`${origin}/ledger/runs/${runIds.markup}`);
    const result = await runVerification(page, PUBLIC_PEM);
    expect(result.checks).toEqual({ 'trusted-key': 'pass', ...ALL_PASS });
    expect(result.outcome).toBe('pass');
    await expectClean(page, watch);
    await context.close();
  });
});
