export {
  type AnchorResolution,
  type EvidenceAnchor,
  formatAnchor,
  parseAnchor,
  resolveAnchor,
  splitLines,
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
