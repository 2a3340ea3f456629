/**
 * Real Chromium for the ledger pages' tests, driven by playwright-core over
 * the DevTools protocol. Debian's chromium package is used, not a downloaded
 * browser: CHROMIUM_PATH names it, else /usr/bin/chromium or
 * /usr/bin/chromium-browser. Where there is none the tests are skipped, saying
 * so; with CI set (.ci/run installs chromium) they fail instead.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

// A CHROMIUM_PATH that names nothing is not passed over for another browser: it is what was asked for.
const CANDIDATES = process.env.CHROMIUM_PATH
  ? [process.env.CHROMIUM_PATH]
  : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The Chromium executable, or undefined when none of the candidates exists. */
export const CHROMIUM = CANDIDATES.find((path) => existsSync(path));
// Skipped on a machine without Chromium; CI (.ci/run installs it) always runs these tests.
const REQUIRE_CHROMIUM = Boolean(process.env.CI);
export const SKIP_BROWSER = CHROMIUM === undefined && !REQUIRE_CHROMIUM;
if (SKIP_BROWSER) {
  console.warn(
    `skipping the Chromium tests of the ledger pages: no Chromium at ${CANDIDATES.join(', ')} (set CHROMIUM_PATH, or install Debian's chromium)`,
  );
}

export function launchChromium(): Promise<Browser> {
  if (CHROMIUM === undefined) {
    throw new Error(
      `CI is set and there is no Chromium at ${CANDIDATES.join(', ')}: .ci/run installs Debian's chromium`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
    ],
  });
}

export const SCREENSHOTS = fileURLToPath(new URL('../../test-output/screenshots/', import.meta.url));

/** Keeps a full-page screenshot for a person to look at (test-output/screenshots/NAME.png). */
export async function keepScreenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}

/** What a page did that a test must see did not happen: script errors, dialogs, console errors (CSP violations among them). */
export interface PageWatch {
  consoleErrors: string[];
  pageErrors: string[];
  dialogs: string[];
  /** Console errors that are Content-Security-Policy violations. */
  cspViolations(): string[];
}

export function watchPage(page: Page): PageWatch {
  const watch: PageWatch = {
    consoleErrors: [],
    pageErrors: [],
    dialogs: [],
    cspViolations: () => watch.consoleErrors.filter((text) => /Content Security Policy/i.test(text)),
  };
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const where = message.location().url;
    // Chromium asks every origin for /favicon.ico on its own; the pages name no icon, so its 404 is no fault of theirs.
    if (new URL(where || 'about:blank').pathname === '/favicon.ico') return;
    watch.consoleErrors.push(where ? `${message.text()} (${where})` : message.text());
  });
  page.on('pageerror', (error) => watch.pageErrors.push(error.message));
  page.on('dialog', (dialog) => {
    watch.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return watch;
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core in the page and answers its violations. axe's source is run
 * with page.evaluate, which goes through the DevTools protocol and so is not a
 * script the page's CSP governs: the page keeps its real policy (no
 * bypassCSP), and what the test checks is what a person gets.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axe.source);
  return page.evaluate(async () => {
    const run = await (
      globalThis as unknown as {
        axe: {
          run(
            context: unknown,
            options: unknown,
          ): Promise<{
            violations: Array<{
              id: string;
              impact: string | null;
              help: string;
              nodes: Array<{ target: unknown[] }>;
            }>;
          }>;
        };
      }
    ).axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    return run.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      targets: violation.nodes.map((node) => node.target.join(' ')),
    }));
  });
}

/** A fresh context (own cookies and storage) per test, with nothing relaxed. */
export async function freshContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // Below the test's own timeout, so a step that never happens fails naming the step.
  context.setDefaultTimeout(10_000);
  return context;
}
