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
import { idAtEdges, LineReader } from './line-reader.ts';

/** The longest line read from the client; the upstream side has the same bound. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

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
 * - longer than `maxLineBytes`: INPUT_TOO_LARGE, with the id its edges name.
 */
export class LineServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #stdin: NodeJS.ReadableStream;
  readonly #stdout: NodeJS.WritableStream;
  readonly #maxLineBytes: number;
  readonly #lines: LineReader;
  #started = false;
  #closed = false;

  constructor(options: LineServerTransportOptions = {}) {
    this.#stdin = options.stdin ?? process.stdin;
    this.#stdout = options.stdout ?? process.stdout;
    this.#maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#lines = new LineReader({
      maxLineBytes: this.#maxLineBytes,
      onLine: (line) => this.#take(line),
      onOverlong: (opening, ending) => this.#refuseOverlong(opening, ending),
    });
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
    this.#lines.clear();
    this.onclose?.();
  }

  readonly #onData = (chunk: Buffer | string): void => {
    if (this.#closed) return;
    this.#lines.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
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

  #take(bytes: Buffer): void {
    if (this.#closed) return;
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

  #refuseOverlong(opening: Buffer, ending: Buffer): void {
    const id = idAtEdges(opening, ending) ?? null;
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
