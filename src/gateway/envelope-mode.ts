import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import type { ResultDialectId } from '../envelope/dialect.ts';
import { createIdSource } from '../ids/index.ts';
import { createPipeline, type Pipeline, type PipelineOptions } from '../mcp/index.ts';
import type { RelayOptions, ToolCallHandler } from './relay.ts';

export interface EnvelopeModeOptions extends Omit<PipelineOptions, 'dialect' | 'ids'> {
  dialect: ResultDialectId;
  /** Seed for deterministic run and request ids (the same call gives the same bytes). */
  deterministicIdsSeed?: string;
}

/** Runs every relayed tools/call through the enforcement pipeline. */
export function pipelineToolCalls(pipeline: Pipeline): ToolCallHandler {
  return (params, invokeUpstream, context) =>
    pipeline.callTool({
      tool: context.tool ?? { name: params.name },
      arguments: params.arguments,
      meta: params._meta,
      signal: context.signal,
      invoke: async (args) => (await invokeUpstream({ ...params, arguments: args })) as CallToolResult,
    });
}

/**
 * The relay options for envelope mode: tool results become envelopes of the
 * dialect, and tools/list advertises the dialect's envelope schema as every
 * tool's outputSchema.
 */
export function envelopeMode(options: EnvelopeModeOptions): RelayOptions {
  const { deterministicIdsSeed, ...rest } = options;
  const pipeline = createPipeline({
    ...rest,
    ids: createIdSource(deterministicIdsSeed),
  });
  return {
    toolCallHandler: pipelineToolCalls(pipeline),
    outputSchemaFor: (_tool: Tool) => pipeline.outputSchema as Tool['outputSchema'] | undefined,
  };
}
