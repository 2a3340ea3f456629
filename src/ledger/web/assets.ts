/**
 * The ledger pages' scripts: the record page's verification (verify.js) and
 * the modules it imports, served as the compiled ES modules the build writes
 * to dist/, unbundled, so that the browser canonicalizes with the very code the
 * server digests with.
 *
 * Names are looked up in a fixed list, never joined to a path: `..`, `%2e%2e`,
 * an absolute path or a NUL byte is simply not on it. Under `lib/` the names
 * mirror dist/ (lib/canonical/canonicalize.js is dist/canonical/canonicalize.js),
 * so the compiled modules' relative imports (`../../../canonical/…`) resolve to
 * names on the list. verify.js itself is a one-line module importing
 * lib/ledger/web/browser/verify.js: served from /ledger/assets/verify.js, that
 * file's own `../../../` would climb above the site's root, where URL
 * resolution stops.
 */
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';

/**
 * dist/ of this package: this file is src/ledger/web/assets.ts under vitest
 * and dist/ledger/web/assets.js when built, three levels below the root either way.
 */
const DIST = new URL('../../../dist/', import.meta.url);

/** Every module verify.js loads, by its path under dist/ (tests/unit/ledger/web/assets.test.ts checks this is its import closure). */
export const LEDGER_MODULES: readonly string[] = [
  'ledger/web/browser/verify.js',
  'ledger/web/browser/checks.js',
  'ledger/web/browser/encoding.js',
  'canonical/canonicalize.js',
  'canonical/exact-number.js',
  'canonical/json-text.js',
  'canonical/json-value.js',
  'errors/index.js',
  'errors/codes.js',
  'errors/envelope-error.js',
  'pointer/json-pointer.js',
];

const ENTRY = "import './lib/ledger/web/browser/verify.js';\n";

const NAMES: ReadonlyMap<string, string | URL> = new Map<string, string | URL>([
  ['verify.js', ENTRY],
  ...LEDGER_MODULES.map((path): [string, URL] => [`lib/${path}`, new URL(path, DIST)]),
]);

const HEADERS = {
  'content-type': 'text/javascript; charset=utf-8',
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'same-origin',
  // Short-lived and revalidated: the names carry no version, and an upgrade must reach pages within minutes.
  'cache-control': 'public, max-age=300, must-revalidate',
} as const;

// Read once per process: the files change only with a new build, which means a new process.
const cache = new Map<string, Buffer>();

function body(name: string, source: string | URL): Buffer | undefined {
  let bytes = cache.get(name);
  if (bytes === undefined) {
    try {
      bytes = typeof source === 'string' ? Buffer.from(source, 'utf8') : readFileSync(source);
    } catch {
      return undefined;
    }
    cache.set(name, bytes);
  }
  return bytes;
}

/**
 * Answers the ledger asset `name` (the part of the path after /ledger/assets/,
 * as sent, query removed): true when it is one and the reply is written
 * (500 when the package was not built), false when it is not one, for the
 * caller's 404.
 */
export function serveLedgerAsset(res: ServerResponse, name: string): boolean {
  const source = NAMES.get(name);
  if (source === undefined) return false;
  const bytes = body(name, source);
  if (bytes === undefined) {
    const text = `The ledger page script ${name} is missing from ${DIST.pathname}: build the package (npm run build)\n`;
    res.writeHead(500, {
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    });
    res.end(text);
    return true;
  }
  res.writeHead(200, { ...HEADERS, 'content-length': String(bytes.length) });
  res.end(bytes);
  return true;
}
