/**
 * Browser sessions for the viewer: a browser cannot easily send a bearer
 * header, so a valid token given to the login form buys a cookie instead. The
 * cookie never holds the token: it is `<expiry ms>.<random id>.<HMAC>`, signed
 * with a key made at random when the process starts (so a restart logs
 * everyone out), and refused once expired, altered or logged out.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'ledger_session';
/** How long a login lasts. */
export const SESSION_LIFETIME_MS = 8 * 60 * 60 * 1000;

export interface SessionKeeper {
  /** A new session's cookie value. */
  issue(): string;
  /** Whether a cookie value is a live session this process issued. */
  valid(value: string): boolean;
  /** Ends a session before its expiry. */
  revoke(value: string): void;
  /** The Set-Cookie header giving `value`, or clearing the cookie when undefined. */
  header(value: string | undefined): string;
}

export function sessionKeeper(options: { now?: () => number; lifetimeMs?: number } = {}): SessionKeeper {
  const key = randomBytes(32);
  const now = options.now ?? Date.now;
  const lifetime = options.lifetimeMs ?? SESSION_LIFETIME_MS;
  // Logged-out ids until they would have expired anyway; each expiry bounds its entry.
  const revoked = new Map<string, number>();
  const mac = (body: string) => createHmac('sha256', key).update(body).digest('base64url');

  function parse(value: string): { id: string; expiry: number } | undefined {
    const match = /^(\d{1,16})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (!match) return undefined;
    const [, expiry, id, tag] = match as unknown as [string, string, string, string];
    const expected = Buffer.from(mac(`${expiry}.${id}`));
    const given = Buffer.from(tag);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return { id, expiry: Number(expiry) };
  }

  function sweep(): void {
    const at = now();
    for (const [id, expiry] of revoked) if (expiry <= at) revoked.delete(id);
  }

  return {
    issue() {
      const body = `${now() + lifetime}.${randomBytes(16).toString('base64url')}`;
      return `${body}.${mac(body)}`;
    },
    valid(value) {
      const session = parse(value);
      return session !== undefined && session.expiry > now() && !revoked.has(session.id);
    },
    revoke(value) {
      const session = parse(value);
      sweep();
      if (session) revoked.set(session.id, session.expiry);
    },
    header(value) {
      const common = 'HttpOnly; SameSite=Strict; Path=/ledger';
      return value === undefined
        ? `${SESSION_COOKIE}=; ${common}; Max-Age=0`
        : `${SESSION_COOKIE}=${value}; ${common}; Max-Age=${Math.floor(lifetime / 1000)}`;
    },
  };
}

/** The session cookie's value in a Cookie header, if any. */
export function sessionCookie(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === SESSION_COOKIE) return part.slice(at + 1).trim();
  }
  return undefined;
}
