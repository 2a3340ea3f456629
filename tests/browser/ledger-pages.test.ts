/**
 * The ledger viewer's pages in real Chromium, as a person uses them: log in,
 * filter and page the runs table, open a record, run its verification, open
 * its lineage graph and follow a node. The ledger is a real file holding
 * signed records of tools whose names and results carry markup and script;
 * none of it may run. Each page keeps to its CSP (no violation is reported),
 * has no axe-core violation, and leaves a screenshot in test-output/screenshots/.
 * A second viewer serves a copy of the ledger whose log leaf was changed on
 * disk: its verification fails, naming the check.
 */
import { generateKeyPairSync } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, writeCheckpoint } from '../../src/ledger/index.ts';
import { createLedgerWeb } from '../../src/ledger/web/index.ts';
import { buildCallRecord, DEFAULT_CONTROLS } from '../../src/provenance/index.ts';
import { signRecord } from '../../src/provenance/integrity.ts';
import {
  axeViolations,
  freshContext,
  keepScreenshot,
  launchChromium,
  type PageWatch,
  SKIP_BROWSER,
  watchPage,
} from '../support/chromium.ts';

const TOKEN = 'viewer-token-0123456789';
const MARKUP = `<script>window.__pwned='tool'</script><img src=x onerror="window.__pwned='img'">`;
const signer = generateKeyPairSync('ed25519');
const dir = mkdtempSync(join(tmpdir(), 'ledger-pages-'));
const file = join(dir, 'ledger.sqlite');
const tampered = join(dir, 'tampered.sqlite');
const run = (i: number) => `00000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}`;
const ROOT_RUN = run(1);
const CHILD_RUN = run(2);
const GRANDCHILD_RUN = run(3);
const MARKUP_RUN = run(4);
const RUNS = 24;

interface Viewer {
  origin: string;
  close(): Promise<void>;
}
const viewers: Viewer[] = [];
let browser: Browser;

function addRecord(ledger: Ledger, i: number, tool: string, parents: string[] = []): void {
  const record = buildCallRecord({
    runId: run(i),
    tool: { name: tool, version: '1.0.0', adapter: 'mcp' },
    action: 'wrapped',
    inputs: [{ id: 'arguments', mediaType: 'application/json', content: { json: { text: MARKUP } } }],
    result: { text: `answer ${i}: ${MARKUP}` },
    attached: true,
    controls: { ...DEFAULT_CONTROLS, captureProvenance: true, provenanceMode: 'full' },
    parents,
  });
  const signed = signRecord(record, signer.privateKey);
  const envelope = {
    schema_version: 'mcp.envelope.v0.1',
    result: { text: `answer ${i}: ${MARKUP}` },
    provenance: signed,
  };
  ledger.insert(envelope, {
    tool,
    upstream: i % 2 ? 'left' : 'right',
    principal: i % 3 ? 'alice' : `bob ${MARKUP}`,
  });
}

/** The viewer over `path` on a real HTTP server, behind a required bearer token / login. */
async function startViewer(path: string): Promise<Viewer> {
  const ledger = Ledger.open(path, { readOnly: true });
  const web = createLedgerWeb({
    ledger,
    publicKey: signer.publicKey,
    auth: { required: true, check: (token) => token === TOKEN },
  });
  const server: Server = createServer((req, res) => {
    void web.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const viewer = {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          ledger.close();
          resolve();
        }),
      ),
  };
  viewers.push(viewer);
  return viewer;
}

beforeAll(async () => {
  const ledger = Ledger.open(file);
  addRecord(ledger, 1, 'fetch');
  addRecord(ledger, 2, 'summarize', [ROOT_RUN]);
  addRecord(ledger, 3, 'translate', [CHILD_RUN, ROOT_RUN]);
  addRecord(ledger, 4, MARKUP);
  for (let i = 5; i <= RUNS; i++) addRecord(ledger, i, 'echo');
  writeCheckpoint(ledger, signer.privateKey);
  ledger.close();
  // The copy's leaf for MARKUP_RUN says another principal: one byte, still well-formed JSON.
  copyFileSync(file, tampered);
  const db = new DatabaseSync(tampered);
  const row = db.prepare('SELECT seq, leaf FROM records WHERE run_id = ?').get(MARKUP_RUN) as {
    seq: number;
    leaf: Uint8Array;
  };
  const leaf = Buffer.from(row.leaf);
  const at = leaf.indexOf('"principal":"alice"') + 17;
  leaf.writeUInt8(leaf.readUInt8(at) ^ 0x01, at);
  db.prepare('UPDATE records SET leaf = ? WHERE seq = ?').run(leaf, row.seq);
  db.close();
  if (!SKIP_BROWSER) browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  for (const viewer of viewers.splice(0)) await viewer.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What every page must be: no script of the content ran, no dialog, no error or CSP violation, no axe violation. */
async function expectClean(page: Page, watch: PageWatch): Promise<void> {
  expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
  expect(watch.dialogs).toEqual([]);
  expect(watch.pageErrors).toEqual([]);
  expect(watch.cspViolations()).toEqual([]);
  expect(watch.consoleErrors).toEqual([]);
  expect(await axeViolations(page)).toEqual([]);
}

async function logIn(page: Page, origin: string): Promise<void> {
  await page.goto(`${origin}/ledger`);
  await page.fill('#token', TOKEN);
  await Promise.all([
    page.waitForURL(`${origin}/ledger`),
    page.getByRole('button', { name: 'Log in' }).click(),
  ]);
}

/** Clicks Verify and answers each check's status, and the outcome, once the list is complete. */
async function runVerification(
  page: Page,
): Promise<{ outcome: string; checks: Record<string, string>; text: string }> {
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

describe.skipIf(SKIP_BROWSER)('the ledger viewer in Chromium', () => {
  let viewer: Viewer;
  let context: BrowserContext;
  let page: Page;
  let watch: PageWatch;

  beforeAll(async () => {
    if (SKIP_BROWSER) return;
    viewer = await startViewer(file);
    context = await freshContext(browser);
    page = await context.newPage();
    watch = watchPage(page);
  });
  afterAll(() => context?.close());

  it('sends a person without a session to the login form, refuses a wrong token, and lets the right one in', async () => {
    await page.goto(`${viewer.origin}/ledger`);
    expect(page.url()).toBe(`${viewer.origin}/ledger/login`);
    await expectClean(page, watch);
    await keepScreenshot(page, 'login');
    await page.fill('#token', 'not-the-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect(page.locator('[role="alert"]').innerText()).resolves.toMatch(/not valid/);
    // The failed login answered 401, which Chromium reports as a console error; that one is expected.
    watch.consoleErrors.splice(0);
    await logIn(page, viewer.origin);
    await expect(page.locator('h1').innerText()).resolves.toBe('Runs');
  });

  it('shows the runs table with the markup as text, filters it and pages through it', async () => {
    await page.goto(`${viewer.origin}/ledger`);
    await expectClean(page, watch);
    await keepScreenshot(page, 'runs');
    const tools = () => page.locator('tbody tr td:nth-child(4)').allInnerTexts();
    expect(await tools()).toContain(MARKUP);
    await page.fill('#f-tool', 'echo');
    await page.fill('#f-limit', '5');
    await Promise.all([page.waitForURL(/tool=echo/), page.getByRole('button', { name: 'Apply' }).click()]);
    const first = await page.locator('tbody th[scope="row"]').allInnerTexts();
    expect(first).toHaveLength(5);
    expect(new Set(await tools())).toEqual(new Set(['echo']));
    await Promise.all([page.waitForURL(/before=/), page.click('a[rel="next"]')]);
    const second = await page.locator('tbody th[scope="row"]').allInnerTexts();
    expect(second).toHaveLength(5);
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    expect(new Set(await tools())).toEqual(new Set(['echo']));
    await Promise.all([page.waitForURL(/after=/), page.click('a[rel="prev"]')]);
    expect(await page.locator('tbody th[scope="row"]').allInnerTexts()).toEqual(first);
    await expectClean(page, watch);
  });

  it('opens a record whose tool is markup, shows it as text, and verifies it: every check passes', async () => {
    await page.goto(`${viewer.origin}/ledger`);
    await Promise.all([
      page.waitForURL(`${viewer.origin}/ledger/runs/${MARKUP_RUN}`),
      page.click(`a[href="/ledger/runs/${MARKUP_RUN}"]`),
    ]);
    expect(await page.locator('main').innerText()).toContain(MARKUP);
    await expectClean(page, watch);
    await keepScreenshot(page, 'record');
    const result = await runVerification(page);
    expect(result.checks).toEqual({
      leaf: 'pass',
      inclusion: 'pass',
      'checkpoint-signature': 'pass',
      'record-digest': 'pass',
      'record-signature': 'pass',
      'envelope-digest': 'pass',
    });
    expect(result.outcome).toBe('pass');
    await expectClean(page, watch);
    await keepScreenshot(page, 'verification');
  });

  it('draws the lineage graph, whose nodes are links to their records', async () => {
    await page.goto(`${viewer.origin}/ledger/runs/${GRANDCHILD_RUN}`);
    await Promise.all([
      page.waitForURL(`${viewer.origin}/ledger/runs/${GRANDCHILD_RUN}/lineage`),
      page.click(`a[href="/ledger/runs/${GRANDCHILD_RUN}/lineage"]`),
    ]);
    await expectClean(page, watch);
    await keepScreenshot(page, 'lineage');
    for (const runId of [ROOT_RUN, CHILD_RUN, GRANDCHILD_RUN]) {
      await expect(page.locator(`svg a[href="/ledger/runs/${runId}"]`).count()).resolves.toBe(1);
    }
    await Promise.all([
      page.waitForURL(`${viewer.origin}/ledger/runs/${ROOT_RUN}`),
      page.click(`svg a[href="/ledger/runs/${ROOT_RUN}"]`),
    ]);
    await expect(page.locator('h1').innerText()).resolves.toContain(ROOT_RUN);
    await expectClean(page, watch);
  });

  it('fails the verification of a record whose log leaf was changed on disk, naming the inclusion check', async () => {
    const altered = await startViewer(tampered);
    const other = await freshContext(browser);
    const tab = await other.newPage();
    const seen = watchPage(tab);
    await logIn(tab, altered.origin);
    await tab.goto(`${altered.origin}/ledger/runs/${MARKUP_RUN}`);
    const result = await runVerification(tab);
    expect(result.outcome).toBe('fail');
    expect(result.checks).toMatchObject({ leaf: 'pass', inclusion: 'fail', 'record-digest': 'pass' });
    expect(result.text).toMatch(
      /Fail: The entry is in the log the checkpoint signs[^\n]*, not the checkpoint's [0-9a-f]{64}/,
    );
    await expectClean(tab, seen);
    await other.close();
  });
});
