/**
 * Newline-delimited messages out of a byte stream, for both ends of stdio.
 * Parts of a line are kept as a list and joined once, when its newline comes,
 * so a long line costs one copy (a buffer grown by concatenation per chunk
 * copies a 10 MB line about 160 times). A line longer than the limit is not
 * kept: its opening and its end are, so whoever reads it can still say which
 * request it answered.
 */

/** The longest line either end of stdio keeps by default. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Enough of a too-long line's start and end to find its id. */
const EDGE_BYTES = 512;

export interface LineReaderOptions {
  maxLineBytes: number;
  /** A whole line, without its newline (a trailing CR is the reader's to drop). */
  onLine: (line: Buffer) => void;
  /** A line that went past the limit, by its first and last bytes. */
  onOverlong: (opening: Buffer, ending: Buffer) => void;
}

export class LineReader {
  readonly #options: LineReaderOptions;
  #parts: Buffer[] = [];
  #length = 0;
  /** The opening of a line being skipped for its length, until its newline. */
  #overlong: Buffer | undefined;
  #tail: Buffer = Buffer.alloc(0);

  constructor(options: LineReaderOptions) {
    this.#options = options;
  }

  push(chunk: Buffer): void {
    let rest = chunk;
    for (let end = rest.indexOf(10); end >= 0; end = rest.indexOf(10)) {
      this.#finish(rest.subarray(0, end));
      rest = rest.subarray(end + 1);
    }
    if (rest.length > 0) this.#keep(rest);
  }

  clear(): void {
    this.#parts = [];
    this.#length = 0;
    this.#overlong = undefined;
    this.#tail = Buffer.alloc(0);
  }

  #keep(part: Buffer): void {
    if (this.#overlong) {
      this.#tail = lastBytes([this.#tail, part]);
      return;
    }
    this.#parts.push(part);
    this.#length += part.length;
    if (this.#length > this.#options.maxLineBytes) {
      this.#overlong = firstBytes(this.#parts);
      this.#tail = lastBytes(this.#parts);
      this.#parts = [];
      this.#length = 0;
    }
  }

  #finish(last: Buffer): void {
    const overlong = this.#overlong;
    if (overlong) {
      const ending = lastBytes([this.#tail, last]);
      this.clear();
      this.#options.onOverlong(overlong, ending);
      return;
    }
    if (this.#length + last.length > this.#options.maxLineBytes) {
      const parts = [...this.#parts, last];
      this.clear();
      this.#options.onOverlong(firstBytes(parts), lastBytes(parts));
      return;
    }
    const line = this.#parts.length === 0 ? last : Buffer.concat([...this.#parts, last]);
    this.#parts = [];
    this.#length = 0;
    this.#options.onLine(line);
  }
}

/** The first EDGE_BYTES of a line held as parts, copying no more than that. */
function firstBytes(parts: readonly Buffer[]): Buffer {
  const kept: Buffer[] = [];
  let length = 0;
  for (const part of parts) {
    if (length >= EDGE_BYTES) break;
    const piece = part.subarray(0, EDGE_BYTES - length);
    kept.push(piece);
    length += piece.length;
  }
  return Buffer.concat(kept);
}

/** The last EDGE_BYTES of a line held as parts, copying no more than that. */
function lastBytes(parts: readonly Buffer[]): Buffer {
  const kept: Buffer[] = [];
  let length = 0;
  for (let index = parts.length - 1; index >= 0 && length < EDGE_BYTES; index--) {
    const part = parts[index] as Buffer;
    const piece = part.subarray(Math.max(0, part.length - (EDGE_BYTES - length)));
    kept.unshift(piece);
    length += piece.length;
  }
  return Buffer.concat(kept);
}

const ID_VALUE = String.raw`(-?\d+|"(?:[^"\\]|\\.){0,200}")`;
const ID_AT_START = new RegExp(
  `${String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*`}${ID_VALUE}${String.raw`\s*[,}]`}`,
);
const ID_AT_END = new RegExp(`${String.raw`[,{]\s*"id"\s*:\s*`}${ID_VALUE}${String.raw`\s*\}\s*\r?$`}`);

/**
 * The id of the outermost object of a line too long to parse, from its edges:
 * `{"jsonrpc":"2.0","id":…` or `{"id":…` at the start, or `"id":…}` closing
 * the line (how the SDK writes responses). Where these stand no nested value
 * can have begun, or all have closed, so the id found is the message's own.
 */
export function idAtEdges(opening: Buffer, ending: Buffer): string | number | undefined {
  const found =
    ID_AT_START.exec(opening.toString('utf8'))?.[1] ?? ID_AT_END.exec(ending.toString('utf8'))?.[1];
  if (found === undefined) return undefined;
  try {
    return JSON.parse(found) as string | number;
  } catch {
    return undefined;
  }
}
