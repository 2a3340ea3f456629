/**
 * The record page's verification (verify.js and the modules it imports, served
 * by serveLedgerAsset) in real Chromium, under the ledger pages' CSP, against
 * proofs of a real ledger file: every check passes, a pasted key is used and
 * named, and a proof altered on its way to the page fails, saying where. The
 * page here carries the record page's verification section as the ledger
 * pages write it, served over real HTTP next to the real assets and proof JSON.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, writeCheckpoint } from '../../src/ledger/index.ts';
import { serveLedgerAsset } from '../../src/ledger/web/assets.ts';
import { signRecord } from '../../src/provenance/integrity.ts';
import {
  axeViolations,
  freshContext,
  keepScreenshot,
  launchChromium,
  SKIP_BROWSER,
  watchPage,
} from '../support/chromium.ts';
import { runProof } from '../support/run-proof.ts';
import { callRecord } from '../unit/ledger/fixtures.ts';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const signer = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');
const RUN = '00000000-0000-4000-8000-000000000003';
const dir = mkdtempSync(join(tmpdir(), 'browser-verify-'));
const file = join(dir, 'ledger.sqlite');
let server: Server;
let origin: string;
let browser: Browser;

function recordPage(runId: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Run ${runId}</title></head>
<body><main><h1>Run ${runId}</h1>
<section id="verification" aria-labelledby="verification-title" data-proof-url="/ledger/api/runs/${runId}">
<h2 id="verification-title">Verify this record</h2>
<p>Checks the log entry, its inclusion proof and signatures in this browser.</p>
<label for="trusted-key">Public key you trust (optional)</label><textarea id="trusted-key"></textarea><button type="button" id="verify-button">Verify</button><ol id="verification-result" aria-live="polite"></ol></section>
</main><script type="module" src="/ledger/assets/verify.js"></script></body></html>`;
}

beforeAll(async () => {
  const ledger = Ledger.open(file);
  for (let i = 1; i <= 5; i++) {
    const run = `00000000-0000-4000-8000-00000000000${i}`;
    const { record, envelope } = callRecord(run, 'echo', { text: `<script>window.__pwned = ${i}</script>` });
    ledger.insert({ ...envelope, provenance: signRecord(record, signer.privateKey) }, { upstream: 'up' });
  }
  writeCheckpoint(ledger, signer.privateKey);
  ledger.close();
  server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path.startsWith('/ledger/assets/') && serveLedgerAsset(res, path.slice('/ledger/assets/'.length)))
      return;
    if (path === '/csp-probe') {
      // What the tests' CSP watch must catch: an inline script the policy blocks.
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP });
      res.end(
        '<!doctype html><html lang="en"><title>probe</title><script>window.__pwned = 1</script></html>',
      );
      return;
    }
    const page = /^\/ledger\/runs\/([0-9a-f-]+)$/.exec(path);
    if (page) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP });
      res.end(recordPage(page[1] as string));
      return;
    }
    const api = /^\/ledger\/api\/runs\/([0-9a-f-]+)$/.exec(path);
    if (api) {
      const read = Ledger.open(file, { readOnly: true });
      try {
        const body = JSON.stringify(runProof(read, api[1] as string, signer.publicKey));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      } finally {
        read.close();
      }
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  if (!SKIP_BROWSER) browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

/** Opens the record page, pastes `key` if given, clicks Verify and answers each check's status once all are shown. */
async function verify(
  page: Page,
  key?: string,
): Promise<{ outcome: string; checks: Record<string, string>; text: string }> {
  await page.goto(`${origin}/ledger/runs/${RUN}`);
  if (key !== undefined) await page.fill('#trusted-key', key);
  await page.click('#verify-button');
  const list = page.locator('#verification-result[data-outcome]');
  await list.waitFor();
  const items = await page
    .locator('#verification-result > li')
    .evaluateAll((lis) =>
      lis.map((li) => [
        (li as unknown as { dataset: Record<string, string> }).dataset.check,
        (li as unknown as { dataset: Record<string, string> }).dataset.status,
      ]),
    );
  return {
    outcome: (await list.getAttribute('data-outcome')) as string,
    checks: Object.fromEntries(items),
    text: await list.innerText(),
  };
}

const ALL_PASS = {
  leaf: 'pass',
  inclusion: 'pass',
  'checkpoint-signature': 'pass',
  'record-signature': 'pass',
  'record-digest': 'pass',
  'envelope-digest': 'pass',
};

describe.skipIf(SKIP_BROWSER)('verification in Chromium', () => {
  it('passes every check with the server’s keys, under the pages’ CSP, with no script of the record run', async () => {
    const context = await freshContext(browser);
    const page = await context.newPage();
    const watch = watchPage(page);
    const result = await verify(page);
    expect(result.checks).toEqual(ALL_PASS);
    expect(result.outcome).toBe('pass');
    expect(result.text).toMatch(/Pass: The entry is in the log the checkpoint signs/);
    expect(result.text).toMatch(/a key the server sent, so untrusted/);
    expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
    expect(watch).toMatchObject({ consoleErrors: [], pageErrors: [], dialogs: [] });
    expect(await axeViolations(page)).toEqual([]);
    await keepScreenshot(page, 'verification-done');
    await context.close();
  });

  it('uses a pasted PEM key instead of the server’s and says so; another key fails the signatures', async () => {
    const context = await freshContext(browser);
    const page = await context.newPage();
    const watch = watchPage(page);
    const trusted = await verify(page, signer.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    expect(trusted.checks).toEqual({ 'trusted-key': 'pass', ...ALL_PASS });
    expect(trusted.text).toMatch(/signed by the key you gave \(ed25519:[0-9a-f]{32}\) \(the key you gave\)/);
    const wrong = await verify(page, stranger.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    expect(wrong.outcome).toBe('fail');
    expect(wrong.checks).toMatchObject({
      'checkpoint-signature': 'fail',
      'record-signature': 'fail',
      inclusion: 'pass',
    });
    expect(watch).toMatchObject({ consoleErrors: [], pageErrors: [], dialogs: [] });
    await context.close();
  });

  it('fails a proof altered on its way to the page, naming the check', async () => {
    const context = await freshContext(browser);
    const page = await context.newPage();
    await page.route('**/ledger/api/runs/*', async (route) => {
      const response = await route.fetch();
      const proof = (await response.json()) as { leaf: string };
      const leaf = Buffer.from(proof.leaf, 'base64');
      const at = leaf.indexOf('"tool":"echo"') + 9;
      leaf.writeUInt8(leaf.readUInt8(at) ^ 0x02, at);
      await route.fulfill({ response, json: { ...proof, leaf: leaf.toString('base64') } });
    });
    const result = await verify(page);
    expect(result.outcome).toBe('fail');
    expect(result.checks.inclusion).toBe('fail');
    expect(result.text).toMatch(
      /Fail: The entry is in the log the checkpoint signs[^\n]*not the checkpoint's/,
    );
    await context.close();
  });

  it('sees a CSP violation as a console error, which is how the other tests know there was none', async () => {
    const context = await freshContext(browser);
    const page = await context.newPage();
    const watch = watchPage(page);
    const reported = page.waitForEvent('console', (message) =>
      /Content Security Policy/.test(message.text()),
    );
    await page.goto(`${origin}/csp-probe`);
    await reported;
    expect(watch.cspViolations()).toEqual([expect.stringMatching(/inline script/)]);
    expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
    await context.close();
  });

  it('says the proof could not be had when the server answers an error', async () => {
    const context = await freshContext(browser);
    const page = await context.newPage();
    await page.route('**/ledger/api/runs/*', (route) =>
      route.fulfill({ status: 503, body: 'ledger is busy' }),
    );
    const result = await verify(page);
    expect(result).toMatchObject({ outcome: 'fail', checks: { proof: 'fail' } });
    expect(result.text).toMatch(/answered 503: ledger is busy/);
    await context.close();
  });
});
