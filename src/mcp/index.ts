/**
 * mcp-envelope/mcp: the official SDK v2 integration. `withEnvelope` for an
 * `McpServer`, `createPipeline` for a low-level `Server` (or a gateway),
 * `readToolResult` and `callToolWithRetry` on the client side. How results are
 * carried in content blocks and detected stays internal.
 */
export { outputSchemaFor } from './dialects.ts';
export {
  type CallAccess,
  type CallAction,
  type CallFailure,
  type CallOutcome,
  type CallSummary,
  createPipeline,
  type Pipeline,
  type PipelineOptions,
  PipelineRpcError,
  type PipelineTool,
  type RecordPlacement,
  type ToolArguments,
  type ToolCall,
  ToolTimeoutError,
  type ValidationMode,
} from './pipeline.ts';
export {
  callToolWithRetry,
  type RetryOptions,
  type RetryRead,
  readToolResult,
  type ToolResultRead,
} from './read-tool-result.ts';
export { LOSSES_META_KEY, PROVENANCE_META_KEY, type ToolResultLike } from './tool-result.ts';
export { RESULT_SCHEMA_META_KEY, type WithEnvelopeOptions, withEnvelope } from './with-envelope.ts';
