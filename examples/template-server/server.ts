/**
 * The reference template server: Hosted MCP v2 (seed 003) on the official SDK
 * v2, its answers made envelopes by `withEnvelope` in the hosted-v2 dialect.
 *
 *   node examples/template-server/server.ts                       stdio (for the gateway)
 *   node examples/template-server/server.ts --http 127.0.0.1:8790  HTTP: /api/mcp and /api/download
 *
 * Settings come from the environment: see config.ts.
 */
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { RateLimiter } from '../../src/ratelimit/index.ts';
import { type Catalog, loadCatalog } from './catalog.ts';
import { ConfigError, configFromEnv, type ServerConfig } from './config.ts';
import { FilledDocuments } from './documents.ts';
import { startHttp } from './http.ts';
import { assertRenderable } from './render.ts';
import { createTemplateServer, FILL_BUCKET } from './tools.ts';

export interface Services {
  catalog: Catalog;
  documents: FilledDocuments;
  limiter?: RateLimiter;
}

/**
 * What outlives a connection: the templates (checked to compile), the document store (the
 * gateway's, through its put API, when one shares its store with this process), the fill limiter.
 */
export function openServices(config: ServerConfig): Services {
  const catalog = loadCatalog(config.templatesDir);
  for (const template of catalog.templates) assertRenderable(template);
  const documents = new FilledDocuments({
    dir: config.artifactsDir,
    ...(config.artifactsDb === undefined ? {} : { databasePath: config.artifactsDb }),
    ttlMs: config.ttlMs,
  });
  const limiter =
    config.fillLimit === undefined
      ? undefined
      : new RateLimiter([
          { bucket: FILL_BUCKET, limit: config.fillLimit, windowMs: 60_000, tool: 'fill_template' },
        ]);
  return { catalog, documents, ...(limiter === undefined ? {} : { limiter }) };
}

/** `host:port` of --http; the host defaults to loopback. */
export function parseListen(text: string): { host: string; port: number } {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (!match || port > 65_535)
    throw new ConfigError(`--http wants host:port (e.g. 127.0.0.1:8790); got ${JSON.stringify(text)}`);
  const host = (match[1] ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

async function main(argv: string[]): Promise<void> {
  const config = configFromEnv();
  const services = openServices(config);
  const at = argv.indexOf('--http');
  if (at === -1) {
    if (config.token !== undefined)
      process.stderr.write('TEMPLATE_SERVER_TOKEN applies over HTTP only; ignored on stdio\n');
    // Over stdio there is no download route unless one is given: a gateway sharing its store
    // names its own in each document's link when it serves HTTP; otherwise there is none.
    const server = createTemplateServer({
      ...services,
      ...(config.downloadUrl === undefined ? {} : { downloadUrl: config.downloadUrl }),
      principal: 'local',
      authenticated: true,
    });
    await server.connect(new StdioServerTransport());
    return;
  }
  const { host, port } = parseListen(argv[at + 1] ?? '');
  const running = await startHttp({
    ...services,
    host,
    port,
    ...(config.downloadUrl === undefined ? {} : { downloadUrl: config.downloadUrl }),
    ...(config.token === undefined ? {} : { token: config.token }),
  });
  process.stderr.write(`template server listening on ${running.url}/api/mcp\n`);
  const stop = () => {
    void running
      .close()
      .then(() => services.documents.close())
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`template server: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  });
}
