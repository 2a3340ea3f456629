/**
 * mcp-envelope: one contract for every MCP tool result. The root export
 * gathers the layers; each is also importable on its own subpath. The MCP SDK
 * integration is only on `mcp-envelope/mcp`, so that importing the root does
 * not load the SDK.
 */
export * from './canonical/index.ts';
export * from './conformance/index.ts';
export * from './envelope/index.ts';
export * from './errors/index.ts';
export * from './ids/index.ts';
export * from './pointer/index.ts';
export * from './provenance/index.ts';
export * from './schemas/index.ts';
