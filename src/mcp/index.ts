export { detectEnvelope, type EnvelopeDetection, outputSchemaFor } from './dialects.ts';
export { selfContainedSchema } from './output-schema.ts';
export {
  type CallOutcome,
  type CallSummary,
  createPipeline,
  type Pipeline,
  type PipelineOptions,
  PipelineRpcError,
  type PipelineTool,
  type RecordContext,
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
export {
  contentText,
  type EnvelopeToToolResultOptions,
  envelopeToToolResult,
  LOSSES_META_KEY,
  PROVENANCE_META_KEY,
  parseJsonText,
  type ToolResultLike,
  type ToolResultPayload,
  toolResultPayload,
  valueToToolResult,
} from './tool-result.ts';
export { RESULT_SCHEMA_META_KEY, type WithEnvelopeOptions, withEnvelope } from './with-envelope.ts';
