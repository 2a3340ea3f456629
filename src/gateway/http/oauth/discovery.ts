import { EnvelopeError } from '../../../errors/index.ts';

/** What the gateway reads of an authorization server's metadata (RFC 8414 / OpenID Connect Discovery). */
export interface AuthorizationServerMetadata {
  issuer: string;
  jwks_uri?: string;
  introspection_endpoint?: string;
}

/** How long one request to the authorization server may take. */
export const AUTH_SERVER_TIMEOUT_MS = 5_000;

/**
 * Where an issuer's metadata may be, in the order tried: RFC 8414's location
 * (the well-known segment inserted before the issuer's path), then OpenID
 * Connect Discovery's (appended to it), as MCP clients look for them.
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

function unavailable(message: string): EnvelopeError {
  return new EnvelopeError('AUTH_SERVER_UNAVAILABLE', message);
}

/**
 * The issuer's metadata, from the first location that answers 200 with JSON
 * naming exactly this issuer (RFC 8414 §3.3: metadata for another issuer is
 * refused, so a look-alike server cannot hand over its keys). Nothing found is
 * AUTH_SERVER_UNAVAILABLE: without the issuer's keys no token can be checked.
 */
export async function discoverAuthorizationServer(issuer: string): Promise<AuthorizationServerMetadata> {
  const failures: string[] = [];
  for (const url of metadataUrls(issuer)) {
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        redirect: 'error',
        signal: AbortSignal.timeout(AUTH_SERVER_TIMEOUT_MS),
      });
    } catch (error) {
      failures.push(`${url}: ${(error as Error).message}`);
      continue;
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      failures.push(`${url}: HTTP ${response.status}`);
      continue;
    }
    let metadata: unknown;
    try {
      metadata = await response.json();
    } catch {
      failures.push(`${url}: not JSON`);
      continue;
    }
    if (
      typeof metadata !== 'object' ||
      metadata === null ||
      (metadata as { issuer?: unknown }).issuer !== issuer
    ) {
      throw unavailable(`${url} describes another issuer than ${issuer}`);
    }
    return metadata as AuthorizationServerMetadata;
  }
  throw unavailable(`No metadata for the authorization server ${issuer}: ${failures.join('; ')}`);
}
