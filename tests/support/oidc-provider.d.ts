/**
 * The part of oidc-provider (which ships no types) the tests' authorization
 * server uses: a provider built from a configuration, served by its callback.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ResourceServerInfo {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'jwt' | 'opaque';
    jwt?: { sign?: { alg?: string } };
  }

  export interface Configuration {
    ttl?: Record<string, number>;
    clients?: Record<string, unknown>[];
    jwks?: { keys: Record<string, unknown>[] };
    scopes?: string[];
    /** Claims added to each access token issued (top-level members of a JWT one). */
    extraTokenClaims?: (
      ctx: unknown,
      token: unknown,
    ) => Record<string, unknown> | Promise<Record<string, unknown>>;
    features?: {
      devInteractions?: { enabled: boolean };
      clientCredentials?: { enabled: boolean };
      introspection?: { enabled: boolean };
      dPoP?: { enabled: boolean };
      resourceIndicators?: {
        enabled: boolean;
        defaultResource?: (ctx: unknown) => string | undefined;
        useGrantedResource?: (ctx: unknown) => boolean;
        getResourceServerInfo?: (ctx: unknown, indicator: string, client: unknown) => ResourceServerInfo;
      };
    };
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    static errors: { InvalidTarget: new () => Error };
  }
}
