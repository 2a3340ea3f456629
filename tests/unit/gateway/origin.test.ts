import { describe, expect, it } from 'vitest';
import type { EnvelopeError } from '../../../src/errors/index.ts';
import { checkHostAndOrigin, type OriginPolicy } from '../../../src/gateway/http/origin.ts';

/** The header a check refuses (`host` or `origin`), or null when the request may proceed. */
function refused(
  host: string | undefined,
  origin: string | undefined,
  policy: OriginPolicy = {},
): string | null {
  try {
    checkHostAndOrigin(host, origin, policy);
    return null;
  } catch (error) {
    const refusal = error as EnvelopeError;
    expect(refusal.code).toBe('FORBIDDEN');
    return String(refusal.details?.header);
  }
}

describe('Host and Origin checks (DNS-rebinding protection)', () => {
  it.each([['127.0.0.1:8787'], ['localhost'], ['LocalHost:3000'], ['[::1]:8787']])(
    'accepts the loopback Host %s, with any port',
    (host) => {
      expect(refused(host, undefined)).toBeNull();
    },
  );

  it.each([
    ['evil.example.com', 'a foreign name'],
    ['localhost.evil.example', 'a name that only starts like loopback'],
    ['::1', 'an IPv6 address without brackets (not a valid Host)'],
    ['', 'an empty header'],
  ])('refuses the Host %j (%s)', (host) => {
    expect(refused(host, undefined)).toBe('host');
  });

  it.each([
    ['[::1]evil.com', 'text after the brackets of an IPv6 address'],
    ['[::1]evil.com:8787', 'the same with a port'],
    ['[::1', 'an unclosed bracket'],
    ['[localhost]', 'brackets around a name'],
    ['a@localhost', 'user info, which the URL parser drops'],
    ['localhost/x', 'a path, which the URL parser drops'],
    ['localhost:', 'an empty port'],
    ['localhost:80abc', 'a port that is not a number'],
    ['localhost:99999', 'a port past 65535'],
    ['local host', 'a space'],
    ['127.1', 'a shortened IPv4 address the URL parser expands to 127.0.0.1'],
  ])('refuses the malformed Host %j (%s)', (host) => {
    expect(refused(host, undefined)).toBe('host');
  });

  it('refuses a request without a Host header', () => {
    expect(refused(undefined, undefined)).toBe('host');
  });

  it('accepts configured Host names whatever their case or port', () => {
    const policy = { allowedHosts: ['MCP.Example.com'] };
    expect(refused('mcp.example.com:443', undefined, policy)).toBeNull();
    expect(refused('other.example.com', undefined, policy)).toBe('host');
  });

  it('accepts loopback Origins and requests without one', () => {
    expect(refused('127.0.0.1', undefined)).toBeNull();
    expect(refused('127.0.0.1', 'http://localhost:5173')).toBeNull();
    expect(refused('127.0.0.1', 'http://[::1]:5173')).toBeNull();
  });

  it.each([
    ['http://evil.example.com', 'a foreign page'],
    ['null', 'an opaque origin (sandboxed frame, file:)'],
    ['', 'an empty header, which no browser sends'],
    ['not a url', 'a value that is no origin'],
  ])('refuses the Origin %j (%s)', (origin) => {
    expect(refused('127.0.0.1', origin)).toBe('origin');
  });

  it.each([
    ['javascript://localhost', 'a script scheme naming a loopback host'],
    ['file://localhost', 'a file origin'],
    ['ftp://127.0.0.1', 'a scheme other than http(s)'],
    ['http://localhost/x', 'a path, which no origin has'],
    ['http://user@localhost', 'user info, which no origin has'],
    ['http://[::1]evil.com', 'text after the brackets'],
    ['http://localhost:', 'an empty port'],
  ])('refuses the malformed Origin %j (%s)', (origin) => {
    expect(refused('127.0.0.1', origin)).toBe('origin');
  });

  it('accepts another scheme only when configured: whole, or as `<scheme>://*`', () => {
    expect(
      refused('127.0.0.1', 'vscode-webview://abc', { allowedOrigins: ['vscode-webview://abc'] }),
    ).toBeNull();
    expect(refused('127.0.0.1', 'vscode-webview://other', { allowedOrigins: ['vscode-webview://abc'] })).toBe(
      'origin',
    );
    expect(refused('127.0.0.1', 'javascript://localhost', { allowedOrigins: ['localhost'] })).toBe('origin');
  });

  it('matches a configured full origin exactly, and a configured name on any scheme and port', () => {
    const exact = { allowedOrigins: ['https://App.example'] };
    expect(refused('127.0.0.1', 'https://app.example', exact)).toBeNull();
    expect(refused('127.0.0.1', 'https://app.example:8443', exact)).toBe('origin');
    expect(refused('127.0.0.1', 'http://app.example', exact)).toBe('origin');
    const byName = { allowedOrigins: ['app.example'] };
    expect(refused('127.0.0.1', 'https://app.example:8443', byName)).toBeNull();
    expect(refused('127.0.0.1', 'https://other.example', byName)).toBe('origin');
  });

  it('accepts every origin of a scheme listed as `<scheme>://*` (browser extensions)', () => {
    const policy = { allowedOrigins: ['moz-extension://*'] };
    expect(refused('127.0.0.1', 'moz-extension://0f1e2d3c-aaaa-bbbb', policy)).toBeNull();
    expect(refused('127.0.0.1', 'chrome-extension://abcdef', policy)).toBe('origin');
  });

  it('checks the Host before the Origin', () => {
    expect(refused('evil.example.com', 'http://evil.example.com')).toBe('host');
  });
});
