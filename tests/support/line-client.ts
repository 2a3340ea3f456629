import { type ChildProcess, spawn } from 'node:child_process';
import { BIN, NODE, ROOT, stopChild } from '../gateway/processes.ts';

/**
 * A client of `bin/mcp-envelope proxy` over stdio that writes raw lines (any
 * bytes) and keeps every line the gateway answers, raw and parsed, so tests
 * can count answers per id instead of trusting a client library to.
 */

export interface Received {
  raw: string;
  message: { id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } };
}

export class LineClient {
  readonly received: Received[] = [];
  private buffered = '';
  private waiters: (() => void)[] = [];
  private stderrText = '';

  readonly child: ChildProcess;

  private constructor(child: ChildProcess) {
    this.child = child;
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      this.buffered += chunk;
      let end = this.buffered.indexOf('\n');
      while (end >= 0) {
        const raw = this.buffered.slice(0, end);
        this.buffered = this.buffered.slice(end + 1);
        if (raw.trim() !== '') this.received.push({ raw, message: JSON.parse(raw) as Received['message'] });
        end = this.buffered.indexOf('\n');
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      // Keeps the tail only: a flood of upstream stderr must not grow the test's memory.
      this.stderrText = (this.stderrText + chunk).slice(-64 * 1024);
    });
    child.once('exit', () => {
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** `proxy [flags] -- node <fixture> [fixtureArgs]`, initialized as a 2025-era client. */
  static async start(
    flags: readonly string[],
    fixture: string,
    fixtureArgs: readonly string[] = [],
  ): Promise<LineClient> {
    const child = spawn(NODE, [BIN, 'proxy', ...flags, '--', NODE, fixture, ...fixtureArgs], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const client = new LineClient(child);
    client.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'lines', version: '1' },
        },
      }),
    );
    await client.answerTo('init', 20_000);
    client.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
    return client;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  stderr(): string {
    return this.stderrText;
  }

  /** Writes one line: text is written as UTF-8, bytes as they are. */
  send(line: string | Uint8Array): void {
    this.child.stdin?.write(
      typeof line === 'string' ? `${line}\n` : Buffer.concat([line, Buffer.from('\n')]),
    );
  }

  /** Every answer received so far whose id is `id` (compared as parsed JSON). */
  answersTo(id: unknown): Received[] {
    const key = JSON.stringify(id);
    return this.received.filter((item) => JSON.stringify(item.message.id) === key);
  }

  /** Resolves once `done()` holds; rejects when the gateway exits first or after `ms`. */
  until(done: () => boolean, ms: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no ${what} within ${ms} ms; stderr: ${this.stderrText}`)),
        ms,
      );
      const check = () => {
        if (done()) {
          clearTimeout(timer);
          resolve();
        } else if (!this.alive) {
          clearTimeout(timer);
          reject(new Error(`gateway exited (${this.child.exitCode}) before ${what}: ${this.stderrText}`));
        } else this.waiters.push(check);
      };
      check();
    });
  }

  /** The first answer to `id`, once it arrives. */
  async answerTo(id: unknown, ms = 10_000): Promise<Received> {
    await this.until(() => this.answersTo(id).length > 0, ms, `answer to ${JSON.stringify(id)}`);
    return this.answersTo(id)[0] as Received;
  }

  stop(): Promise<void> {
    this.child.stdin?.end();
    return stopChild(this.child);
  }
}
