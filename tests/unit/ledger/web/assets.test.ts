/**
 * The ledger pages' scripts over real HTTP: the listed modules and nothing
 * else, with the headers a module script needs, and the list is exactly what
 * verify.js imports. Needs the build (dist/).
 */
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_MODULES, serveLedgerAsset } from '../../../../src/ledger/web/assets.ts';

const PREFIX = '/ledger/assets/';
let server: Server;
let origin: string;

beforeAll(async () => {
  // Under /ledger/assets/ the name is the raw path, as sent; elsewhere ?name= carries any string at all.
  server = createServer((req, res) => {
    const url = req.url ?? '/';
    const name = url.startsWith(PREFIX)
      ? url.slice(PREFIX.length)
      : (new URL(url, 'http://localhost').searchParams.get('name') ?? '');
    if (!serveLedgerAsset(res, name)) {
      res.writeHead(404);
      res.end('not here');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** GET with the path sent exactly as given (fetch would resolve `..` first). */
function rawGet(path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}/`, { path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const IMPORTS = /(?:^|\n)\s*(?:import|export)\s[^;]*?['"](\.{1,2}\/[^'"]+)['"]/g;

describe('serveLedgerAsset', () => {
  it('serves verify.js and every module it imports, as dist/ holds them, with module script headers', async () => {
    const entry = await rawGet(`${PREFIX}verify.js`);
    expect(entry.status).toBe(200);
    expect(entry.headers).toMatchObject({
      'content-type': 'text/javascript; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'cache-control': expect.stringMatching(/max-age=\d+/),
    });
    expect(entry.body).toContain("'./lib/ledger/web/browser/verify.js'");
    for (const path of LEDGER_MODULES) {
      const got = await rawGet(`${PREFIX}lib/${path}`);
      expect(got.status, path).toBe(200);
      expect(got.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(got.body).toBe(readFileSync(new URL(`../../../../dist/${path}`, import.meta.url), 'utf8'));
    }
  });

  it('lists exactly the modules verify.js reaches through its relative imports', async () => {
    const reached = new Set<string>();
    const queue = [new URL(`${PREFIX}verify.js`, origin)];
    while (queue.length > 0) {
      const url = queue.pop() as URL;
      if (reached.has(url.pathname)) continue;
      reached.add(url.pathname);
      const got = await rawGet(url.pathname);
      expect(got.status, url.pathname).toBe(200);
      for (const match of got.body.matchAll(IMPORTS)) queue.push(new URL(match[1] as string, url));
    }
    expect([...reached].sort()).toEqual(
      [`${PREFIX}verify.js`, ...LEDGER_MODULES.map((path) => `${PREFIX}lib/${path}`)].sort(),
    );
  });

  it('answers nothing outside the list: traversal, encoded traversal, absolute paths, NUL, other built files', async () => {
    for (const path of [
      `${PREFIX}../../package.json`,
      `${PREFIX}lib/../../../package.json`,
      `${PREFIX}%2e%2e/%2e%2e/package.json`,
      `${PREFIX}lib/canonical/%2e%2e/%2e%2e/package.json`,
      `${PREFIX}lib%2fcanonical%2fcanonicalize.js`,
      `${PREFIX}/etc/passwd`,
      `${PREFIX}lib/canonical/digest.js`,
      `${PREFIX}lib/ledger/web/browser/verify.js.map`,
      `${PREFIX}lib/ledger/web/assets.js`,
      `${PREFIX}verify.js?x=1`,
      `${PREFIX}VERIFY.JS`,
      PREFIX,
    ]) {
      const got = await rawGet(path);
      expect(got.status, path).toBe(404);
    }
    for (const name of [
      '../package.json',
      '/etc/passwd',
      '/work/dist/canonical/canonicalize.js',
      'verify.js\0',
      'lib/canonical/canonicalize.js\0.png',
      '\0',
      '..',
      'lib/',
      '__proto__',
      'constructor',
    ]) {
      const got = await rawGet(`/?name=${encodeURIComponent(name)}`);
      expect(got.status, JSON.stringify(name)).toBe(404);
    }
  });
});
