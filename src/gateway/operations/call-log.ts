/**
 * The call log: one JSON line per tools/call, written by pino to
 * `<dir>/<server>/<YYYY-MM-DD>/<name>-<run id>.jsonl`, with
 * `<dir>/<server>/<name>.latest.jsonl` a symlink to the newest file. The date is
 * the UTC day of the line: at midnight the log moves on to a new date folder.
 *
 * Lines carry digests of the arguments and of the result (SHA-256 over RFC 8785
 * canonical JSON), never the raw arguments unless the configuration asks for
 * them, so logs can be shared without leaking what callers sent.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import pino from 'pino';
import { digestValue, parseJson } from '../../canonical/index.ts';
import { randomRunId } from '../../ids/index.ts';

/** `cancelled`: the client withdrew the call before its answer (no error of the tool's or the gateway's). */
export type CallOutcome = 'ok' | 'error' | 'cancelled';
export type CallTransport = 'stdio' | 'http';

/** One line of the call log. */
export interface CallLogEntry {
  ts: string;
  traceId: string;
  spanId: string;
  requestId: string | number | null;
  tool: string;
  upstream: string;
  dialect: string;
  outcome: CallOutcome;
  /** The canonical error code when the outcome is an error, else null. */
  code: string | null;
  /** The dialect of the result sent back (`legacy` for a bare payload), null when there was none. */
  resultDialect: string | null;
  /** The dialect version that result carries (Hosted v2's date, the envelope name), or null. */
  resultVersion: string | null;
  durationMs: number;
  transport: CallTransport;
  /** The HTTP route, or null over stdio. */
  route: string | null;
  /** The caller's tier, present only when a bearer token authenticated the caller. */
  tier?: string;
  /** `sha256:<hex>` of the canonical arguments; null when the call had none. */
  argumentsDigest: string | null;
  /** `sha256:<hex>` of the canonical result sent back; null when there was none. */
  resultDigest: string | null;
  /** Raw arguments, only when the log was opened with includeArguments. */
  arguments?: unknown;
}

/** What the gateway knows about a call; the log adds the time and the digests. */
export interface CallRecordInput {
  traceId?: string;
  spanId?: string;
  requestId?: string | number | null;
  tool: string;
  upstream: string;
  dialect: string;
  outcome: CallOutcome;
  code?: string | null;
  resultDialect?: string | null;
  resultVersion?: string | null;
  durationMs: number;
  transport: CallTransport;
  route?: string | null;
  /** The tier of an authenticated caller; unauthenticated calls (stdio) have none. */
  tier?: string;
  arguments?: unknown;
  result?: unknown;
}

/** Fields that differ between two runs of the same calls (time, ids, transport). */
export const VOLATILE_CALL_LOG_FIELDS = [
  'ts',
  'traceId',
  'spanId',
  'requestId',
  'durationMs',
  'transport',
  'route',
] as const;

export type StableCallLogEntry = Omit<CallLogEntry, (typeof VOLATILE_CALL_LOG_FIELDS)[number]>;

/** The entry without its volatile fields: what must match across transports and runs. */
export function stripVolatile(entry: CallLogEntry | Record<string, unknown>): StableCallLogEntry {
  const copy: Record<string, unknown> = { ...entry };
  for (const field of VOLATILE_CALL_LOG_FIELDS) delete copy[field];
  return copy as unknown as StableCallLogEntry;
}

export interface CallLogOptions {
  /** The root folder (the configuration's logs.dir). */
  dir: string;
  /** Names the folder under dir: the gateway or server the calls went through. */
  server: string;
  /** The log's base name; defaults to "calls". */
  name?: string;
  /** Names this log file; defaults to a random run id. */
  runId?: string;
  includeArguments?: boolean;
  /** Injectable clock, for the date folder and `ts`. */
  now?: () => Date;
}

const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

function assertSegment(what: string, value: string): void {
  // These become path segments: no separators, no "..", nothing hidden.
  if (!SAFE_SEGMENT.test(value) || value.includes('..')) {
    throw new TypeError(`call log ${what} "${value}" is not a safe file name`);
  }
}

function digestOf(value: unknown): string | null {
  if (value === undefined) return null;
  try {
    return `sha256:${digestValue(value).value}`;
  } catch {
    // A value that is not JSON cannot have come off the wire; say so rather than crash the call.
    return null;
  }
}

type Destination = pino.DestinationStream & NodeJS.EventEmitter & { end(): void };

/** The UTC day of an ISO timestamp: the name of its date folder. */
function dayOf(ts: string): string {
  return ts.slice(0, 10);
}

export class CallLog {
  /** Absolute path of the `<name>.latest.jsonl` symlink. */
  readonly latest: string;
  private readonly serverDir: string;
  private readonly fileName: string;
  private readonly includeArguments: boolean;
  private readonly now: () => Date;
  private current: { day: string; file: string; destination: Destination; logger: pino.Logger };
  /** Files of earlier days being flushed and closed; close() waits for them too. */
  private readonly retired: Promise<void>[] = [];
  private closed = false;
  /** The ts of the line being written, handed to pino's timestamp hook. */
  private lineTs = '';

  constructor(options: CallLogOptions) {
    const name = options.name ?? 'calls';
    const runId = options.runId ?? randomRunId();
    assertSegment('server', options.server);
    assertSegment('name', name);
    assertSegment('run id', runId);
    this.now = options.now ?? (() => new Date());
    this.includeArguments = options.includeArguments ?? false;
    this.serverDir = join(options.dir, options.server);
    this.fileName = `${name}-${runId}.jsonl`;
    this.latest = join(this.serverDir, `${name}.latest.jsonl`);
    this.current = this.open(dayOf(this.now().toISOString()));
  }

  /** Absolute path of the file this log writes now: a new one in a new date folder after UTC midnight. */
  get file(): string {
    return this.current.file;
  }

  private open(day: string): CallLog['current'] {
    const dayDir = join(this.serverDir, day);
    mkdirSync(dayDir, { recursive: true });
    const file = join(dayDir, this.fileName);
    const destination = pino.destination({ dest: file, sync: false, append: true }) as Destination;
    const logger = pino(
      {
        base: null,
        // pino writes the timestamp hook first; with the level suppressed the hook must
        // open the object itself (no leading comma), so ts leads every line.
        timestamp: () => `"ts":${JSON.stringify(this.lineTs)}`,
        formatters: { level: () => ({}) },
      },
      destination,
    );
    pointLatest(this.latest, relative(this.serverDir, file));
    return { day, file, destination, logger };
  }

  /**
   * The first line of a new UTC day goes to a new file under that day's folder.
   * The old file is ended, not dropped: what it still buffers is flushed before it closes.
   */
  private rollTo(day: string): void {
    const previous = this.current;
    this.current = this.open(day);
    this.retired.push(endDestination(previous.destination));
  }

  /** Writes one line; returns the entry as written. */
  write(call: CallRecordInput): CallLogEntry {
    if (this.closed) throw new Error('call log is closed');
    const entry: CallLogEntry = {
      ts: this.now().toISOString(),
      traceId: call.traceId ?? randomBytes(16).toString('hex'),
      spanId: call.spanId ?? randomBytes(8).toString('hex'),
      requestId: call.requestId ?? null,
      tool: call.tool,
      upstream: call.upstream,
      dialect: call.dialect,
      outcome: call.outcome,
      code: call.outcome === 'error' ? (call.code ?? 'INTERNAL_ERROR') : null,
      resultDialect: call.resultDialect ?? null,
      resultVersion: call.resultVersion ?? null,
      durationMs: call.durationMs,
      transport: call.transport,
      route: call.route ?? null,
      // Absent rather than null for unauthenticated callers, so stdio lines keep their shape.
      ...(call.tier === undefined ? {} : { tier: call.tier }),
      argumentsDigest: digestOf(call.arguments),
      resultDigest: digestOf(call.result),
    };
    if (this.includeArguments && call.arguments !== undefined) entry.arguments = call.arguments;
    const { ts, ...rest } = entry;
    // The line's own timestamp picks its file, so a line always sits under the day it carries.
    if (dayOf(ts) !== this.current.day) this.rollTo(dayOf(ts));
    this.lineTs = ts;
    this.current.logger.info(rest);
    return entry;
  }

  /** Flushes every buffered line to disk and closes the files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.retired, endDestination(this.current.destination)]);
  }
}

/** Ends a pino destination and resolves once its file is closed, everything buffered written. */
function endDestination(destination: Destination): Promise<void> {
  const closed = once(destination, 'close').then(() => {});
  destination.end();
  return closed;
}

/** Repoints the symlink atomically: a new link under a temporary name, renamed over the old. */
function pointLatest(link: string, target: string): void {
  const temporary = `${link}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    symlinkSync(target, temporary);
    renameSync(temporary, link);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** Reads a call log file back as entries (for tools and tests). */
export function readCallLog(file: string): CallLogEntry[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => parseJson(line) as unknown as CallLogEntry);
}
