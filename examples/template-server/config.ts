/**
 * The server's settings, all from the environment (relative paths are taken
 * from the working directory):
 *
 * - TEMPLATE_SERVER_TEMPLATES_DIR: the templates folder (default: templates/ beside this file).
 * - TEMPLATE_SERVER_ARTIFACTS_DIR: the folder of the server's own artifact store (default:
 *   data/artifacts/ beside this file). Not opened behind a gateway that shares its store: then
 *   documents go through the gateway's put API (MCP_ENVELOPE_ARTIFACTS_URL and _TOKEN, which the
 *   gateway sets), and its links are the gateway's.
 * - TEMPLATE_SERVER_ARTIFACTS_DB: the SQLite file of its own store's metadata (default:
 *   artifacts.sqlite in that folder).
 * - TEMPLATE_SERVER_DOWNLOAD_URL: the base of download links (default: the gateway's link when it
 *   shares its store and serves HTTP; else over HTTP this server's own /api/download, and over stdio
 *   none: a `url` request is then answered as `mcp_resource`, as the gateway answers it without one).
 * - TEMPLATE_SERVER_TTL_MS: how long a filled document and its link live in its own store (default
 *   3600000, one hour; behind a sharing gateway, the gateway's artifacts.ttlMs).
 * - TEMPLATE_SERVER_FILL_LIMIT: fill_template calls per minute per caller (default: no limit).
 * - TEMPLATE_SERVER_TOKEN: over HTTP, the bearer token every call must carry (default: none needed).
 */

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ServerConfig {
  templatesDir: string;
  artifactsDir: string;
  artifactsDb: string | undefined;
  downloadUrl: string | undefined;
  ttlMs: number;
  fillLimit: number | undefined;
  token: string | undefined;
}

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** The longest a link may live: a day. */
const MAX_TTL_MS = 86_400_000;

export class ConfigError extends Error {}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, max: number): number | undefined {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new ConfigError(`${name} must be an integer from 1 to ${max}; got ${JSON.stringify(text)}`);
  }
  return value;
}

function optional(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const downloadUrl = optional(env, 'TEMPLATE_SERVER_DOWNLOAD_URL');
  if (downloadUrl !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(downloadUrl);
    } catch {
      throw new ConfigError(`The download URL is not a URL: ${JSON.stringify(downloadUrl)}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError('The download URL must be an http or https URL');
    }
  }
  const db = optional(env, 'TEMPLATE_SERVER_ARTIFACTS_DB');
  return {
    templatesDir: resolve(optional(env, 'TEMPLATE_SERVER_TEMPLATES_DIR') ?? resolve(HERE, 'templates')),
    artifactsDir: resolve(
      optional(env, 'TEMPLATE_SERVER_ARTIFACTS_DIR') ?? resolve(HERE, 'data', 'artifacts'),
    ),
    artifactsDb: db === undefined ? undefined : resolve(db),
    downloadUrl,
    ttlMs: positiveInteger(env, 'TEMPLATE_SERVER_TTL_MS', MAX_TTL_MS) ?? 3_600_000,
    fillLimit: positiveInteger(env, 'TEMPLATE_SERVER_FILL_LIMIT', 1_000_000),
    token: optional(env, 'TEMPLATE_SERVER_TOKEN'),
  };
}
