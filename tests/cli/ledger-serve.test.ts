/**
 * `mcp-envelope ledger serve` as a real process: it prints its URL, serves
 * the viewer from a read-only copy, refuses to listen beyond loopback
 * without a token, takes the token when given one, and stops cleanly on
 * SIGTERM and SIGINT.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../../src/ledger/web/html.ts';
import { BIN, errorCode, runBin } from '../helpers/cli.ts';
import { buildLedger, keys, raw, runId } from '../unit/ledger/web-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'ledger-serve-'));
const db = join(dir, 'copy.sqlite');
const publicKey = join(dir, 'public.pem');

beforeAll(() => {
  buildLedger(db, 4).close();
  writeFileSync(publicKey, keys.publicKey.export({ type: 'spki', format: 'pem' }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Serving {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

/** Starts `ledger serve`; resolves on the URL line it prints. */
function serve(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Serving> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'ledger', 'serve', '--db', db, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    let out = '';
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      err += text;
    });
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      out += text;
      const match = /^ledger viewer: (http:\/\/\S+) /m.exec(out);
      if (match?.[1]) resolve({ child, url: match[1], exited });
    });
    void exited.then((code) => reject(new Error(`ledger serve exited with ${code}: ${err}`)));
  });
}

describe('ledger serve', () => {
  it('serves the viewer from a copy it opens read-only, and stops on SIGTERM', async () => {
    const before = readFileSync(db);
    const mtime = statSync(db).mtimeMs;
    const serving = await serve(['--http', '127.0.0.1:0', '--public-key', publicKey]);
    expect(serving.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ledger$/);
    const origin = new URL(serving.url).origin;
    const page = await raw(origin, '/ledger');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(page.body).toContain(`<a href="/ledger/runs/${runId(4)}">`);
    const record = await raw(origin, `/ledger/runs/${runId(2)}`);
    expect(record.body).toContain('inclusion in the latest checkpoint: <strong>pass</strong>');
    expect(record.body).toMatch(/key id <code>ed25519:[0-9a-f]{32}<\/code>: <strong>pass<\/strong>/);
    expect((await raw(origin, '/')).headers.location).toBe('/ledger');
    expect((await raw(origin, '/ledger', { headers: { host: 'evil.example' } })).status).toBe(403);
    // Read-only: the viewer never writes, so a login form has nothing to do without a token.
    expect((await raw(origin, '/ledger/login')).headers.location).toBe('/ledger');
    serving.child.kill('SIGTERM');
    expect(await serving.exited).toBe(0);
    expect(readFileSync(db).equals(before)).toBe(true);
    expect(statSync(db).mtimeMs).toBe(mtime);
  });

  it('asks for the token when given one, as a bearer header or through the login form, and stops on SIGINT', async () => {
    const serving = await serve(['--http', '127.0.0.1:0', '--token-env', 'VIEWER_TOKEN'], {
      VIEWER_TOKEN: 'serve-token-91b2',
    });
    const origin = new URL(serving.url).origin;
    expect((await raw(origin, '/ledger')).headers.location).toBe('/ledger/login');
    expect((await raw(origin, '/ledger', { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    expect(
      (await raw(origin, '/ledger', { headers: { authorization: 'Bearer serve-token-91b2' } })).status,
    ).toBe(200);
    const login = await raw(origin, '/ledger/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: 'token=serve-token-91b2',
    });
    expect(login.status).toBe(303);
    const cookie = String((login.headers['set-cookie'] as string[])[0]).split(';')[0] as string;
    expect((await raw(origin, '/ledger', { headers: { cookie } })).status).toBe(200);
    serving.child.kill('SIGINT');
    expect(await serving.exited).toBe(0);
  });

  it('refuses a non-loopback address without a token, and a token variable that is empty', async () => {
    const open = await runBin(['ledger', 'serve', '--db', db, '--http', '0.0.0.0:0']);
    expect(open.code).toBe(2);
    expect(errorCode(open)).toBe('USAGE_ERROR');
    expect(open.stderr).toContain('without a token');
    const empty = await runBin(['ledger', 'serve', '--db', db, '--token-env', 'EMPTY_TOKEN'], {
      env: { EMPTY_TOKEN: '' },
    });
    expect(empty.code).toBe(2);
    expect(errorCode(empty)).toBe('USAGE_ERROR');
    const missing = await runBin(['ledger', 'serve', '--db', join(dir, 'none.sqlite')]);
    expect(errorCode(missing)).toBe('LEDGER_NOT_FOUND');
  });
});
