import {
  type JSONRPCMessage,
  parseJSONRPCMessage,
  type RequestId,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/server';
import { decodeUtf8 } from '../canonical/index.ts';
import { toJsonRpcError } from '../errors/index.ts';
import { errorResponse, requestIdOf } from './downstream.ts';
import { nestingRefusal } from './inbound-depth.ts';

/** The longest line read from the client; the upstream side has the same bound. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Enough of a line's start to find its id when the line is too long to keep. */
const ID_PREFIX_BYTES = 512;

/**
 * `{"jsonrpc":"2.0","id":…` or `{"id":…`: the id of the outermost object, read
 * off the start of a line that is too long to parse. Only these two openings
 * are read, where no nested value can have begun yet.
 */
const LEADING_ID =
  /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")\s*[,}]/;

/** The first ID_PREFIX_BYTES of a line held as parts, copying no more than that. */
function opening(parts: readonly Buffer[]): Buffer {
  const kept: Buffer[] = [];
  let length = 0;
  for (const part of parts) {
    if (length >= ID_PREFIX_BYTES) break;
    kept.push(part.subarray(0, ID_PREFIX_BYTES - length));
    length += kept.at(-1)?.length ?? 0;
  }
  return Buffer.concat(kept);
}

export interface LineServerTransportOptions {
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
  maxLineBytes?: number;
}

/**
 * The gateway's own end of stdio: newline-delimited JSON-RPC on this process's
 * stdin and stdout. Where the SDK's stdio transport skips a line that is not
 * JSON and closes the connection on a line over its buffer size, this answers
 * such lines as the HTTP side answers such bodies, and reads on:
 * - not UTF-8, or not JSON: -32700 with id null (INPUT_INVALID_UTF8, JSON_MALFORMED);
 * - JSON that is not a JSON-RPC message: -32600, with its id when it has one;
 * - nested past the canonical limit: JSON_TOO_DEEP, with its id;
 * - longer than `maxLineBytes`: INPUT_TOO_LARGE, with the id its opening names.
 * Lines are gathered as a list of chunks, so a long line costs one copy.
 */
export class LineServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #stdin: NodeJS.ReadableStream;
  readonly #stdout: NodeJS.WritableStream;
  readonly #maxLineBytes: number;
  #chunks: Buffer[] = [];
  #length = 0;
  /** The start of a line being skipped for its length, until its newline. */
  #overlong: Buffer | undefined;
  #started = false;
  #closed = false;

  constructor(options: LineServerTransportOptions = {}) {
    this.#stdin = options.stdin ?? process.stdin;
    this.#stdout = options.stdout ?? process.stdout;
    this.#maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('LineServerTransport already started');
    this.#started = true;
    this.#stdin.on('data', this.#onData);
    this.#stdin.on('error', this.#onInputError);
    this.#stdin.on('end', this.#onEnd);
    this.#stdin.on('close', this.#onEnd);
    this.#stdout.on('error', this.#onOutputError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('The stdio connection is closed'));
    return new Promise((resolve, reject) => {
      const failed = (error: Error) => {
        this.#stdout.off('drain', drained);
        reject(error);
      };
      const drained = () => {
        this.#stdout.off('error', failed);
        resolve();
      };
      if (this.#stdout.write(serializeMessage(message))) {
        resolve();
        return;
      }
      this.#stdout.once('drain', drained);
      this.#stdout.once('error', failed);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.off('data', this.#onData);
    this.#stdin.off('error', this.#onInputError);
    this.#stdin.off('end', this.#onEnd);
    this.#stdin.off('close', this.#onEnd);
    this.#stdin.pause();
    this.#chunks = [];
    this.#overlong = undefined;
    this.onclose?.();
  }

  readonly #onData = (chunk: Buffer | string): void => {
    let rest = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (let end = rest.indexOf(10); end >= 0 && !this.#closed; end = rest.indexOf(10)) {
      this.#take(rest.subarray(0, end));
      rest = rest.subarray(end + 1);
    }
    if (rest.length > 0 && !this.#closed) this.#keep(rest);
  };

  readonly #onInputError = (error: Error): void => {
    this.onerror?.(error);
  };

  readonly #onEnd = (): void => {
    void this.close();
  };

  readonly #onOutputError = (error: Error): void => {
    if (this.#closed) return;
    this.onerror?.(error);
    void this.close();
  };

  /** Keeps part of a line whose newline has not arrived yet. */
  #keep(part: Buffer): void {
    if (this.#overlong) return;
    this.#chunks.push(part);
    this.#length += part.length;
    if (this.#length > this.#maxLineBytes) {
      this.#overlong = opening(this.#chunks);
      this.#chunks = [];
      this.#length = 0;
    }
  }

  /** The last part of a line arrived: the whole line is read, or answered for its length. */
  #take(last: Buffer): void {
    const overlong = this.#overlong;
    if (overlong) {
      this.#overlong = undefined;
      this.#refuseOverlong(overlong);
      return;
    }
    if (this.#length + last.length > this.#maxLineBytes) {
      const start = opening([...this.#chunks, last]);
      this.#chunks = [];
      this.#length = 0;
      this.#refuseOverlong(start);
      return;
    }
    const bytes = this.#chunks.length === 0 ? last : Buffer.concat([...this.#chunks, last]);
    this.#chunks = [];
    this.#length = 0;
    let text: string;
    try {
      // Strict: a malformed byte is refused, not turned into U+FFFD behind the client's back.
      text = decodeUtf8(bytes);
    } catch {
      this.#answer(null, -32700, 'INPUT_INVALID_UTF8', 'Parse error: the line is not valid UTF-8');
      return;
    }
    this.#line(text);
  }

  #line(text: string): void {
    const line = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.#answer(null, -32700, 'JSON_MALFORMED', 'Parse error: the line is not valid JSON');
      return;
    }
    const tooDeep = nestingRefusal(value);
    if (tooDeep) {
      this.#send(errorResponse(requestIdOf(value) ?? null, tooDeep));
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      const id = (value as { id?: unknown } | null)?.id;
      const known = typeof id === 'string' || typeof id === 'number' ? id : null;
      this.#answer(known, -32600, undefined, 'Invalid Request: the line is not a JSON-RPC 2.0 message');
      return;
    }
    this.onmessage?.(message);
  }

  #refuseOverlong(start: Buffer): void {
    const found = LEADING_ID.exec(start.toString('utf8'))?.[1];
    let id: RequestId | null = null;
    if (found !== undefined) {
      try {
        id = JSON.parse(found) as RequestId;
      } catch {
        id = null;
      }
    }
    this.#answer(
      id,
      undefined,
      'INPUT_TOO_LARGE',
      `Request too large: a line exceeds ${this.#maxLineBytes} bytes`,
    );
  }

  #answer(
    id: RequestId | null,
    code: number | undefined,
    canonical: string | undefined,
    message: string,
  ): void {
    const rpc = canonical ? toJsonRpcError(canonical, message) : undefined;
    const error = {
      code: code ?? rpc?.code ?? -32600,
      message,
      ...(rpc?.data === undefined ? {} : { data: rpc.data }),
    };
    // The SDK's response type wants an id; JSON-RPC answers an unreadable request with null.
    this.#send({ jsonrpc: '2.0', id, error } as unknown as JSONRPCMessage);
  }

  #send(message: JSONRPCMessage): void {
    this.send(message).catch((failure: unknown) => {
      this.onerror?.(failure instanceof Error ? failure : new Error(String(failure)));
    });
  }
}
