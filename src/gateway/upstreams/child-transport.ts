import { type ChildProcess, spawn } from 'node:child_process';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { parseJSONRPCMessage, serializeMessage } from '@modelcontextprotocol/client';
import { decodeUtf8 } from '../../canonical/index.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { DEFAULT_MAX_LINE_BYTES, idAtEdges, LineReader } from '../jsonrpc/line-reader.ts';
import { errorResponse } from '../jsonrpc/messages.ts';

/** A line that opens as a response: its first top-level keys reach "result" or "error". */
const RESPONSE_OPENING =
  /^\s*\{\s*(?:"(?:jsonrpc|id)"\s*:\s*(?:"[^"]*"|-?\d+)\s*,\s*){0,2}"(?:result|error)"\s*:/;

/**
 * A bounded tail of a child's stderr: enough to explain a crash in an error
 * message, never so much that a chatty server grows the gateway's memory.
 */
export class StderrRing {
  readonly #limit: number;
  #chunks: string[] = [];
  #size = 0;

  constructor(limitBytes = 8192) {
    this.#limit = limitBytes;
  }

  push(text: string): void {
    this.#chunks.push(text);
    this.#size += text.length;
    while (this.#size > this.#limit && this.#chunks.length > 1) {
      this.#size -= this.#chunks.shift()?.length ?? 0;
    }
    if (this.#size > this.#limit && this.#chunks.length === 1) {
      const only = this.#chunks[0] ?? '';
      this.#chunks = [only.slice(-this.#limit)];
      this.#size = this.#limit;
    }
  }

  /** The last `max` characters of stderr seen so far (UTF-16 units, never half a surrogate pair). */
  tail(max = 2048): string {
    const all = this.#chunks.join('');
    return wholeCharacters(all.length > max ? all.slice(-max) : all);
  }

  /** The last `count` lines of stderr that say something (see `lastLines`). */
  lastLines(count: number): string[] {
    return lastLines(this.tail(this.#limit), count);
  }
}

/**
 * The last `count` lines of a stderr excerpt that say something, oldest
 * first: blank lines dropped, trailing whitespace trimmed. The one reading of
 * "what it said last" for error messages and the operator's board.
 */
export function lastLines(text: string, count: number): string[] {
  if (count <= 0) return [];
  const lines: string[] = [];
  for (const line of text.split('\n').reverse()) {
    const trimmed = line.trimEnd();
    if (trimmed.trim() === '') continue;
    lines.push(trimmed);
    if (lines.length === count) break;
  }
  return lines.reverse();
}

/** A cut taken from the end may start on the second half of a surrogate pair: that half alone is dropped. */
function wholeCharacters(text: string): string {
  const first = text.charCodeAt(0);
  return first >= 0xdc00 && first <= 0xdfff ? text.slice(1) : text;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ChildTransportOptions {
  command: string;
  args?: readonly string[];
  env?: Record<string, string | undefined>;
  cwd?: string;
  stderr: StderrRing;
  /** Largest stdout line kept while waiting for its newline. */
  maxLineBytes?: number;
}

/**
 * MCP over a child's stdio, like the SDK's stdio client transport, but it keeps
 * what the gateway needs to report a crash: the exit code and signal, and a
 * bounded stderr tail. Lines on stdout that are not JSON-RPC are counted and
 * noted in the stderr tail instead of failing the connection.
 */
export class ChildProcessTransport implements Transport {
  readonly #options: ChildTransportOptions;
  #child: ChildProcess | undefined;
  readonly #lines: LineReader;
  #exit: ChildExit | undefined;
  #closed = false;
  #pending: JSONRPCMessage[] = [];
  #draining = false;
  #drained: Promise<void> | undefined;
  garbageLines = 0;

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(options: ChildTransportOptions) {
    this.#options = options;
    const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#lines = new LineReader({
      maxLineBytes,
      onLine: (line) => this.#line(line),
      onOverlong: (opening, ending) => {
        const id = RESPONSE_OPENING.test(opening.toString('utf8')) ? idAtEdges(opening, ending) : undefined;
        this.#unreadable(id, `the upstream's answer is longer than ${maxLineBytes} bytes`);
      },
    });
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get exit(): ChildExit | undefined {
    return this.#exit;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.#options.command, [...(this.#options.args ?? [])], {
        env: { ...process.env, ...this.#options.env },
        cwd: this.#options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      });
      this.#child = child;
      child.once('error', (error) => {
        this.#stderr(`[spawn error] ${error.message}\n`);
        reject(error);
        this.onerror?.(error);
        this.#finish();
      });
      child.once('spawn', () => resolve());
      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
      });
      // 'close' comes after stdio drained, so every last message was delivered first.
      child.once('close', (code, signal) => {
        this.#exit ??= { code, signal };
        this.#finish();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => this.#onStdout(chunk));
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (text: string) => this.#stderr(text));
    });
  }

  #stderr(text: string): void {
    this.#options.stderr.push(text);
  }

  #onStdout(chunk: Buffer): void {
    this.#lines.push(chunk);
    if (!this.#draining) this.#drain();
  }

  #line(bytes: Buffer): void {
    let raw: string;
    let wellFormed = true;
    try {
      raw = decodeUtf8(bytes);
    } catch {
      raw = bytes.toString('utf8');
      wellFormed = false;
    }
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      this.#garbage('a line that is not JSON');
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      this.#garbage('a line that is not JSON-RPC');
      return;
    }
    if (!wellFormed) {
      // Read with replacement characters, the answer would not be the upstream's own: its call fails instead.
      const isResponse = 'id' in message && !('method' in message);
      const id = (message as { id?: string | number }).id;
      this.#unreadable(isResponse ? id : undefined, "the upstream's answer is not valid UTF-8");
      return;
    }
    this.#pending.push(message);
  }

  /** A line that cannot be delivered as written: the request it answers fails, or it is noted as garbage. */
  #unreadable(id: string | number | null | undefined, why: string): void {
    if (id === undefined || id === null) {
      this.#garbage(why);
      return;
    }
    this.#stderr(`[gateway] ${why}; its request fails\n`);
    const failure = new EnvelopeError('ADAPTER.EXECUTION.FAILED', `Tool execution failed: ${why}`);
    this.#pending.push(errorResponse(id, failure));
  }

  #garbage(what: string): void {
    this.garbageLines++;
    this.#stderr(`[gateway] upstream wrote ${what} on stdout; skipped\n`);
  }

  /**
   * Hands messages to the protocol in order. The SDK runs notification handlers
   * on a microtask but settles responses at once, so a response read in the same
   * chunk as the progress notifications before it would overtake them; after a
   * notification, the next response waits one macrotask.
   */
  #drain(): void {
    this.#draining = true;
    let notified = false;
    for (let message = this.#pending.shift(); message; message = this.#pending.shift()) {
      const isResponse = 'id' in message && !('method' in message);
      if (isResponse && notified) {
        this.#pending.unshift(message);
        setImmediate(() => this.#drain());
        return;
      }
      if (!('id' in message)) notified = true;
      this.onmessage?.(message);
    }
    this.#draining = false;
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#lines.clear();
    // Whatever the child said before exiting is delivered before the close.
    for (let message = this.#pending.shift(); message; message = this.#pending.shift())
      this.onmessage?.(message);
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#closed || stdin.destroyed) {
      return Promise.reject(new Error('upstream process is not running'));
    }
    if (stdin.write(serializeMessage(message))) return Promise.resolve();
    // One wait for the pipe to drain, shared by every send that met it full.
    this.#drained ??= new Promise<void>((resolve) => stdin.once('drain', resolve)).finally(() => {
      this.#drained = undefined;
    });
    return this.#drained;
  }

  async close(): Promise<void> {
    const child = this.#child;
    if (!child || this.#closed) return;
    child.stdin?.end();
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    // Give the server a moment to exit on EOF, then insist.
    const timer = setTimeout(() => child.kill('SIGTERM'), 500);
    const hard = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
    clearTimeout(hard);
  }

  /** Ends the child at once (used on gateway shutdown and by tests). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.#child?.kill(signal);
  }
}
