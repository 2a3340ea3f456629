/**
 * Separates an upstream's name from a tool or prompt name when several
 * upstreams are fronted (`<upstream>__<tool>`). Its own module, so that
 * loading a configuration does not load the MCP SDK with the relay.
 */
export const NAMESPACE_SEPARATOR = '__';
