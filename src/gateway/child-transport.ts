import { type ChildProcess, spawn } from 'node:child_process';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/client';

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

  /** The last `max` characters of stderr seen so far. */
  tail(max = 2048): string {
    const all = this.#chunks.join('');
    return all.length > max ? all.slice(-max) : all;
  }
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
  #buffer: ReadBuffer;
  #exit: ChildExit | undefined;
  #closed = false;
  #pending: JSONRPCMessage[] = [];
  #draining = false;
  garbageLines = 0;

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(options: ChildTransportOptions) {
    this.#options = options;
    this.#buffer = new ReadBuffer({ maxBufferSize: options.maxLineBytes ?? 64 * 1024 * 1024 });
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
    try {
      this.#buffer.append(chunk);
    } catch (error) {
      this.#stderr(`[gateway] upstream stdout line too long; dropped: ${String(error)}\n`);
      return;
    }
    for (let guard = 0; guard < 100_000; guard++) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch {
        // Valid JSON that is not JSON-RPC: skip the line, keep the connection.
        this.garbageLines++;
        this.#stderr('[gateway] upstream wrote a non JSON-RPC line on stdout\n');
        continue;
      }
      if (message === null) break;
      this.#pending.push(message);
    }
    if (!this.#draining) this.#drain();
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
    this.#buffer.clear();
    // Whatever the child said before exiting is delivered before the close.
    for (let message = this.#pending.shift(); message; message = this.#pending.shift())
      this.onmessage?.(message);
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.#child?.stdin;
      if (!stdin || this.#closed || stdin.destroyed) {
        reject(new Error('upstream process is not running'));
        return;
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
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
