/**
 * The Hosted v2 service surface (seed 003) on the official SDK v2: four tools
 * (list_templates, get_template, fill_template, download_filled) and the
 * `templates://filled/{download_id}` resource template, wrapped by
 * `withEnvelope` in the hosted-v2 dialect. One McpServer is built per
 * connection (stdio) or per request (HTTP); what outlives it (catalog,
 * documents, limiter) is passed in.
 */
import { createHash } from 'node:crypto';
import {
  type CallToolResult,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  ResourceTemplate,
} from '@modelcontextprotocol/server';
import type { RateLimitInfo } from '../../src/envelope/model.ts';
import { describeErrorCode } from '../../src/errors/index.ts';
import { withEnvelope } from '../../src/mcp/index.ts';
import { type RateLimiter, rateLimitInfo } from '../../src/ratelimit/index.ts';
import {
  downloadIdArgument,
  fillArguments,
  INPUT_SCHEMAS,
  listArguments,
  type ReturnMode,
  templateIdArgument,
} from './arguments.ts';
import { type Catalog, InvalidCursorError, type Template } from './catalog.ts';
import type { FilledDocuments, SavedDocument } from './documents.ts';
import { failureResult, successResult, ToolFailure } from './failure.ts';
import { DOCX_MEDIA_TYPE, renderDocx } from './render.ts';
import { checkValues } from './values.ts';

export const SERVER_INFO = { name: 'template-server', version: '1.0.0' };
export const RESOURCE_SCHEME = 'templates';
const FILLED_URI = `${RESOURCE_SCHEME}://filled/{download_id}`;
/** Why a `url` request got a resource instead: no route serves this server's documents. */
const NO_DOWNLOAD_URL =
  'No download URL: this server was given none (a gateway serving stdio only, with no artifacts.publicUrl, has no download route); read resource_uri instead';
/** The bucket fill_template's limit is counted in (TEMPLATE_SERVER_FILL_LIMIT). */
export const FILL_BUCKET = 'templates:fill';

export interface TemplateServerOptions {
  catalog: Catalog;
  documents: FilledDocuments;
  /**
   * Where download links point (`<base>?id=<download_id>`), when the store
   * gives none (a gateway sharing its store gives its own when it serves
   * HTTP). Without either there are no links: `url` is answered as
   * `mcp_resource`, with a note saying why.
   */
  downloadUrl?: string;
  /** Counts fill_template calls; undefined: no limit. */
  limiter?: RateLimiter;
  /** Who is calling, for the limiter: a bearer token's holder, an address, `local` over stdio. */
  principal: string;
  /** False when the server wants a token and this caller did not give the right one. */
  authenticated: boolean;
}

const NO_LIMIT: RateLimitInfo = { limit: null, remaining: null, reset_at: null };

/** What every success carries beside its data, as the real hosted server did. */
function operational(rateLimit: RateLimitInfo = NO_LIMIT) {
  return { rate_limit: rateLimit, auth: null };
}

function fullEntry(template: Template) {
  return {
    template_id: template.template_id,
    name: template.name,
    description: template.description,
    fields: template.fields.map((field) => ({ ...field })),
  };
}

function compactEntry(template: Template) {
  return { template_id: template.template_id, name: template.name, field_count: template.fields.length };
}

function templateOf(catalog: Catalog, templateId: string): Template {
  const template = catalog.get(templateId);
  if (!template) {
    throw new ToolFailure('TEMPLATE_NOT_FOUND', `Template not found: ${JSON.stringify(templateId)}`, {
      template_id: templateId,
    });
  }
  return template;
}

const AUTH_MESSAGE = 'This server requires a bearer token: send Authorization: Bearer <token>';

export function createTemplateServer(options: TemplateServerOptions): McpServer {
  const { catalog, documents, limiter } = options;
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {}, resources: {} } });

  /** Runs a tool: auth first, then the tool; a ToolFailure becomes its error envelope. */
  function tool(
    name: string,
    description: string,
    run: (args: Record<string, unknown>) => Promise<Record<string, unknown>>,
  ): void {
    server.registerTool(
      name,
      { description, inputSchema: INPUT_SCHEMAS[name as keyof typeof INPUT_SCHEMAS] },
      async (args: Record<string, unknown>): Promise<CallToolResult> => {
        try {
          if (!options.authenticated) throw new ToolFailure('AUTH_REQUIRED', AUTH_MESSAGE);
          return successResult(await run(args ?? {}));
        } catch (error) {
          if (error instanceof ToolFailure) return failureResult(name, error);
          throw error;
        }
      },
    );
  }

  /** Takes a fill from the caller's bucket; RATE_LIMITED (retriable) when it is empty. */
  async function takeFill(): Promise<RateLimitInfo> {
    if (!limiter) return NO_LIMIT;
    const decision = await limiter.check({ principal: options.principal, tool: 'fill_template' });
    const info = rateLimitInfo(decision);
    if (decision && !decision.allowed) {
      throw new ToolFailure(
        'RATE_LIMITED',
        `Rate limit exceeded for bucket ${JSON.stringify(decision.bucket)}. Retry after ${decision.reset_at}.`,
        { rate_limit: info },
      );
    }
    return info;
  }

  function linkOf(saved: SavedDocument): { download_url?: string } {
    const base = options.downloadUrl;
    if (base !== undefined) return { download_url: `${base}?id=${encodeURIComponent(saved.downloadId)}` };
    return saved.downloadUrl === undefined ? {} : { download_url: saved.downloadUrl };
  }

  tool(
    'list_templates',
    'List the document templates, a page at a time (next_cursor until null). mode "full" (default) gives every field; "compact" only template_id, name and field_count.',
    async (args) => {
      const { mode, cursor, limit } = listArguments(args);
      let page: ReturnType<Catalog['page']>;
      try {
        page = catalog.page(cursor, limit);
      } catch (error) {
        if (error instanceof InvalidCursorError) throw new ToolFailure('INVALID_ARGUMENT', error.message);
        throw error;
      }
      return {
        mode,
        templates: page.templates.map((template) =>
          mode === 'compact' ? compactEntry(template) : fullEntry(template),
        ),
        total_count: page.total_count,
        next_cursor: page.next_cursor,
        ...operational(),
      };
    },
  );

  tool(
    'get_template',
    'One template with every field: name, type (text, date, list), required, description, default.',
    async (args) => {
      const template = templateOf(catalog, templateIdArgument(args));
      return { template: fullEntry(template), ...operational() };
    },
  );

  tool(
    'fill_template',
    'Fill a template with values and get the .docx back: return_mode "url" (default, a download link; a resource when the server has no download route), "base64_docx" (the bytes inline) or "mcp_resource" (a templates://filled/… resource, with the link as fallback).',
    async (args) => {
      const rateLimit = await takeFill();
      const { templateId, values, returnMode } = fillArguments(args);
      const template = templateOf(catalog, templateId);
      const checked = checkValues(template, values);
      const bytes = renderDocx(template, checked.data);
      const filename = `${template.template_id}.docx`;
      const metadata = {
        template: template.template_id,
        filename,
        bytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        filledFieldCount: checked.filled.length,
        totalFieldCount: template.fields.length,
        missingFields: checked.missing,
      };
      const common = { return_mode: returnMode as ReturnMode, ...operational(rateLimit) };
      // Inline bytes need no store; a link or a resource names a stored document.
      if (returnMode === 'base64_docx') {
        return { docx_base64: bytes.toString('base64'), content_type: DOCX_MEDIA_TYPE, metadata, ...common };
      }
      const saved = await documents.save(bytes, filename);
      const link = {
        ...linkOf(saved),
        download_id: saved.downloadId,
        expires_at: saved.expiresAt,
      };
      // A link no one serves is worse than none: without a download route, `url` is answered
      // as `mcp_resource`, with a note, as the gateway answers it (src/mcp/pipeline/return-mode.ts).
      const noLink = returnMode === 'url' && link.download_url === undefined;
      if (returnMode === 'mcp_resource' || noLink) {
        return {
          resource_uri: `${RESOURCE_SCHEME}://filled/${saved.downloadId}`,
          ...link,
          content_type: DOCX_MEDIA_TYPE,
          metadata,
          ...common,
          ...(noLink ? { return_mode: 'mcp_resource', note: NO_DOWNLOAD_URL } : {}),
        };
      }
      return { ...link, metadata, ...common };
    },
  );

  tool(
    'download_filled',
    'The .docx of an earlier fill_template, as base64, by its download_id (valid until it expires).',
    async (args) => {
      const downloadId = downloadIdArgument(args);
      const document = await documents.load(downloadId);
      return {
        docx_base64: document.bytes.toString('base64'),
        content_type: document.mediaType,
        download_id: downloadId,
        download_expires_at: document.expiresAt,
        metadata: {
          template: document.filename.replace(/\.docx$/, ''),
          filename: document.filename,
          bytes: document.bytes.length,
          sha256: document.digest,
        },
        ...operational(),
      };
    },
  );

  // Registered before withEnvelope wraps the tools: resources are not tools, so they stay as they are.
  server.registerResource(
    'filled-document',
    new ResourceTemplate(FILLED_URI, { list: undefined }),
    {
      title: 'Filled document',
      description: 'A document fill_template produced (mcp_resource mode).',
      mimeType: DOCX_MEDIA_TYPE,
    },
    async (uri, variables) => {
      if (!options.authenticated) {
        throw new ProtocolError(describeErrorCode('AUTH_REQUIRED').jsonRpcCode, AUTH_MESSAGE, {
          canonical_code: 'AUTH_REQUIRED',
        });
      }
      const downloadId = String(variables.download_id ?? '');
      try {
        const document = await documents.load(decodeURIComponent(downloadId));
        return {
          contents: [
            { uri: uri.href, mimeType: document.mediaType, blob: document.bytes.toString('base64') },
          ],
        };
      } catch (error) {
        if (!(error instanceof ToolFailure)) throw error;
        if (error.code === 'DOWNLOAD_LINK_NOT_FOUND')
          throw new ResourceNotFoundError(uri.href, error.message);
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message, {
          canonical_code: error.code,
          uri: uri.href,
        });
      }
    },
  );

  withEnvelope(server, { dialect: 'hosted-v2', inputValidation: 'off' });
  return server;
}
