import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { parseJSONRPCMessage, serializeMessage } from '@modelcontextprotocol/client';
import { decodeUtf8 } from '../../canonical/index.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { DEFAULT_MAX_LINE_BYTES, idAtEdges, LineReader } from '../jsonrpc/line-reader.ts';
import { errorResponse } from '../jsonrpc/messages.ts';
import type { Reservation, ResultBudget } from './result-budget.ts';

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
  #dropped = false;

  constructor(limitBytes = 8192) {
    this.#limit = limitBytes;
  }

  get limitBytes(): number {
    return this.#limit;
  }

  /** Whether earlier text was let go: the first line held may then be the end of a longer one. */
  get dropped(): boolean {
    return this.#dropped;
  }

  push(text: string): void {
    this.#chunks.push(text);
    this.#size += text.length;
    while (this.#size > this.#limit && this.#chunks.length > 1) {
      this.#size -= this.#chunks.shift()?.length ?? 0;
      this.#dropped = true;
    }
    if (this.#size > this.#limit && this.#chunks.length === 1) {
      const only = this.#chunks[0] ?? '';
      this.#chunks = [only.slice(-this.#limit)];
      this.#size = this.#limit;
      this.#dropped = true;
    }
  }

  /** The last `max` characters of stderr seen so far (UTF-16 units, never half a surrogate pair). */
  tail(max = 2048): string {
    const all = this.#chunks.join('');
    return wholeCharacters(all.length > max ? all.slice(-max) : all);
  }

  /** All the ring holds. */
  text(): string {
    return this.tail(this.#limit);
  }

  /** The last `count` lines of stderr that say something (see `lastLines`). */
  lastLines(count: number): string[] {
    return lastLines(this.text(), count);
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

/** Words a line uses when it names why a program failed. */
const CAUSE =
  /error|cannot|can't|could not|not found|no such|denied|refused|ENOENT|EACCES|EADDRINUSE|fatal|panic/i;
/** A stack frame (`at f (file:1:2)`, Python's `File "…", line 3`) says where, not why. */
const FRAME = /^\s*(?:at\s|File\s")/;
/** How many of the lines shown may be chosen for naming a cause; the rest are the last lines. */
const MAX_CAUSE_LINES = 3;
/** Longest line shown; a longer one is cut. */
const MAX_LINE_CHARS = 300;

/**
 * At most `count` lines of a stderr excerpt that say why the program failed,
 * in the order written: the latest lines that name a cause (an error, a file
 * not found, a permission denied; never a stack frame), then the last lines.
 * The last lines alone miss the cause whenever a stack follows it, as in
 * Node's `Error: Cannot find module 'x'`. Latest, because the excerpt may
 * hold what earlier runs of the same upstream wrote.
 */
export function causeLines(text: string, count: number): string[] {
  if (count <= 0) return [];
  const lines = text
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '');
  const picked = new Set<number>();
  for (let index = lines.length - 1; index >= 0; index--) {
    if (picked.size >= Math.min(MAX_CAUSE_LINES, count)) break;
    const line = lines[index] as string;
    if (CAUSE.test(line) && !FRAME.test(line)) picked.add(index);
  }
  for (let index = lines.length - 1; index >= 0 && picked.size < count; index--) picked.add(index);
  return [...picked]
    .sort((a, b) => a - b)
    .map((index) => {
      const line = lines[index] as string;
      return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
    });
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

/**
 * What every upstream inherits from the gateway: what a program needs to run,
 * find its tools, write temporary files, speak the operator's language and
 * trust the certificate authorities the operator trusts; nothing that
 * authenticates. The gateway's own secrets (bearer tokens, the
 * variables behind `tokenEnv` and `headersFromEnv`, `MCP_ENVELOPE_*`) are
 * therefore never handed on; an upstream that needs a variable gets it from
 * its configuration's `env`. NODE_OPTIONS is left out on purpose: it carries
 * the gateway's own runtime flags (`--inspect` would fight over the debug port,
 * `--require`/`--import` would preload the gateway's hooks into every Node
 * upstream).
 */
export const SAFE_ENVIRONMENT: { readonly posix: readonly string[]; readonly windows: readonly string[] } = {
  posix: [
    'PATH',
    'HOME',
    'USER',
    'LOGNAME',
    'SHELL',
    'TERM',
    'LANG',
    'LANGUAGE',
    'TZ',
    'TMPDIR',
    'TEMP',
    'TMP',
    // Which certificate authorities TLS trusts: behind a corporate proxy, without them no HTTPS call succeeds.
    'NODE_EXTRA_CA_CERTS',
    'SSL_CERT_FILE',
    'SSL_CERT_DIR',
  ],
  windows: [
    'PATH',
    'PATHEXT',
    'SYSTEMROOT',
    'SYSTEMDRIVE',
    'WINDIR',
    'COMSPEC',
    'TEMP',
    'TMP',
    'USERNAME',
    'USERPROFILE',
    'HOMEDRIVE',
    'HOMEPATH',
    'APPDATA',
    'LOCALAPPDATA',
    'PROGRAMDATA',
    'PROGRAMFILES',
    'PROGRAMFILES(X86)',
    'PROGRAMW6432',
    'PROCESSOR_ARCHITECTURE',
    'NUMBER_OF_PROCESSORS',
    'OS',
    'LANG',
    'TZ',
    'NODE_EXTRA_CA_CERTS',
    'SSL_CERT_FILE',
    'SSL_CERT_DIR',
  ],
};

/**
 * An upstream's whole environment: the safe base read from `parent` (the
 * locale's `LC_*` too), then the configured variables, which win. A value
 * opening with `()` is an exported shell function and is not inherited.
 */
export function upstreamEnvironment(
  configured: Readonly<Record<string, string | undefined>> = {},
  parent: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): Record<string, string> {
  const windows = platform === 'win32';
  const names = new Set(windows ? SAFE_ENVIRONMENT.windows : SAFE_ENVIRONMENT.posix);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined || value.startsWith('()')) continue;
    // Windows names are case-insensitive (`Path`, `SystemRoot`).
    const key = windows ? name.toUpperCase() : name;
    if (names.has(key) || (!windows && /^LC_[A-Z_]+$/.test(name))) env[name] = value;
  }
  for (const [name, value] of Object.entries(configured)) if (value !== undefined) env[name] = value;
  return env;
}

/** How long a server gets to exit on its own once stdin is closed, before its group gets SIGTERM. */
export const EOF_GRACE_MS = 500;
/** How long a process group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2000;
/** How long pipes may stay open after the group is gone (held by a process that left it) before they are let go. */
export const PIPE_GRACE_MS = 1000;
/** How often a group that cannot be waited on (its members are not the gateway's children) is looked at. */
const GROUP_POLL_MS = 25;

/** On POSIX an upstream leads its own process group, so a wrapper and whatever it started end together. */
const GROUPS = process.platform !== 'win32';

/**
 * Whether a process group has a member that is not a zombie. Its orphans are
 * reparented to init, and an init that does not reap (some containers' first
 * process) would keep their zombies in the group for good.
 */
function groupHasLiving(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    // EPERM: a member is there but not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}

/** The upstreams whose processes may still be running, for the gateway's last word on exit. */
const running = new Set<ChildProcessTransport>();
let exitHookInstalled = false;

/**
 * SIGKILLs every upstream process group still running. Synchronous, so it also
 * runs in the process's 'exit' event: whatever way the gateway ends (short of
 * SIGKILL), its upstreams do not outlive it.
 */
export function killAllUpstreams(): void {
  for (const transport of running) transport.kill('SIGKILL');
}

export interface ChildTransportOptions {
  command: string;
  args?: readonly string[];
  /** The configured variables, over the safe base (see `upstreamEnvironment`). */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Where the child's stderr goes: the upstream's ring, or a gate in front of it. */
  stderr: Pick<StderrRing, 'push'>;
  /** Largest stdout line kept while waiting for its newline. */
  maxLineBytes?: number;
  /** Where the bytes read from stdout are held until their message was handed on (result-budget.ts). */
  budget?: ResultBudget;
}

/** A message read, waiting its turn, with the budget it holds until it was handed on. */
interface Read {
  message: JSONRPCMessage;
  held?: Reservation;
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
  #pending: Read[] = [];
  /** The bytes of the line being read, held as they arrive. */
  #open: Reservation | undefined;
  #openBytes = 0;
  /** Why the line being read does not fit the budget: its bytes are skipped and its request answered with this. */
  #refused: EnvelopeError | undefined;
  readonly #maxLineBytes: number;
  #draining = false;
  #drained: Promise<void> | undefined;
  /** Settles once the leader exited, the rest of its group was ended and the connection ended. */
  readonly #gone = Promise.withResolvers<void>();
  garbageLines = 0;

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(options: ChildTransportOptions) {
    this.#options = options;
    const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#maxLineBytes = maxLineBytes;
    const transport = this;
    this.#lines = new LineReader({
      // A line refused by the budget is read as one too long: only its edges are kept, to find its id.
      get maxLineBytes() {
        return transport.#refused ? 0 : maxLineBytes;
      },
      onLine: (line) => this.#line(line),
      onOverlong: (opening, ending) => {
        const refused = this.#refused;
        this.#refused = undefined;
        this.#letOpenGo();
        const id = RESPONSE_OPENING.test(opening.toString('utf8')) ? idAtEdges(opening, ending) : undefined;
        if (refused) this.#exhausted(id, refused);
        else this.#unreadable(id, `the upstream's answer is longer than ${maxLineBytes} bytes`);
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
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once('exit', killAllUpstreams);
    }
    return new Promise((resolve, reject) => {
      const child = spawn(this.#options.command, [...(this.#options.args ?? [])], {
        env: upstreamEnvironment(this.#options.env),
        cwd: this.#options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: GROUPS,
        windowsHide: true,
      });
      this.#child = child;
      running.add(this);
      child.once('error', (error) => {
        this.#stderr(`[spawn error] ${error.message}\n`);
        reject(error);
        this.onerror?.(error);
        running.delete(this);
        this.#finish();
        this.#gone.resolve();
      });
      child.once('spawn', () => resolve());
      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        void this.#endGroup();
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

  /**
   * The leader exited: what it started (a wrapper's server, a grandchild) goes
   * with it, TERM then KILL, and pipes such a process kept open are let go, so
   * the end is seen even when something escaped the group.
   */
  async #endGroup(): Promise<void> {
    if (this.#signal('SIGTERM') && !(await this.#within(KILL_GRACE_MS, () => !this.#groupAlive()))) {
      this.#signal('SIGKILL');
      await this.#within(PIPE_GRACE_MS, () => !this.#groupAlive());
    }
    if (!(await this.#within(PIPE_GRACE_MS, () => this.#closed))) this.#letGo();
    running.delete(this);
    this.#gone.resolve();
  }

  /** Signals the whole group (the process alone on Windows); false when nothing was there to signal. */
  #signal(signal: NodeJS.Signals): boolean {
    const child = this.#child;
    if (child?.pid === undefined) return false;
    try {
      if (GROUPS) process.kill(-child.pid, signal);
      else if (!child.kill(signal)) return false;
      return true;
    } catch {
      return false;
    }
  }

  #groupAlive(): boolean {
    const pid = this.#child?.pid;
    if (pid === undefined) return false;
    return GROUPS ? groupHasLiving(pid) : this.#exit === undefined;
  }

  /** Whether `done` holds within `ms`, looked at every GROUP_POLL_MS. */
  #within(ms: number, done: () => boolean): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const deadline = Date.now() + ms;
      const timer = setInterval(() => {
        if (done()) resolve(true);
        else if (Date.now() >= deadline) resolve(false);
        else return;
        clearInterval(timer);
      }, GROUP_POLL_MS);
    });
  }

  /** Stops waiting for pipes a process outside the group holds: the connection ends here. */
  #letGo(): void {
    const child = this.#child;
    child?.stdin?.destroy();
    child?.stdout?.destroy();
    child?.stderr?.destroy();
    this.#finish();
  }

  #stderr(text: string): void {
    this.#options.stderr.push(text);
  }

  #onStdout(chunk: Buffer): void {
    const budget = this.#options.budget;
    const last = chunk.lastIndexOf(10);
    if (budget) this.#hold(budget, chunk);
    this.#lines.push(chunk);
    this.#openBytes = last < 0 ? this.#openBytes + chunk.length : chunk.length - last - 1;
    if (!this.#draining) this.#drain();
  }

  /**
   * Holds the bytes the line being read reaches with this chunk, before the
   * reader keeps them: a line that does not fit is refused while it arrives,
   * not once it was all read. (Lines that begin and end inside the chunk are
   * held when they are read whole, in #line.)
   */
  #hold(budget: ResultBudget, chunk: Buffer): void {
    if (this.#refused) return;
    const first = chunk.indexOf(10);
    const bytes = this.#openBytes + (first < 0 ? chunk.length : first);
    // Past the line limit the reader keeps only the line's edges: nothing to hold.
    if (bytes > this.#maxLineBytes) {
      this.#letOpenGo();
      return;
    }
    try {
      if (this.#open) this.#open.resize(bytes);
      else this.#open = budget.reserve(bytes);
    } catch (error) {
      this.#refused = error as EnvelopeError;
      this.#letOpenGo();
    }
  }

  #letOpenGo(): void {
    this.#open?.release();
    this.#open = undefined;
  }

  #line(bytes: Buffer): void {
    // The line that was being read holds its bytes already; one read whole from a chunk takes its own now.
    let held = this.#open;
    this.#open = undefined;
    const budget = this.#options.budget;
    if (held) held.resize(Math.min(held.bytes, bytes.length));
    else if (budget && bytes.length > 0) {
      try {
        held = budget.reserve(bytes.length);
      } catch (error) {
        const opening = bytes.subarray(0, 512);
        const id = RESPONSE_OPENING.test(opening.toString('utf8'))
          ? idAtEdges(opening, bytes.subarray(-512))
          : undefined;
        this.#exhausted(id, error as EnvelopeError);
        return;
      }
    }
    if (!this.#read(bytes, held)) held?.release();
  }

  /** Reads one line into #pending; whether the message (and so what it holds) was kept. */
  #read(bytes: Buffer, held: Reservation | undefined): boolean {
    let raw: string;
    let wellFormed = true;
    try {
      raw = decodeUtf8(bytes);
    } catch {
      raw = bytes.toString('utf8');
      wellFormed = false;
    }
    if (raw.trim() === '') return false;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      this.#garbage('a line that is not JSON');
      return false;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      this.#garbage('a line that is not JSON-RPC');
      return false;
    }
    if (!wellFormed) {
      // Read with replacement characters, the answer would not be the upstream's own: its call fails instead.
      const isResponse = 'id' in message && !('method' in message);
      const id = (message as { id?: string | number }).id;
      this.#unreadable(isResponse ? id : undefined, "the upstream's answer is not valid UTF-8");
      return false;
    }
    this.#pending.push({ message, ...(held ? { held } : {}) });
    return true;
  }

  /** A line that cannot be delivered as written: the request it answers fails, or it is noted as garbage. */
  #unreadable(id: string | number | null | undefined, why: string): void {
    if (id === undefined || id === null) {
      this.#garbage(why);
      return;
    }
    this.#stderr(`[gateway] ${why}; its request fails\n`);
    const failure = new EnvelopeError('ADAPTER.EXECUTION.FAILED', `Tool execution failed: ${why}`);
    this.#pending.push({ message: errorResponse(id, failure) });
  }

  /** A line the budget had no room for: the request it answers gets RESOURCE_EXHAUSTED, retriable. */
  #exhausted(id: string | number | null | undefined, refusal: EnvelopeError): void {
    if (id === undefined || id === null) {
      this.#garbage(`a line larger than the result budget had room for (${refusal.message})`);
      return;
    }
    this.#stderr(`[gateway] an answer did not fit the result budget; its request fails\n`);
    this.#pending.push({ message: errorResponse(id, refusal) });
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
    for (let read = this.#pending.shift(); read; read = this.#pending.shift()) {
      const { message } = read;
      const isResponse = 'id' in message && !('method' in message);
      if (isResponse && notified) {
        this.#pending.unshift(read);
        setImmediate(() => this.#drain());
        return;
      }
      if (!('id' in message)) notified = true;
      this.#deliver(read);
    }
    this.#draining = false;
  }

  /**
   * Hands a message on, and lets its bytes go a turn of the event loop later:
   * the SDK's settling of the request, the relay's work on the answer and its
   * re-serialization into the reply all run in the promise jobs chained to
   * this, before that turn (an awaited timer or I/O in between, as enforcement
   * may do, ends the hold before the reply is written: an approximation).
   */
  #deliver({ message, held }: Read): void {
    try {
      this.onmessage?.(message);
    } finally {
      if (held) setImmediate(() => held.release());
    }
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#lines.clear();
    this.#letOpenGo();
    this.#refused = undefined;
    // Whatever the child said before exiting is delivered before the close.
    for (let read = this.#pending.shift(); read; read = this.#pending.shift()) this.#deliver(read);
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

  /**
   * Ends the server politely: stdin closed, then its group gets SIGTERM after
   * EOF_GRACE_MS and SIGKILL after KILL_GRACE_MS more. Bounded whatever the
   * server does: it settles within about EOF_GRACE_MS + KILL_GRACE_MS +
   * 2 × PIPE_GRACE_MS even for a process that ignores both EOF and SIGTERM.
   */
  async close(): Promise<void> {
    const child = this.#child;
    if (child?.pid === undefined) return;
    if (this.#exit === undefined) {
      child.stdin?.end();
      if (!(await this.#within(EOF_GRACE_MS, () => this.#exit !== undefined))) {
        this.#signal('SIGTERM');
        if (!(await this.#within(KILL_GRACE_MS, () => this.#exit !== undefined))) this.#signal('SIGKILL');
      }
    }
    await this.#settled();
  }

  /** Ends the server's whole group at once with SIGKILL (a start that ran out of time); settles once it is gone. */
  async terminate(): Promise<void> {
    if (this.#child?.pid === undefined) return;
    this.#signal('SIGKILL');
    await this.#settled();
  }

  /** Once the group is gone and the connection ended; bounded even if the leader is never reaped. */
  async #settled(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const gone = await Promise.race([
      this.#gone.promise.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), KILL_GRACE_MS + 2 * PIPE_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!gone) {
      this.#letGo();
      running.delete(this);
    }
  }

  /** Ends the server's whole group at once (used on gateway shutdown and by tests, as a crash would). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.#signal(signal);
  }
}
