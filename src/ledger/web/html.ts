/**
 * What every viewer page shares: escaping (every value from a record is
 * untrusted), the page frame with its skip link and stylesheet, and the
 * headers that keep a page from running anything it did not load from here.
 */
import type { ServerResponse } from 'node:http';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text for an HTML element or a quoted attribute value. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

/** A path segment or query value for an href (itself still to be escaped as an attribute). */
export function hrefPart(value: string): string {
  return encodeURIComponent(value);
}

/** The policy of every page and answer: scripts, styles and images from this origin only, never inline. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export const STYLESHEET_PATH = '/ledger/assets/ledger.css';

export interface PageFrame {
  title: string;
  /** The page's HTML inside <main>, escaped by its maker. */
  main: string;
  /** Show the viewer's navigation (not on pages outside the ledger, such as the gateway's). */
  nav?: boolean;
  /** Offer to log out (the visitor holds a session cookie). */
  logout?: boolean;
  /** Module scripts from this origin, by path. */
  scripts?: readonly string[];
  /** The page posts a form to this origin (login, logout), whose Origin header the server checks. */
  postsForms?: boolean;
}

export function renderPage(frame: PageFrame): string {
  const e = escapeHtml;
  const nav =
    frame.nav === false
      ? ''
      : `<header class="site"><nav aria-label="Ledger"><a href="/ledger">Runs</a>${
          frame.logout
            ? '<form method="post" action="/ledger/logout" class="logout"><button type="submit">Log out</button></form>'
            : ''
        }</nav></header>\n`;
  const scripts = (frame.scripts ?? []).map((src) => `<script type="module" src="${e(src)}"></script>`);
  // Under the no-referrer policy a browser posts a form with `Origin: null`, and the server
  // could not tell this page's form from a forged one; same-origin keeps Origin on posts here
  // and still sends no referrer to any other origin.
  const referrer = frame.postsForms || frame.logout ? '<meta name="referrer" content="same-origin">\n' : '';
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${referrer}<title>${e(frame.title)}</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
${nav}<main id="main">
${frame.main}
</main>
${scripts.join('\n')}
</body>
</html>
`;
}

export function sendHtml(
  res: ServerResponse,
  status: number,
  html: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(Buffer.byteLength(html)),
    ...headers,
  });
  res.end(html);
}

export function sendJsonBody(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** A 303 (after a form) or 302 elsewhere, with nothing a browser would render. */
export function redirect(res: ServerResponse, location: string, headers: Record<string, string> = {}): void {
  res.writeHead(303, { ...SECURITY_HEADERS, location, 'content-length': '0', ...headers });
  res.end();
}

/** Pretty-printed JSON for a <pre>, escaped. */
export function jsonBlock(value: unknown): string {
  return escapeHtml(JSON.stringify(value, null, 2) ?? 'null');
}
