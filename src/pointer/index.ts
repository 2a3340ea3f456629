/** mcp-envelope/pointer: RFC 6901 JSON Pointers and prov-spec evidence anchors. */
export {
  type AnchorResolution,
  type EvidenceAnchor,
  formatAnchor,
  parseAnchor,
  resolveAnchor,
} from './anchor.ts';
export {
  encodePointer,
  escapeToken,
  type PointerResolution,
  parsePointer,
  resolvePointer,
  tryResolvePointer,
  unescapeToken,
} from './json-pointer.ts';
