/**
 * Return modes at the gateway's edge. `_meta.return_mode` is the gateway's:
 * it is taken out of a call before the call is forwarded, so upstreams never
 * see it (a tool that declares a `return_mode` argument gets that argument
 * unchanged). Enforced upstreams apply the mode in the pipeline
 * (src/mcp/pipeline/return-mode.ts); a passthrough upstream's results are
 * left as they came unless the caller asked for a mode, since passthrough
 * promises the upstream's own answer: a caller who asks gets the binary
 * replaced all the same.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { isEnvelopeError } from '../../errors/index.ts';
import {
  type ArtifactSink,
  applyReturnMode,
  type ReturnMode,
  requestedReturnMode,
  withoutReturnMode,
} from '../../mcp/pipeline/return-mode.ts';
import type { CallToolParams } from '../relay/relay.ts';

/** The call as it is forwarded, and the `_meta.return_mode` the caller gave (undefined: none). */
export function splitReturnMode(params: CallToolParams): { forwarded: CallToolParams; asked: unknown } {
  const meta = params._meta;
  if (!meta || !Object.hasOwn(meta, 'return_mode')) return { forwarded: params, asked: undefined };
  // `_meta` set even when nothing is left of it: the relay lays the call over the request it came in.
  return { forwarded: { ...params, _meta: withoutReturnMode(meta) }, asked: meta.return_mode };
}

/**
 * The mode a passthrough call asked for, read before the call is forwarded:
 * undefined when it asked for none; a bad `_meta.return_mode` is INVALID_INPUT
 * (a JSON-RPC error: passthrough has no envelope to say it in).
 */
export function passthroughMode(
  sink: ArtifactSink | undefined,
  tool: Tool | undefined,
  params: CallToolParams,
  asked: unknown,
): ReturnMode | undefined {
  if (!sink) return undefined;
  return requestedReturnMode(
    tool?.inputSchema as Record<string, unknown> | undefined,
    params.arguments,
    asked,
  );
}

/**
 * A passthrough result with the mode the caller asked for applied: files
 * stored and replaced, their links after the other blocks. An artifact over
 * the store's limit is TOO_LARGE; a store that fails leaves the result as it came.
 */
export async function passthroughReturnMode(
  result: CallToolResult,
  options: {
    sink: ArtifactSink;
    mode: ReturnMode;
    owner: string;
    tool: string;
    onError?: (error: unknown) => void;
  },
): Promise<CallToolResult> {
  try {
    const { mode, ...rest } = options;
    const outcome = await applyReturnMode(result, { ...rest, requested: mode });
    if (outcome.artifacts.length === 0) return result;
    const replaced = outcome.result as CallToolResult;
    return { ...replaced, content: [...replaced.content, ...outcome.links] };
  } catch (error) {
    if (isEnvelopeError(error) && error.code === 'TOO_LARGE') throw error;
    options.onError?.(error);
    return result;
  }
}
