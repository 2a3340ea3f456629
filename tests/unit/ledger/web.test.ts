/**
 * The ledger viewer over real HTTP on loopback: the runs table's paging and
 * filters, a record's page, its lineage graph, the proof data (checked with
 * the project's own verifiers), the headers of every answer, escaping of
 * hostile record content, and the token / session guard.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../../src/canonical/index.ts';
import { type Ledger, leafHash, parseCheckpoint, verifyInclusion } from '../../../src/ledger/index.ts';
import { checkpointSignedBy, rawPublicKey } from '../../../src/ledger/log/checkpoint.ts';
import { CONTENT_SECURITY_POLICY } from '../../../src/ledger/web/html.ts';
import { createLedgerWeb, type LedgerWebOptions } from '../../../src/ledger/web/index.ts';
import { keyIdFor } from '../../../src/provenance/integrity.ts';
import { buildLedger, HOSTILE, keys, raw, runId, withoutOwnScript } from './web-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'ledger-web-'));
const servers: Server[] = [];
let ledger: Ledger;
let base: string;

async function serve(options: Omit<LedgerWebOptions, 'ledger'>): Promise<string> {
  const web = createLedgerWeb({ ledger, ...options });
  const server = createServer((req, res) => void web.handle(req, res));
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  // 12 calls; the checkpoint covers the first 10, so runs 11 and 12 are after it.
  ledger = buildLedger(join(dir, 'l.sqlite'), 12, 10);
  base = await serve({ publicKey: keys.publicKey });
});

afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
  ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The run ids a runs page lists, in order. */
function listed(body: string): string[] {
  return [...body.matchAll(/<th scope="row"><a href="\/ledger\/runs\/([^"]+)">/g)].map((m) =>
    decodeURIComponent(m[1] as string),
  );
}

function link(body: string, rel: 'prev' | 'next'): string | undefined {
  const match = new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(body);
  return match?.[1]?.replaceAll('&amp;', '&');
}

const ids = (...numbers: number[]) => numbers.map(runId);

describe('the runs page', () => {
  it('pages newest first by seq, older and newer, keeping its filters', async () => {
    const first = await raw(base, '/ledger?limit=5');
    expect(first.status).toBe(200);
    expect(listed(first.body)).toEqual(ids(12, 11, 10, 9, 8));
    expect(link(first.body, 'prev')).toBeUndefined();
    const second = await raw(base, link(first.body, 'next') as string);
    expect(listed(second.body)).toEqual(ids(7, 6, 5, 4, 3));
    const third = await raw(base, link(second.body, 'next') as string);
    expect(listed(third.body)).toEqual(ids(2, 1));
    expect(link(third.body, 'next')).toBeUndefined();
    const back = await raw(base, link(third.body, 'prev') as string);
    expect(listed(back.body)).toEqual(ids(7, 6, 5, 4, 3));
    expect(link(back.body, 'prev')).toContain('limit=5');
  });

  it('filters by tool, upstream, principal, outcome, code and time', async () => {
    const query = async (search: string) => listed((await raw(base, `/ledger?${search}`)).body);
    expect(await query('tool=echo')).toEqual(ids(11, 9, 7, 5, 3, 1));
    expect(await query(`tool=${encodeURIComponent(HOSTILE.tool)}&limit=2`)).toEqual(ids(12, 10));
    expect(await query(`upstream=${encodeURIComponent(HOSTILE.upstream)}`)).toEqual(ids(2));
    expect(await query('principal=token%3Abob&outcome=error')).toEqual(ids(12, 6));
    expect(await query('outcome=error')).toEqual(ids(12, 9, 6, 3));
    expect(await query('code=UPSTREAM_TIMEOUT')).toEqual(ids(12, 9, 6));
    // Run i was stored at minute i-1; the form's datetime-local values are read as UTC.
    expect(await query('from=2026-01-01T00:03&to=2026-01-01T00:05')).toEqual(ids(6, 5, 4));
    const filteredPage = await raw(base, '/ledger?tool=echo&limit=4');
    expect(listed(filteredPage.body)).toEqual(ids(11, 9, 7, 5));
    expect(listed((await raw(base, link(filteredPage.body, 'next') as string)).body)).toEqual(ids(3, 1));
  });

  it('shows each row checked: digest and signature pass, inclusion pass or after the checkpoint', async () => {
    const body = (await raw(base, '/ledger?limit=3')).body;
    const rows = body.split('<tr>').slice(2);
    expect(rows[0]).toMatch(
      /state-pass">pass<\/td>\s*<td class="state state-pass">pass<\/td>\s*<td class="state state-after-checkpoint">after checkpoint/,
    );
    expect(rows[2]).toMatch(
      /state-pass">pass<\/td>\s*<td class="state state-pass">pass<\/td>\s*<td class="state state-pass">pass/,
    );
    expect(body).toMatch(
      /Latest checkpoint: <code>mcp-envelope\/[0-9a-f]{32}<\/code> at size 10, signed by the configured key/,
    );
  });

  it('refuses filters and positions it cannot use with INVALID_INPUT', async () => {
    for (const search of ['outcome=maybe', 'limit=101', 'limit=0', 'before=-3', 'from=yesterday']) {
      const reply = await raw(base, `/ledger?${search}`);
      expect(reply.status, search).toBe(400);
      expect(reply.body, search).toContain('<code>INVALID_INPUT</code>');
    }
  });
});

describe('a record page', () => {
  it('shows the record, its checks, artifacts, evidence, signature, log position, lineage and the verification panel', async () => {
    const reply = await raw(base, `/ledger/runs/${runId(5)}`);
    expect(reply.status).toBe(200);
    const body = reply.body;
    expect(body).toContain(`<h1>Run <code>${runId(5)}</code></h1>`);
    expect(body).toContain(
      '<th scope="row"><code>adapter.wrap.envelope_v0_1</code></th><td class="state state-pass">pass</td>',
    );
    expect(body).toContain('<th scope="row"><code>engine.extract.evidence.json_pointer</code></th>');
    expect(body).toMatch(
      /<th scope="row"><code>result<\/code><\/th><td>output<\/td><td>result<\/td><td>application\/json<\/td><td><code class="digest">sha256:[0-9a-f]{64}<\/code>/,
    );
    // The anchor resolved against the envelope's result.
    expect(body).toContain('<td><code>artifact:result#json:/text</code></td><td><pre>answer 5</pre></td>');
    expect(body).toContain(`key id <code>${keyIdFor(keys.publicKey)}</code>: <strong>pass</strong>`);
    expect(body).toContain(
      'This record is leaf 4; inclusion in the latest checkpoint: <strong>pass</strong>',
    );
    expect(body).toContain(`<li><a href="/ledger/runs/${runId(4)}">${runId(4)}</a></li>`);
    expect(body).toContain(`<li><a href="/ledger/runs/${runId(6)}">${runId(6)}</a></li>`);
    expect(body).toContain(`<a href="/ledger/runs/${runId(5)}/lineage">Lineage graph</a>`);
    expect(body).toContain(
      `<section id="verification" aria-labelledby="verification-title" data-proof-url="/ledger/api/runs/${runId(5)}"><h2 id="verification-title">Verify in this browser</h2><p>`,
    );
    expect(body).toContain(
      '<label for="trusted-key">Public key you trust (optional)</label><textarea id="trusted-key"></textarea><button type="button" id="verify-button">Verify</button><ol id="verification-result" aria-live="polite"></ol></section>',
    );
    expect(body).toContain('<script type="module" src="/ledger/assets/verify.js"></script>');
    expect(body).toContain('<h3 id="envelope-title">Envelope</h3>');
    expect(body).toContain('&quot;schema_version&quot;: &quot;prov.record.v0.1&quot;');
  });

  it('answers an unknown run with 404 and its code', async () => {
    const reply = await raw(base, '/ledger/runs/no-such-run');
    expect(reply.status).toBe(404);
    expect(reply.body).toContain('<code>LEDGER_RECORD_NOT_FOUND</code>');
    const api = await raw(base, '/ledger/api/runs/no-such-run');
    expect(api.status).toBe(404);
    expect(JSON.parse(api.body).error.code).toBe('LEDGER_RECORD_NOT_FOUND');
  });
});

describe('the lineage page', () => {
  it('draws ancestors and descendants as SVG links with accessible names, the current one marked, and lists them', async () => {
    const reply = await raw(base, `/ledger/runs/${runId(6)}/lineage`);
    expect(reply.status).toBe(200);
    const svg = /<svg[\s\S]*<\/svg>/.exec(reply.body)?.[0] as string;
    expect(svg).toContain('role="group" aria-labelledby="lineage-graph-title"');
    const nodes = [
      ...svg.matchAll(/<a href="\/ledger\/runs\/([^"]+)" aria-label="([^"]+)"( aria-current="page")?>/g),
    ];
    // Four up (2..5), four down (7..10), and itself.
    expect(nodes.map((m) => m[1]).sort()).toEqual(ids(2, 3, 4, 5, 6, 7, 8, 9, 10).sort());
    const current = nodes.filter((m) => m[3] !== undefined);
    expect(current.map((m) => m[1])).toEqual([runId(6)]);
    // The name is what the node shows: the run id, then that it is this run and its tool.
    expect(current[0]?.[2]).toBe(`${runId(6)} this run · &lt;script&gt;alert(1)&lt;/script&gt;`);
    expect(svg.match(/<path class="edge"/g)).toHaveLength(8);
    expect(reply.body).toContain('<p>The graph is cut short: more runs are related than it shows.</p>');
    expect(reply.body).toContain(
      `<li><a href="/ledger/runs/${runId(6)}" aria-current="page">${runId(6)}</a>`,
    );
    expect(reply.body).toContain(`parents: ${runId(5)}; children: ${runId(7)}</li>`);
  });
});

describe('the proof data', () => {
  it('carries the leaf, the envelope text, the checkpoint, an inclusion proof that verifies, and the keys', async () => {
    const reply = await raw(base, `/ledger/api/runs/${runId(4)}`);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    const proof = JSON.parse(reply.body);
    expect(Object.keys(proof).sort()).toEqual(
      ['checkpoint', 'envelope_text', 'inclusion', 'keys', 'leaf', 'leaf_index', 'run_id'].sort(),
    );
    expect(proof.run_id).toBe(runId(4));
    expect(proof.leaf_index).toBe(3);
    const leaf = Buffer.from(proof.leaf, 'base64');
    expect(leaf.equals(Buffer.from(ledger.log().leaf(3)?.leaf as Uint8Array))).toBe(true);
    const checkpoint = parseCheckpoint(proof.checkpoint);
    expect(checkpoint.size).toBe(10);
    expect(checkpointSignedBy(checkpoint, keys.publicKey)).toBe(true);
    expect(proof.inclusion.tree_size).toBe(10);
    const path = proof.inclusion.hashes.map((hash: string) => Buffer.from(hash, 'base64'));
    expect(verifyInclusion(leafHash(leaf), 3, 10, path, checkpoint.root)).toBe(true);
    expect(
      verifyInclusion(leafHash(Buffer.concat([leaf, Buffer.from(' ')])), 3, 10, path, checkpoint.root),
    ).toBe(false);
    // The envelope text is what the leaf's envelope_digest covers.
    const leafJson = JSON.parse(leaf.toString('utf8'));
    const envelopeDigest = createHash('sha256').update(proof.envelope_text, 'utf8').digest('hex');
    expect(leafJson.envelope_digest).toBe(`sha256:${envelopeDigest}`);
    expect(canonicalize(JSON.parse(proof.envelope_text))).toBe(proof.envelope_text);
    const raw32 = rawPublicKey(keys.publicKey).toString('base64');
    expect(proof.keys).toEqual([
      { purpose: 'record', key_id: keyIdFor(keys.publicKey), public_key: raw32 },
      { purpose: 'checkpoint', key_id: checkpoint.signatures[0]?.keyId.toString('hex'), public_key: raw32 },
    ]);
  });

  it('has no inclusion for a leaf after the latest checkpoint, and no keys without a public key', async () => {
    const open = await serve({});
    const proof = JSON.parse((await raw(open, `/ledger/api/runs/${runId(12)}`)).body);
    expect(proof.leaf_index).toBe(11);
    expect(proof.inclusion).toBeNull();
    expect(proof.checkpoint).toContain('\n10\n');
    expect(proof.keys).toEqual([]);
  });
});

describe('every answer', () => {
  const paths = [
    '/ledger',
    '/ledger/runs',
    `/ledger/runs/${runId(2)}`,
    `/ledger/runs/${runId(2)}/lineage`,
    `/ledger/api/runs/${runId(2)}`,
    '/ledger/assets/ledger.css',
    '/ledger/assets/nothing.js',
    '/ledger/nowhere',
    '/ledger?limit=1000',
  ];

  it('carries the strict policy and the security headers', async () => {
    for (const path of paths) {
      const reply = await raw(base, path);
      expect(reply.headers['content-security-policy'], path).toBe(CONTENT_SECURITY_POLICY);
      expect(reply.headers['x-content-type-options'], path).toBe('nosniff');
      expect(reply.headers['referrer-policy'], path).toBe('no-referrer');
      expect(reply.headers['cache-control'], path).toBe('no-store');
    }
    expect((await raw(base, '/ledger/assets/ledger.css')).headers['content-type']).toBe(
      'text/css; charset=utf-8',
    );
    expect((await raw(base, '/ledger/assets/nothing.js')).status).toBe(404);
  });

  it('never carries a record’s markup unescaped', async () => {
    const tool = '&lt;script&gt;alert(1)&lt;/script&gt;';
    const upstream = '&quot;&gt;&lt;img src=x onerror=alert(1)&gt;';
    const pages: Array<[string, string]> = [
      ['/ledger', tool],
      [`/ledger?upstream=${encodeURIComponent(HOSTILE.upstream)}`, upstream],
      [`/ledger/runs/${runId(2)}`, tool],
      [`/ledger/runs/${runId(3)}`, upstream],
      [`/ledger/runs/${runId(2)}/lineage`, tool],
    ];
    for (const [path, escaped] of pages) {
      const body = withoutOwnScript((await raw(base, path)).body);
      expect(body, path).toContain(escaped);
      for (const bad of ['<script', '</script', '<img', '<svg onload', 'onerror=alert(1)>']) {
        expect(body.includes(bad), `${path} holds ${bad}`).toBe(false);
      }
    }
    const record = (await raw(base, `/ledger/runs/${runId(2)}`)).body;
    expect(record).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(record).toContain('&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
    expect((await raw(base, `/ledger/runs/${runId(3)}`)).body).toContain('&lt;svg onload=alert(3)&gt;');
  });
});

describe('the guard', () => {
  const TOKEN = 'viewer-token-0c5e';
  let clock = Date.UTC(2026, 0, 1);
  let guarded: string;

  beforeAll(async () => {
    guarded = await serve({
      publicKey: keys.publicKey,
      auth: { required: true, check: (token) => token === TOKEN },
      now: () => clock,
    });
  });

  const login = (headers: Record<string, string>, token = TOKEN) =>
    raw(guarded, '/ledger/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ token }).toString(),
    });
  const sameOrigin = () => ({ origin: guarded });
  const cookieOf = (reply: { headers: Record<string, string | string[] | undefined> }) =>
    String((reply.headers['set-cookie'] as string[])[0]).split(';')[0] as string;

  it('sends a page without a token to the login form and answers the API 401', async () => {
    const page = await raw(guarded, '/ledger');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/ledger/login');
    const api = await raw(guarded, `/ledger/api/runs/${runId(1)}`);
    expect(api.status).toBe(401);
    expect(JSON.parse(api.body).error.code).toBe('AUTH_REQUIRED');
    const form = await raw(guarded, '/ledger/login');
    expect(form.status).toBe(200);
    expect(form.body).toContain(
      '<label for="token">Access token</label><input id="token" name="token" type="password"',
    );
  });

  it('takes the right bearer token and refuses a wrong one', async () => {
    expect((await raw(guarded, '/ledger', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(
      200,
    );
    const wrong = await raw(guarded, '/ledger', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('<code>UNAUTHORIZED</code>');
    expect(wrong.headers['www-authenticate']).toBe('Bearer realm="mcp-envelope"');
  });

  it('logs in with a valid token to an HttpOnly, SameSite=Strict cookie that never holds the token', async () => {
    const refused = await login(sameOrigin(), 'wrong');
    expect(refused.status).toBe(401);
    expect(refused.headers['set-cookie']).toBeUndefined();
    expect(refused.body).toContain('role="alert">That token is not valid.');
    const ok = await login(sameOrigin());
    expect(ok.status).toBe(303);
    expect(ok.headers.location).toBe('/ledger');
    const setCookie = String((ok.headers['set-cookie'] as string[])[0]);
    expect(setCookie).toMatch(
      /^ledger_session=[^;]+; HttpOnly; SameSite=Strict; Path=\/ledger; Max-Age=\d+$/,
    );
    expect(setCookie).not.toContain(TOKEN);
    const cookie = cookieOf(ok);
    const page = await raw(guarded, '/ledger', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<form method="post" action="/ledger/logout" class="logout">');
  });

  it('refuses a tampered cookie, an expired one, and one logged out', async () => {
    const cookie = cookieOf(await login(sameOrigin()));
    const last = cookie.at(-1) === 'A' ? 'B' : 'A';
    expect(
      (await raw(guarded, '/ledger', { headers: { cookie: `${cookie.slice(0, -1)}${last}` } })).status,
    ).toBe(303);
    const later = cookie.replace(/=(\d+)\./, (_, expiry: string) => `=${Number(expiry) + 60_000}.`);
    expect((await raw(guarded, '/ledger', { headers: { cookie: later } })).status).toBe(303);
    expect((await raw(guarded, '/ledger', { headers: { cookie } })).status).toBe(200);
    clock += 9 * 60 * 60 * 1000;
    expect((await raw(guarded, '/ledger', { headers: { cookie } })).status).toBe(303);
    const fresh = cookieOf(await login(sameOrigin()));
    const out = await raw(guarded, '/ledger/logout', {
      method: 'POST',
      headers: { cookie: fresh, ...sameOrigin() },
    });
    expect(out.status).toBe(303);
    expect(String((out.headers['set-cookie'] as string[])[0])).toContain('Max-Age=0');
    expect((await raw(guarded, '/ledger', { headers: { cookie: fresh } })).status).toBe(303);
  });

  it('refuses a login posted from another origin, or with none', async () => {
    const cases: Array<Record<string, string>> = [{ origin: 'http://evil.example' }, { origin: 'null' }, {}];
    for (const headers of cases) {
      const reply = await login(headers);
      expect(reply.status, JSON.stringify(headers)).toBe(403);
      expect(reply.headers['set-cookie']).toBeUndefined();
      expect(reply.body).toContain('<code>FORBIDDEN</code>');
    }
  });
});
