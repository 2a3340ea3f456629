// The SDK is a peer dependency: these are the classes of the user's own copy, the one their McpServer comes from.
import {
  type CallToolResult,
  isInputRequiredResult,
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
  type StandardSchemaV1,
} from '@modelcontextprotocol/server';
import { isJsonObject } from '../canonical/json-value.ts';
import { EnvelopeError } from '../errors/index.ts';
import { escapeToken } from '../pointer/json-pointer.ts';
import { createPipeline, type Pipeline, type PipelineOptions, PipelineRpcError } from './pipeline.ts';
import { RESULT_SCHEMA_META_KEY } from './tool-result.ts';

/**
 * Server middleware for the official SDK v2 `McpServer`.
 *
 * Interception point: the low-level `tools/call` and `tools/list` request
 * handlers. `McpServer` installs them once, on the first `registerTool`, and they
 * look tools up in its registry at call time; replacing them (instead of wrapping
 * each tool's callback) means
 * - tools registered before and after `withEnvelope` are covered alike, as are
 *   tools later updated through `RegisteredTool.update`;
 * - the SDK's own input validation, which answers invalid arguments with a plain
 *   text error before a wrapped callback would run, and its output validation,
 *   which would check the envelope against the tool's own outputSchema, are
 *   replaced by the pipeline's (Ajv on the advertised JSON Schemas), so every
 *   answer is an envelope;
 * - `tools/list` can advertise the dialect's envelope schema as `outputSchema`.
 * The tool's Standard Schema still parses the arguments after the pipeline's
 * check, so handlers get the values (defaults, transforms) they were written for.
 * `McpServer` keeps its registry private; the few members used are checked at
 * startup so an SDK change fails loudly instead of silently bypassing envelopes.
 */

export { RESULT_SCHEMA_META_KEY } from './tool-result.ts';

export interface WithEnvelopeOptions extends PipelineOptions {}

interface RegisteredToolInternals {
  title?: string;
  description?: string;
  inputSchema?: StandardSchemaV1;
  outputSchema?: unknown;
  readonly outputSchemaJson?: Record<string, unknown>;
  annotations?: unknown;
  icons?: unknown;
  execution?: unknown;
  _meta?: Record<string, unknown>;
  enabled: boolean;
  executor: (args: unknown, ctx: ServerContext) => Promise<unknown>;
}

interface McpServerInternals {
  _registeredTools: Record<string, RegisteredToolInternals>;
  _maxToolInputElements?: number;
  setToolRequestHandlers(): void;
  toolInputSchemaJson(name: string): Record<string, unknown> | undefined;
}

const WRAPPED = Symbol.for('mcp-envelope.withEnvelope');
const EMPTY_OBJECT_SCHEMA = { type: 'object', properties: {} };

function internalsOf(server: McpServer): McpServerInternals {
  const internals = server as unknown as McpServerInternals;
  if (
    !isJsonObject(internals._registeredTools as unknown) ||
    typeof internals.setToolRequestHandlers !== 'function' ||
    typeof internals.toolInputSchemaJson !== 'function'
  ) {
    throw new EnvelopeError(
      'INTERNAL_ERROR',
      'withEnvelope does not recognise this McpServer (an unsupported @modelcontextprotocol/server version?)',
    );
  }
  return internals;
}

function pointerOf(path: StandardSchemaV1.Issue['path']): string {
  if (!path) return '';
  return path
    .map((segment) => {
      const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
      return `/${escapeToken(String(key))}`;
    })
    .join('');
}

/** Parses arguments with the tool's own Standard Schema, as the SDK would before calling it. */
async function parseArguments(tool: RegisteredToolInternals, args: unknown): Promise<unknown> {
  if (!tool.inputSchema) return args;
  const parsed = await tool.inputSchema['~standard'].validate(args ?? {});
  if (parsed.issues) {
    const first = parsed.issues[0];
    const pointer = pointerOf(first?.path);
    throw new EnvelopeError('INVALID_INPUT', `${pointer || '/'} ${first?.message ?? 'is invalid'}`, {
      pointer,
    });
  }
  return parsed.value;
}

function asResult(value: unknown): CallToolResult {
  if (!isJsonObject(value)) {
    throw new EnvelopeError('INVALID_OUTPUT', 'Tool handler did not return a CallToolResult object');
  }
  return value as CallToolResult;
}

/**
 * Makes every tool of `server` answer with an envelope of the chosen dialect.
 * Returns the pipeline (its `outputSchema` is what tools/list advertises).
 */
export function withEnvelope(server: McpServer, options: WithEnvelopeOptions = {}): Pipeline {
  const marked = server as unknown as Record<symbol, unknown>;
  if (marked[WRAPPED])
    throw new EnvelopeError('USAGE_ERROR', 'withEnvelope was already applied to this server');
  const internals = internalsOf(server);
  // Keep the server's own guard against oversized arguments (McpServerOptions.maxToolInputElements).
  const limit = internals._maxToolInputElements;
  // Records name the server as it introduced itself, unless the caller says otherwise.
  const own = (server.server as unknown as { _serverInfo?: { name?: unknown; version?: unknown } })
    ._serverInfo;
  const identity =
    options.server === undefined && typeof own?.name === 'string' && typeof own.version === 'string'
      ? { server: { name: own.name, version: own.version } }
      : {};
  const pipeline = createPipeline({
    ...options,
    ...identity,
    ...(options.maxArgumentElements === undefined && typeof limit === 'number'
      ? { maxArgumentElements: limit }
      : {}),
  });
  // Let McpServer install its tool handlers (a no-op once it has), then take them over.
  internals.setToolRequestHandlers();
  const low = server.server;
  low.removeRequestHandler('tools/list');
  low.removeRequestHandler('tools/call');

  low.setRequestHandler('tools/list', () => ({
    tools: Object.entries(internals._registeredTools)
      .filter(([, tool]) => tool.enabled)
      .map(([name, tool]) => {
        const own = tool.outputSchema ? tool.outputSchemaJson : undefined;
        const meta = own ? { ...tool._meta, [RESULT_SCHEMA_META_KEY]: own } : tool._meta;
        const outputSchema = pipeline.outputSchema ?? own;
        return {
          name,
          title: tool.title,
          description: tool.description,
          inputSchema: internals.toolInputSchemaJson(name) ?? EMPTY_OBJECT_SCHEMA,
          ...(outputSchema === undefined ? {} : { outputSchema }),
          annotations: tool.annotations,
          icons: tool.icons,
          execution: tool.execution,
          _meta: meta,
        } as never;
      }),
  }));

  low.setRequestHandler('tools/call', async (request, ctx) => {
    const { name } = request.params;
    const tool = internals._registeredTools[name];
    if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
    if (!tool.enabled) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} disabled`);
    const outputSchema = tool.outputSchema ? tool.outputSchemaJson : undefined;
    try {
      const result = await pipeline.callTool({
        tool: {
          name,
          ...(tool.title === undefined ? {} : { title: tool.title }),
          inputSchema: internals.toolInputSchemaJson(name) ?? EMPTY_OBJECT_SCHEMA,
          ...(outputSchema === undefined ? {} : { outputSchema }),
        },
        arguments: request.params.arguments,
        meta: request.params._meta,
        signal: ctx.mcpReq.signal,
        invoke: async (args) => asResult(await tool.executor(await parseArguments(tool, args), ctx)),
        // The SDK's multi-round-trip "input required" answer is no final result, so never an envelope.
        isInterim: isInputRequiredResult,
        // As in McpServer: a URL elicitation request travels as the protocol error it is.
        isProtocolSignal: (error) =>
          error instanceof ProtocolError && error.code === ProtocolErrorCode.UrlElicitationRequired,
      });
      if (isInputRequiredResult(result)) return result;
      return low.projectCallToolResult(result, pipeline.outputSchema ?? outputSchema);
    } catch (error) {
      if (error instanceof PipelineRpcError) {
        throw new ProtocolError(error.rpcError.code, error.rpcError.message, error.rpcError.data);
      }
      throw error;
    }
  });
  marked[WRAPPED] = true;
  return pipeline;
}
