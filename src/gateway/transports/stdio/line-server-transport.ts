import {
  type JSONRPCMessage,
  parseJSONRPCMessage,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../../errors/index.ts';
import { readInbound } from '../../jsonrpc/inbound.ts';
import { DEFAULT_MAX_LINE_BYTES, idAtEdges, LineReader } from '../../jsonrpc/line-reader.ts';
import { errorResponse, requestIdOf, rpcErrorMessage } from '../../jsonrpc/messages.ts';

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
  #drained: Promise<void> | undefined;

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
    if (this.#stdout.write(serializeMessage(message))) return Promise.resolve();
    return this.#drain();
  }

  /** One wait for the output to drain, shared by every send that met a full pipe. */
  #drain(): Promise<void> {
    this.#drained ??= new Promise<void>((resolve, reject) => {
      const failed = (error: Error) => {
        this.#stdout.off('drain', drained);
        reject(error);
      };
      const drained = () => {
        this.#stdout.off('error', failed);
        resolve();
      };
      this.#stdout.once('drain', drained);
      this.#stdout.once('error', failed);
    }).finally(() => {
      this.#drained = undefined;
    });
    return this.#drained;
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
    const inbound = readInbound(bytes, 'line');
    if (inbound.kind === 'blank') return;
    if (inbound.kind === 'refused') {
      this.#send(errorResponse(inbound.id, inbound.error, inbound.jsonRpcCode));
      return;
    }
    const { value } = inbound;
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      const error = { code: -32600, message: 'Invalid Request: the line is not a JSON-RPC 2.0 message' };
      this.#send(rpcErrorMessage(requestIdOf(value) ?? null, error));
      return;
    }
    this.onmessage?.(message);
  }

  #refuseOverlong(opening: Buffer, ending: Buffer): void {
    const tooLarge = new EnvelopeError(
      'INPUT_TOO_LARGE',
      `Request too large: a line exceeds ${this.#maxLineBytes} bytes`,
    );
    // JSON-RPC answers a request whose id cannot be read with id null.
    this.#send(errorResponse(idAtEdges(opening, ending) ?? null, tooLarge));
  }

  #send(message: JSONRPCMessage): void {
    this.send(message).catch((failure: unknown) => {
      this.onerror?.(failure instanceof Error ? failure : new Error(String(failure)));
    });
  }
}
