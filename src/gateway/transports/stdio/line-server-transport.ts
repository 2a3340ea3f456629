import {
  type JSONRPCMessage,
  parseJSONRPCMessage,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../../errors/index.ts';
import { readInbound } from '../../jsonrpc/inbound.ts';
import { DEFAULT_MAX_LINE_BYTES, idAtEdges, LineReader } from '../../jsonrpc/line-reader.ts';
import { errorResponse, requestIdOf, withCanonicalCode } from '../../jsonrpc/messages.ts';
import { admitOutgoing, droppedReport, MAX_QUEUED_BYTES } from '../../relay/downstream.ts';

export interface LineServerTransportOptions {
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
  maxLineBytes?: number;
  /** Where the gateway tells the operator about its output (never stdout); stderr by default. */
  report?: (message: string) => void;
}

function reportOnStderr(message: string): void {
  process.stderr.write(`gateway: ${message}\n`);
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
 *
 * A client that stops reading stdout cannot make it buffer without limit
 * (`admitOutgoing`): past `ADVISORY_QUEUED_BYTES` waiting, progress, log
 * messages and list changes are dropped (counted, and reported once the client
 * reads again); past `MAX_QUEUED_BYTES`, an answer or request finds the
 * connection unusable, and the gateway closes its stdio side.
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
  readonly #report: (message: string) => void;
  /** Notifications dropped since the output last drained. */
  #dropped = 0;

  constructor(options: LineServerTransportOptions = {}) {
    this.#stdin = options.stdin ?? process.stdin;
    this.#stdout = options.stdout ?? process.stdout;
    this.#maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#report = options.report ?? reportOnStderr;
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

  send(outgoing: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('The stdio connection is closed'));
    const message = withCanonicalCode(outgoing);
    const queued = (this.#stdout as { writableLength?: number }).writableLength ?? 0;
    const admitted = admitOutgoing(queued, message);
    if (admitted === 'drop') {
      if (this.#dropped++ === 0) this.#stdout.once('drain', this.#reportDropped);
      return Promise.resolve();
    }
    if (admitted === 'close') return this.#overflow();
    if (this.#stdout.write(serializeMessage(message))) return Promise.resolve();
    // A notification does not wait for the pipe: its bytes are counted above, and waiting
    // would queue every later one behind it in the relay, where nothing bounds them.
    if (!('id' in message)) return Promise.resolve();
    return this.#drain();
  }

  readonly #reportDropped = (): void => {
    if (this.#dropped === 0) return;
    this.#report(droppedReport(this.#dropped, 'stdout'));
    this.#dropped = 0;
  };

  /** The client has left more than the bound unread: the connection cannot carry answers any more. */
  #overflow(): Promise<void> {
    const error = new Error(
      `the client is not reading stdout: more than ${MAX_QUEUED_BYTES / (1024 * 1024)} MiB are waiting; closing the stdio connection`,
    );
    this.#report(error.message);
    void this.close();
    // The end of input is what ends the stdio gateway; the process exits once stdout drains.
    (this.#stdin as { destroy?: () => void }).destroy?.();
    return Promise.reject(error);
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
    this.#stdout.off('drain', this.#reportDropped);
    this.#reportDropped();
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
    if (Array.isArray(value)) {
      // MCP took JSON-RPC batching out in 2025-06-18, and the stdio transports never had it.
      const error = new EnvelopeError('INVALID_INPUT', 'Invalid Request: batches are not served on stdio');
      this.#send(errorResponse(null, error, -32600));
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      const error = new EnvelopeError(
        'INVALID_INPUT',
        'Invalid Request: the line is not a JSON-RPC 2.0 message',
      );
      this.#send(errorResponse(requestIdOf(value) ?? null, error, -32600));
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
