import type { IssueEntry } from '../../envelope/model.ts';
import { type EnvelopeError, toJsonRpcError } from '../../errors/index.ts';
import type { SchemaIssue } from '../../schemas/index.ts';

/** The error and warning entries the pipeline writes itself; each kind is built here only. */

export const INVALID_PARAMS = 'Invalid params';

const INVALID_INPUT_RPC = toJsonRpcError('INVALID_INPUT').code;
const INVALID_OUTPUT_RPC = toJsonRpcError('INVALID_OUTPUT').code;

export function entry(code: string, message: string, details?: IssueEntry['details']): IssueEntry {
  return details && Object.keys(details).length > 0 ? { code, message, details } : { code, message };
}

/** The first issue, its pointer under `prefix` (the member the validated value sits in). */
export function issueSummary(issues: readonly SchemaIssue[], prefix = ''): { pointer: string; text: string } {
  const first = issues[0];
  const pointer = `${prefix}${first?.pointer ?? ''}`;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return { pointer, text: `${pointer || '/'} ${first?.message ?? 'does not match'}${more}` };
}

/**
 * INVALID_INPUT: as the call's error it carries the JSON-RPC code the validation
 * spec gives it; as a warning (validation `warn`) only the pointer.
 */
export function invalidInputEntry(text: string, pointer: string, as: 'error' | 'warning'): IssueEntry {
  return as === 'error'
    ? entry('INVALID_INPUT', `${INVALID_PARAMS}: ${text}`, { pointer, jsonrpc_code: INVALID_INPUT_RPC })
    : entry('INVALID_INPUT', `${INVALID_PARAMS}: ${text}`, { pointer });
}

/**
 * INVALID_OUTPUT: `toolRan` when it is the call's error (the tool ran, its output
 * is kept); a warning (validation `warn`) does not say so.
 */
export function invalidOutputEntry(text: string, pointer: string, toolRan: boolean): IssueEntry {
  return entry('INVALID_OUTPUT', `Invalid tool output: ${text}`, {
    pointer,
    jsonrpc_code: INVALID_OUTPUT_RPC,
    ...(toolRan ? { tool_ran: true } : {}),
  });
}

/**
 * INTERNAL_ERROR for a tool whose schema cannot be compiled (the server's defect),
 * naming the tool, the schema and why (`reason`, and the `draft` it was read in).
 */
export function toolSchemaEntry(
  tool: string,
  which: 'inputSchema' | 'outputSchema',
  error: EnvelopeError,
): IssueEntry {
  const { reason, draft } = error.details ?? {};
  return entry('INTERNAL_ERROR', `Tool ${tool} has an ${which} that does not compile: ${error.message}`, {
    tool,
    schema: which,
    ...(typeof reason === 'string' ? { reason } : {}),
    ...(typeof draft === 'string' ? { draft } : {}),
  });
}
