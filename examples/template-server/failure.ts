/**
 * How the tools answer. A success is the tool's data as JSON text, which
 * `withEnvelope` wraps as `{ ok: true, tool, schema_version, data }`. A failure
 * is a Hosted v2 error envelope written here, because its code and details
 * (missing_fields, rate_limit, issues) are the tool's own: `withEnvelope`
 * passes an envelope of its own dialect through unchanged.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { HOSTED_SCHEMA_VERSION } from '../../src/envelope/dialects/hosted-v2.ts';
import { describeErrorCode } from '../../src/errors/index.ts';

/**
 * The codes this server answers with: seed 003's taxonomy, plus the store's
 * ARTIFACT_STORE_UNAVAILABLE (retriable) when its folder or disk fails, and
 * INTERNAL_ERROR.
 */
export type HostedCode =
  | 'ARTIFACT_STORE_UNAVAILABLE'
  | 'MISSING_REQUIRED_FIELDS'
  | 'INVALID_ARGUMENT'
  | 'AUTH_REQUIRED'
  | 'RATE_LIMITED'
  | 'TEMPLATE_NOT_FOUND'
  | 'DOWNLOAD_LINK_INVALID'
  | 'DOWNLOAD_LINK_EXPIRED'
  | 'DOWNLOAD_LINK_NOT_FOUND'
  | 'INTERNAL_ERROR';

/** A failure a tool answers with (thrown inside a tool, turned into its error envelope). */
export class ToolFailure extends Error {
  readonly code: HostedCode;
  readonly details: Record<string, unknown> | undefined;
  readonly retriable: boolean;
  constructor(
    code: HostedCode,
    message: string,
    details?: Record<string, unknown>,
    retriable: boolean = describeErrorCode(code).retriable,
  ) {
    super(message);
    this.name = 'ToolFailure';
    this.code = code;
    this.details = details;
    this.retriable = retriable;
  }
}

function text(value: unknown): CallToolResult['content'] {
  return [{ type: 'text', text: JSON.stringify(value) }];
}

export function successResult(data: Record<string, unknown>): CallToolResult {
  return { content: text(data) };
}

export function failureResult(tool: string, failure: ToolFailure): CallToolResult {
  const envelope = {
    ok: false,
    tool,
    schema_version: HOSTED_SCHEMA_VERSION,
    error: {
      code: failure.code,
      message: failure.message,
      retriable: failure.retriable,
      ...(failure.details === undefined ? {} : { details: failure.details }),
    },
  };
  return { content: text(envelope), isError: true };
}
