/** The MCP endpoint's path when the configuration names none; the HTTP surface and the configuration share it. */
export const DEFAULT_HTTP_PATH = '/mcp';
