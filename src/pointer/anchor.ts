import { EnvelopeError } from '../errors/index.ts';
import { parsePointer, tryResolvePointer } from './json-pointer.ts';

/**
 * Evidence anchors of prov-spec: `artifact:<id>`, `artifact:<id>#json:<pointer>`
 * and `artifact:<id>#text:line:<a>[-<b>]` (1-based, inclusive line numbers).
 */
export type EvidenceAnchor =
  | { kind: 'artifact'; artifactId: string }
  | { kind: 'json'; artifactId: string; pointer: string }
  | { kind: 'text'; artifactId: string; startLine: number; endLine: number };

const PREFIX = 'artifact:';
const LINE_RANGE = /^([1-9][0-9]*)(?:-([1-9][0-9]*))?$/;

function invalid(source: string, why: string): EnvelopeError {
  return new EnvelopeError('ANCHOR_INVALID', `Evidence anchor ${JSON.stringify(source)} ${why}`, { source });
}

export function parseAnchor(source: string): EvidenceAnchor {
  if (!source.startsWith(PREFIX)) throw invalid(source, 'does not start with "artifact:"');
  const hash = source.indexOf('#');
  const artifactId = source.slice(PREFIX.length, hash < 0 ? undefined : hash);
  if (artifactId === '') throw invalid(source, 'has an empty artifact id');
  if (hash < 0) return { kind: 'artifact', artifactId };
  const fragment = source.slice(hash + 1);
  if (fragment.startsWith('json:')) {
    const pointer = fragment.slice('json:'.length);
    try {
      parsePointer(pointer);
    } catch (error) {
      throw invalid(source, `has an invalid JSON Pointer: ${(error as Error).message}`);
    }
    return { kind: 'json', artifactId, pointer };
  }
  if (fragment.startsWith('text:line:')) {
    const match = LINE_RANGE.exec(fragment.slice('text:line:'.length));
    if (!match) throw invalid(source, 'has a line range that is not <start>[-<end>] with positive integers');
    const startLine = Number(match[1]);
    const endLine = match[2] === undefined ? startLine : Number(match[2]);
    if (!Number.isSafeInteger(startLine) || !Number.isSafeInteger(endLine)) {
      throw invalid(source, 'has a line number that is too large');
    }
    if (endLine < startLine) throw invalid(source, 'has a line range that ends before it starts');
    return { kind: 'text', artifactId, startLine, endLine };
  }
  throw invalid(source, `has an unknown fragment "#${fragment}" (expected #json: or #text:line:)`);
}

export function formatAnchor(anchor: EvidenceAnchor): string {
  const base = `${PREFIX}${anchor.artifactId}`;
  switch (anchor.kind) {
    case 'artifact':
      return base;
    case 'json':
      return `${base}#json:${anchor.pointer}`;
    case 'text':
      return anchor.startLine === anchor.endLine
        ? `${base}#text:line:${anchor.startLine}`
        : `${base}#text:line:${anchor.startLine}-${anchor.endLine}`;
  }
}

/** Splits text into lines the way editors number them: a final newline ends a line, it does not start one. */
export function splitLines(text: string): string[] {
  const lines = text.split(/\r\n|\n|\r/);
  if (lines.length > 1 && lines.at(-1) === '') lines.pop();
  return lines;
}

export type AnchorResolution = { resolved: true; value: unknown } | { resolved: false; reason: string };

/**
 * Resolves an anchor against its artifact's content: a parsed JSON value for
 * `#json:`, the decoded text for `#text:line:`.
 */
export function resolveAnchor(anchor: EvidenceAnchor, content: unknown): AnchorResolution {
  switch (anchor.kind) {
    case 'artifact':
      return { resolved: true, value: content };
    case 'json': {
      const result = tryResolvePointer(content, anchor.pointer);
      return result.found
        ? { resolved: true, value: result.value }
        : {
            resolved: false,
            reason: `JSON Pointer ${anchor.pointer} does not resolve at ${result.at}: ${result.reason}`,
          };
    }
    case 'text': {
      if (typeof content !== 'string') return { resolved: false, reason: 'artifact content is not text' };
      const lines = splitLines(content);
      if (anchor.endLine > lines.length) {
        return {
          resolved: false,
          reason: `line ${anchor.endLine} is past the end of the text (${lines.length} lines)`,
        };
      }
      return { resolved: true, value: lines.slice(anchor.startLine - 1, anchor.endLine).join('\n') };
    }
  }
}
