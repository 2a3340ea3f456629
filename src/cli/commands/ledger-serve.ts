/**
 * `mcp-envelope ledger serve`: the ledger viewer (src/ledger/web/) over HTTP
 * for someone holding a copy of a ledger file, opened read-only. Loopback
 * only unless a token guards it; Host and Origin are checked as the
 * gateway checks them (DNS rebinding), and the viewer's own guard takes the
 * token as a bearer header or through its login form.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { EnvelopeError } from '../../errors/index.ts';
import { Ledger } from '../../ledger/index.ts';
import { SECURITY_HEADERS } from '../../ledger/web/html.ts';
import { loadPublicKey } from '../../provenance/index.ts';
import { type Invocation, runs } from '../command.ts';
import { EXIT } from '../output.ts';
import { exitSoon, stopRequested } from '../stop-signals.ts';
import { parseListen } from './listen.ts';

interface ServeFlags {
  db?: string;
  http: string;
  publicKey?: string;
  tokenEnv?: string;
}

const DEFAULT_ADDRESS = '127.0.0.1:0';

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The token from the named variable; a name that holds nothing is a mistake, not an open door. */
function tokenFrom(env: NodeJS.ProcessEnv, name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const token = env[name];
  if (token === undefined || token.trim() === '') {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `--token-env ${name}: the environment variable is not set or empty`,
      {
        variable: name,
      },
    );
  }
  return token.trim();
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

function sendText(res: import('node:http').ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

export function registerServe(
  ledger: Command,
  invocation: Invocation,
  dbHelp: string,
  defaultDb: string,
): void {
  ledger
    .command('serve')
    .description(
      'serve the ledger viewer over HTTP for a browser: runs, records, lineage and the proof data to verify them in the browser (the file is opened read-only)',
    )
    .option('--db <file>', dbHelp)
    .option(
      '--http <host:port>',
      'address to listen on; non-loopback hosts need --token-env',
      DEFAULT_ADDRESS,
    )
    .option('--public-key <file>', 'Ed25519 public key (PEM) the records and checkpoints are signed with')
    .option(
      '--token-env <name>',
      'environment variable holding the token a visitor must give (bearer or login form)',
    )
    .addHelpText(
      'after',
      `
Pages: /ledger (runs, with filters and each row's digest, signature and
inclusion checked), /ledger/runs/RUN_ID (a record), /ledger/runs/RUN_ID/lineage,
and /ledger/api/runs/RUN_ID (the proof data the record page's script verifies
in the browser). It prints the URL, and stops on Ctrl-C (SIGINT) or SIGTERM.

With --token-env, every page needs the token: an Authorization: Bearer header,
or the form at /ledger/login, which gives a session cookie (signed with a key
made at start, so a restart ends every session). Without it the viewer listens
on loopback only. The file is opened read-only and never changed.`,
    )
    .action(
      runs(invocation, async ({ io }, flags: ServeFlags) => {
        // Loaded here, not at the top: only this command serves pages (and the origin check needs the MCP SDK).
        const { checkHostAndOrigin } = await import('../../gateway/http/origin.ts');
        const { createLedgerWeb, isLedgerPath, LEDGER_PREFIX } = await import('../../ledger/web/index.ts');
        const { host, port } = parseListen(flags.http);
        const token = tokenFrom(io.env, flags.tokenEnv);
        if (token === undefined && !isLoopback(host)) {
          throw new EnvelopeError(
            'USAGE_ERROR',
            `Refusing to serve the ledger on ${host} without a token: anyone who reaches it could read every record. Listen on 127.0.0.1, or give --token-env NAME`,
            { host },
          );
        }
        const publicKey =
          flags.publicKey === undefined
            ? undefined
            : loadPublicKey(readFileSync(resolve(io.cwd, flags.publicKey)));
        const store = Ledger.open(resolve(io.cwd, flags.db ?? defaultDb), { readOnly: true });
        const expected = token === undefined ? undefined : digest(token);
        const web = createLedgerWeb({
          ledger: store,
          ...(publicKey ? { publicKey } : {}),
          ...(expected
            ? { auth: { required: true, check: (given: string) => timingSafeEqual(digest(given), expected) } }
            : {}),
          onError: (error) =>
            io.stderr(`ledger serve: ${error instanceof Error ? error.message : String(error)}\n`),
        });
        const allowed = isLoopback(host) ? {} : { allowedHosts: [host] };
        const server = createServer((req, res) => {
          const path = (req.url ?? '/').split('?')[0] ?? '/';
          try {
            checkHostAndOrigin(req.headers.host, req.headers.origin, allowed);
          } catch (error) {
            const refused = error as EnvelopeError;
            return sendText(res, 403, { error: { code: refused.code, message: refused.message } });
          }
          if (path === '/') {
            res.writeHead(303, { ...SECURITY_HEADERS, location: LEDGER_PREFIX, 'content-length': '0' });
            return res.end();
          }
          if (!isLedgerPath(path)) {
            return sendText(res, 404, {
              error: { code: 'NOT_FOUND', message: `Nothing at ${path}; the viewer is at ${LEDGER_PREFIX}` },
            });
          }
          void web.handle(req, res);
        });
        const stop = stopRequested();
        try {
          await new Promise<void>((done, fail) => {
            server.once('error', (error) =>
              fail(
                new EnvelopeError('LISTEN_FAILED', `Cannot listen on ${flags.http}: ${error.message}`, {
                  address: flags.http,
                }),
              ),
            );
            server.listen(port, host, () => done());
          });
          const address = server.address() as AddressInfo;
          const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          io.stdout(
            `ledger viewer: http://${shown}:${address.port}${LEDGER_PREFIX} (${store.path}, read-only${token ? ', token required' : ''}); Ctrl-C stops it\n`,
          );
          await stop.requested;
        } finally {
          stop.dispose();
          server.closeAllConnections();
          await new Promise<void>((done) => server.close(() => done()));
          store.close();
        }
        exitSoon();
        return { exitCode: EXIT.ok };
      }),
    );
}
