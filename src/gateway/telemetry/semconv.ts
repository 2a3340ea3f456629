/**
 * The OpenTelemetry semantic-convention names the gateway's telemetry uses.
 * The MCP and GenAI conventions are still incubating, and their package asks
 * that incubating names be copied rather than imported from its unstable entry.
 */
export const ATTR_MCP_METHOD_NAME = 'mcp.method.name';
export const ATTR_MCP_PROTOCOL_VERSION = 'mcp.protocol.version';
export const ATTR_MCP_SESSION_ID = 'mcp.session.id';
export const ATTR_JSONRPC_REQUEST_ID = 'jsonrpc.request.id';
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const ATTR_GEN_AI_PROMPT_NAME = 'gen_ai.prompt.name';
export const ATTR_MCP_RESOURCE_URI = 'mcp.resource.uri';
export const ATTR_RPC_RESPONSE_STATUS_CODE = 'rpc.response.status_code';
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_NETWORK_TRANSPORT = 'network.transport';
/** The gateway's own attributes, under its namespace. */
export const ATTR_UPSTREAM = 'mcp_envelope.upstream';
export const ATTR_OUTCOME = 'mcp_envelope.outcome';
export const ATTR_CODE = 'mcp_envelope.code';

export const METRIC_MCP_SERVER_OPERATION_DURATION = 'mcp.server.operation.duration';
/** The bucket boundaries the MCP conventions advise for operation durations, in seconds. */
export const OPERATION_DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
