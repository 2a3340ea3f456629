/**
 * The ledger viewer's one request handler, mounted by the gateway under
 * /ledger and by `mcp-envelope ledger serve`: routes, the login and logout
 * forms, and the guard in front of every page and the proof API. Host and
 * Origin headers are checked by whoever mounts it, before it is called.
 *
 * Who may look: with no `auth`, anyone who reaches it (the mounter decides,
 * e.g. loopback only). With `auth`, a presented bearer token is always
 * checked; without one, a session cookie from the login form is accepted;
 * and when `auth.required`, a request with neither is refused (a page
 * redirects to the login form, the API answers 401).
 */
import type { KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeErrorCode, EnvelopeError } from '../../errors/index.ts';
import type { Ledger } from '../store.ts';
import { serveLedgerAsset } from './assets.ts';
import { escapeHtml as e, redirect, renderPage, STYLESHEET_PATH, sendHtml, sendJsonBody } from './html.ts';
import { lineageList, lineageOf, lineageSvg } from './lineage.ts';
import { proofData } from './proof.ts';
import { renderRecordPage } from './record-page.ts';
import { renderRunsPage } from './runs-page.ts';
import { type SessionKeeper, sessionCookie, sessionKeeper } from './session.ts';
import { sendStylesheet } from './stylesheet.ts';

export const LEDGER_PREFIX = '/ledger';
/** Largest login form body read, in bytes. */
const MAX_FORM_BYTES = 8 * 1024;

export interface LedgerWebAuth {
  /** Refuse requests with neither a valid bearer token nor a session. */
  required: boolean;
  /** Whether a presented token is valid (compared in constant time by the caller's verifier). */
  check(token: string): boolean | Promise<boolean>;
}

export interface LedgerWebOptions {
  ledger: Ledger;
  /** The key records and checkpoints are signed with, when known: signatures are checked against it. */
  publicKey?: KeyObject;
  auth?: LedgerWebAuth;
  /** Clock for sessions. */
  now?: () => number;
  onError?: (error: unknown) => void;
}

export interface LedgerWeb {
  /** Answers a request whose path is under /ledger. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/** Whether the viewer answers this path. */
export function isLedgerPath(path: string): boolean {
  return path === LEDGER_PREFIX || path.startsWith(`${LEDGER_PREFIX}/`);
}

type Access = 'open' | 'token' | 'session';

function pathOf(req: IncomingMessage): { path: string; search: URLSearchParams } {
  const url = req.url ?? '/';
  const at = url.indexOf('?');
  return {
    path: at < 0 ? url : url.slice(0, at),
    search: new URLSearchParams(at < 0 ? '' : url.slice(at + 1)),
  };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new EnvelopeError('INVALID_INPUT', 'The run id in the path is not valid percent-encoding');
  }
}

/** A POST from a form must come from a page of this very origin (browsers always send Origin on POST). */
function checkSameOrigin(req: IncomingMessage): void {
  const origin = req.headers.origin;
  const host = req.headers.host;
  const same =
    origin !== undefined &&
    host !== undefined &&
    [`http://${host}`, `https://${host}`].includes(origin.toLowerCase()) &&
    origin !== 'null';
  if (!same) {
    throw new EnvelopeError('FORBIDDEN', 'A form may only be posted from this viewer’s own pages (Origin)', {
      header: 'origin',
    });
  }
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new EnvelopeError('INVALID_INPUT', 'The login form is sent as application/x-www-form-urlencoded');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) {
      throw new EnvelopeError('TOO_LARGE', `The form is larger than ${MAX_FORM_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function loginPage(message?: string): { title: string; main: string } {
  return {
    title: 'Log in — mcp-envelope ledger',
    main: `<h1>Log in to the ledger</h1>
${message ? `<p class="error-box" role="alert">${e(message)}</p>` : ''}
<p>Give one of the gateway’s access tokens. It is checked once and not kept: your browser gets a session cookie instead, valid for this server process only.</p>
<form method="post" action="${LEDGER_PREFIX}/login">
<div class="field"><label for="token">Access token</label><input id="token" name="token" type="password" autocomplete="current-password" required></div>
<p><button type="submit">Log in</button></p>
</form>`,
  };
}

export function createLedgerWeb(options: LedgerWebOptions): LedgerWeb {
  const { ledger, publicKey, auth } = options;
  const sessions: SessionKeeper = sessionKeeper(options.now ? { now: options.now } : {});
  const report = options.onError ?? (() => {});

  async function access(req: IncomingMessage): Promise<Access | undefined> {
    if (auth === undefined) return 'open';
    const header = req.headers.authorization;
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match?.[1] || !(await auth.check(match[1]))) {
        throw new EnvelopeError('UNAUTHORIZED', 'The bearer token is not valid');
      }
      return 'token';
    }
    const cookie = sessionCookie(req.headers.cookie);
    if (cookie !== undefined && sessions.valid(cookie)) return 'session';
    return auth.required ? undefined : 'open';
  }

  function page(
    res: ServerResponse,
    status: number,
    content: { title: string; main: string; scripts?: string[]; postsForms?: boolean },
    via: Access,
    headers: Record<string, string> = {},
  ): void {
    sendHtml(res, status, renderPage({ ...content, logout: via === 'session' }), headers);
  }

  function errorPage(res: ServerResponse, error: EnvelopeError, headers: Record<string, string>): void {
    const status = describeErrorCode(error.code).httpStatus;
    page(
      res,
      status,
      {
        title: `${status} — mcp-envelope ledger`,
        main: `<h1>${e(error.code === 'LEDGER_RECORD_NOT_FOUND' || error.code === 'NOT_FOUND' ? 'Not found' : 'Cannot show this')}</h1>
<p class="error-box"><code>${e(error.code)}</code>: ${e(error.message)}</p>
<p><a href="${LEDGER_PREFIX}">Back to the runs</a></p>`,
      },
      'open',
      headers,
    );
  }

  async function login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (auth === undefined) return redirect(res, LEDGER_PREFIX);
    if (req.method === 'GET' || req.method === 'HEAD')
      return page(res, 200, { ...loginPage(), postsForms: true }, 'open');
    if (req.method !== 'POST')
      throw new EnvelopeError('METHOD_NOT_ALLOWED', 'Use GET or POST', { allow: 'GET, HEAD, POST' });
    checkSameOrigin(req);
    const token = (await readForm(req)).get('token') ?? '';
    if (token === '' || !(await auth.check(token))) {
      return page(res, 401, { ...loginPage('That token is not valid.'), postsForms: true }, 'open');
    }
    redirect(res, LEDGER_PREFIX, { 'set-cookie': sessions.header(sessions.issue()) });
  }

  function logout(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'POST')
      throw new EnvelopeError('METHOD_NOT_ALLOWED', 'Log out with POST', { allow: 'POST' });
    checkSameOrigin(req);
    const cookie = sessionCookie(req.headers.cookie);
    if (cookie !== undefined) sessions.revoke(cookie);
    redirect(res, auth === undefined ? LEDGER_PREFIX : `${LEDGER_PREFIX}/login`, {
      'set-cookie': sessions.header(undefined),
    });
  }

  async function viewer(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    search: URLSearchParams,
    via: Access,
  ): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new EnvelopeError(
        'METHOD_NOT_ALLOWED',
        `${req.method} is not served here: the viewer only reads`,
        { allow: 'GET, HEAD' },
      );
    }
    const rest = path.slice(LEDGER_PREFIX.length);
    if (rest === '' || rest === '/' || rest === '/runs' || rest === '/runs/') {
      return page(res, 200, renderRunsPage(ledger, search, publicKey), via);
    }
    const api = /^\/api\/runs\/([^/]+)$/.exec(rest);
    if (api) return sendJsonBody(res, 200, proofData(ledger, decodeSegment(api[1] as string), publicKey));
    const lineage = /^\/runs\/([^/]+)\/lineage$/.exec(rest);
    if (lineage) {
      const key = decodeSegment(lineage[1] as string);
      const view = lineageOf(ledger, key);
      if (view.nodes[0]?.missing) {
        throw new EnvelopeError('LEDGER_RECORD_NOT_FOUND', `No record with run id ${key}`, { key });
      }
      return page(
        res,
        200,
        {
          title: `Lineage of ${key} — mcp-envelope ledger`,
          main: `<h1>Lineage of run <code>${e(key)}</code></h1>
<p><a href="${LEDGER_PREFIX}/runs/${e(encodeURIComponent(key))}">Back to the record</a></p>
${view.truncated ? '<p>The graph is cut short: more runs are related than it shows.</p>' : ''}
<section aria-labelledby="graph-title"><h2 id="graph-title">Graph</h2>
<div class="scroll" tabindex="0" role="region" aria-label="Lineage graph (scrollable)">${await lineageSvg(view)}</div>
</section>
<section aria-labelledby="nodes-title"><h2 id="nodes-title">Runs in the graph</h2>
${lineageList(view)}
</section>`,
        },
        via,
      );
    }
    const record = /^\/runs\/([^/]+)$/.exec(rest);
    if (record)
      return page(
        res,
        200,
        await renderRecordPage(ledger, decodeSegment(record[1] as string), publicKey),
        via,
      );
    throw new EnvelopeError('NOT_FOUND', `Nothing at ${path}`);
  }

  async function route(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    search: URLSearchParams,
  ): Promise<void> {
    if (path === STYLESHEET_PATH) return sendStylesheet(res);
    if (path.startsWith(`${LEDGER_PREFIX}/assets/`)) {
      if (serveLedgerAsset(res, path.slice(`${LEDGER_PREFIX}/assets/`.length))) return;
      throw new EnvelopeError('NOT_FOUND', `No asset at ${path}`);
    }
    if (path === `${LEDGER_PREFIX}/login`) return login(req, res);
    if (path === `${LEDGER_PREFIX}/logout`) return logout(req, res);
    const via = await access(req);
    if (via === undefined) {
      if (path.startsWith(`${LEDGER_PREFIX}/api/`))
        throw new EnvelopeError('AUTH_REQUIRED', 'A bearer token or a session is required');
      return redirect(res, `${LEDGER_PREFIX}/login`);
    }
    await viewer(req, res, path, search, via);
  }

  return {
    async handle(req, res) {
      const { path, search } = pathOf(req);
      const api = path.startsWith(`${LEDGER_PREFIX}/api/`);
      try {
        await route(req, res, path, search);
      } catch (caught) {
        let error: EnvelopeError;
        if (caught instanceof EnvelopeError) {
          error = caught;
        } else {
          report(caught);
          error = new EnvelopeError('INTERNAL_ERROR', 'The ledger viewer failed to answer');
        }
        if (res.headersSent) {
          res.end();
          return;
        }
        const headers: Record<string, string> = {};
        const allow = error.details?.allow;
        if (typeof allow === 'string') headers.allow = allow;
        if (error.code === 'AUTH_REQUIRED' || error.code === 'UNAUTHORIZED')
          headers['www-authenticate'] = 'Bearer realm="mcp-envelope"';
        if (api || path.startsWith(`${LEDGER_PREFIX}/assets/`)) {
          sendJsonBody(
            res,
            describeErrorCode(error.code).httpStatus,
            { error: { code: error.code, message: error.message } },
            headers,
          );
        } else {
          errorPage(res, error, headers);
        }
      }
    },
  };
}
