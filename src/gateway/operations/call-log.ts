/**
 * The call log: one JSON line per tools/call, written by pino, made from the
 * call's report (`CallSummary`) and where it was served.
 *
 * Files belong to one gateway instance, so that instances logging to one folder
 * (replicas on a shared volume, the many stdio launches of a desktop client)
 * never write to each other's files or re-point each other's links. Under
 * `<dir>/<server>/` (`server`: the gateway's name, or the upstream's for `proxy`):
 *
 *   <YYYY-MM-DD>/<name>-<instance>.jsonl   the instance's lines of that UTC day
 *   <name>-<instance>.latest.jsonl         relative symlink to the instance's current file
 *
 * The instance name is the configured one (the gateway reads `MCP_ENVELOPE_INSTANCE`),
 * else `<host>-<pid>`, unique among running processes. A configured name is stable
 * across restarts: a restarted instance appends to its day's file and keeps its
 * link, so a shipper tails one file per instance. Processes given the same name
 * share its file (whole lines are appended) and its link.
 *
 * Each line is pino's: its `level`, then `ts` (the time, ISO 8601 UTC, from pino's
 * timestamp function), then the call's fields. The line's own `ts` picks its file,
 * so at UTC midnight the log moves on to the new day's folder and every line sits
 * under the day it carries. Lines carry digests of the arguments and of the result
 * (SHA-256 over RFC 8785 canonical JSON), never the raw arguments unless the
 * configuration asks for them, so logs can be shared without leaking what callers sent.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, relative } from 'node:path';
import pino from 'pino';
import { parseJson } from '../../canonical/index.ts';
import { EnvelopeError } from '../../errors/index.ts';
import type { CallOutcome, CallSummary } from '../../mcp/pipeline.ts';

export type CallTransport = 'stdio' | 'http';

/** One line of the call log. */
export interface CallLogEntry extends CallerFields {
  /** pino's level: 30 (info) for every call. */
  level: number;
  ts: string;
  traceId: string;
  spanId: string;
  requestId: string | null;
  tool: string;
  upstream: string;
  dialect: string;
  /** `cancelled`: the client withdrew the call before its answer (no error of the tool's or the gateway's). */
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
  /** `sha256:<hex>` of the canonical arguments; null when the call had none. */
  argumentsDigest: string | null;
  /** `sha256:<hex>` of the canonical result sent back; null when there was none. */
  resultDigest: string | null;
  /** Raw arguments, only when the log was opened with includeArguments. */
  arguments?: unknown;
}

/**
 * Who called and what the access rules decided: each member present only when
 * a credential authenticated the caller (`access` when the gateway has rules).
 */
export interface CallerFields {
  /** The caller's tier. */
  tier?: string;
  /** `token:<name>` for a static token, `oauth:<issuer>#<subject>` for an access token. */
  principal?: string;
  /** The OAuth client the caller's access token was issued to, when it names one. */
  clientId?: string;
  /** The subject an access token names (its client when it names none). */
  subject?: string;
  /** The issuer of the caller's access token. */
  issuer?: string;
  /** The access token's `jti`, or the static token's configured name: never the token. */
  tokenId?: string;
  /**
   * What the `access` rules decided: the rule that decided (its name, else its
   * pointer `/access/rules/<n>`), or `default`.
   */
  access?: CallAccessEntry;
}

/** The access rules' decision on one call. */
export interface CallAccessEntry {
  decision: 'allow' | 'deny';
  rule: string;
}

/** Where and for whom a call was served: what the log adds to the call's report. */
export interface CallLogFacts extends CallerFields {
  upstream: string;
  transport: CallTransport;
  /** The HTTP route; null or absent over stdio. */
  route?: string | null;
  /** The raw arguments, written only when the log was opened with includeArguments. */
  arguments?: unknown;
  traceId?: string;
  spanId?: string;
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
  /** Names this instance's files and link; defaults to `defaultInstance()`. */
  instance?: string;
  includeArguments?: boolean;
  /** Injectable clock, for `ts` and so the date folder. */
  now?: () => Date;
}

const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

function assertSegment(what: string, value: string): void {
  // These become path segments: no separators, no "..", nothing hidden.
  if (!SAFE_SEGMENT.test(value) || value.includes('..')) {
    throw new TypeError(`call log ${what} "${value}" is not a safe file name`);
  }
}

/** This host and process as a file name: unique among running processes, so no two share a file by accident. */
export function defaultInstance(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return `${host || 'host'}-${process.pid}`;
}

/** The instance a gateway logs as: `MCP_ENVELOPE_INSTANCE` when set (a stable name), else `defaultInstance()`. */
export function instanceName(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.MCP_ENVELOPE_INSTANCE;
  if (configured === undefined || configured === '') return defaultInstance();
  if (!SAFE_SEGMENT.test(configured) || configured.includes('..')) {
    throw new EnvelopeError(
      'CONFIG_INVALID',
      `MCP_ENVELOPE_INSTANCE "${configured}" is not a safe file name (letters, digits, _ - and single dots)`,
    );
  }
  return configured;
}

type Destination = pino.DestinationStream & NodeJS.EventEmitter & { end(): void };

/** The file of one UTC day. */
interface DayFile {
  day: string;
  file: string;
  destination: Destination;
}

/** The member pino's timestamp function writes; the line's day is read back from it. */
const TS_MEMBER = '"ts":"';

export class CallLog {
  /** Absolute path of this instance's `<name>-<instance>.latest.jsonl` symlink. */
  readonly latest: string;
  readonly #serverDir: string;
  readonly #fileName: string;
  readonly #includeArguments: boolean;
  readonly #logger: pino.Logger;
  #current: DayFile;
  /** Files of earlier days being flushed and closed; close() waits for them too. */
  readonly #retired: Promise<void>[] = [];
  #closed = false;

  constructor(options: CallLogOptions) {
    const name = options.name ?? 'calls';
    const instance = options.instance ?? defaultInstance();
    assertSegment('server', options.server);
    assertSegment('name', name);
    assertSegment('instance', instance);
    const now = options.now ?? (() => new Date());
    this.#includeArguments = options.includeArguments ?? false;
    this.#serverDir = join(options.dir, options.server);
    this.#fileName = `${name}-${instance}.jsonl`;
    this.latest = join(this.#serverDir, `${name}-${instance}.latest.jsonl`);
    this.#current = this.#open(now().toISOString().slice(0, 10));
    this.#logger = pino(
      {
        // No pid or hostname on every line: the file names the instance.
        base: null,
        // A documented timestamp function: the `,"key":value` fragment pino places after the level.
        timestamp: () => `,${TS_MEMBER}${now().toISOString()}"`,
      },
      { write: (line: string) => this.#route(line) },
    );
  }

  /** Absolute path of the file this log writes now: a new one in a new date folder after UTC midnight. */
  get file(): string {
    return this.#current.file;
  }

  #open(day: string): DayFile {
    const dayDir = join(this.#serverDir, day);
    mkdirSync(dayDir, { recursive: true });
    const file = join(dayDir, this.#fileName);
    const destination = pino.destination({ dest: file, sync: false, append: true }) as Destination;
    pointLatest(this.latest, relative(this.#serverDir, file));
    return { day, file, destination };
  }

  /**
   * Sends a line pino wrote to the file of the day its `ts` names. The first line of a
   * new UTC day opens that day's file; the old one is ended, not dropped: what it still
   * buffers is flushed before it closes.
   */
  #route(line: string): void {
    const at = line.indexOf(TS_MEMBER) + TS_MEMBER.length;
    const day = line.slice(at, at + 10);
    if (day !== this.#current.day) {
      const previous = this.#current;
      this.#current = this.#open(day);
      this.#retired.push(endDestination(previous.destination));
    }
    this.#current.destination.write(line);
  }

  /** Writes the line of one call. */
  write(summary: CallSummary, facts: CallLogFacts): void {
    if (this.#closed) throw new Error('call log is closed');
    this.#logger.info({
      traceId: facts.traceId ?? randomBytes(16).toString('hex'),
      spanId: facts.spanId ?? randomBytes(8).toString('hex'),
      requestId: summary.requestId,
      tool: summary.tool,
      upstream: facts.upstream,
      dialect: summary.dialect,
      outcome: summary.outcome,
      code: summary.code,
      resultDialect: summary.resultDialect,
      resultVersion: summary.resultVersion,
      durationMs: summary.durationMs,
      transport: facts.transport,
      route: facts.route ?? null,
      // Absent rather than null for unauthenticated callers, so stdio lines keep their shape.
      ...(facts.tier === undefined ? {} : { tier: facts.tier }),
      ...(facts.principal === undefined ? {} : { principal: facts.principal }),
      ...(facts.clientId === undefined ? {} : { clientId: facts.clientId }),
      ...(facts.subject === undefined ? {} : { subject: facts.subject }),
      ...(facts.issuer === undefined ? {} : { issuer: facts.issuer }),
      ...(facts.tokenId === undefined ? {} : { tokenId: facts.tokenId }),
      ...(facts.access === undefined ? {} : { access: facts.access }),
      argumentsDigest: summary.argumentsDigest,
      resultDigest: summary.resultDigest,
      ...(this.#includeArguments && facts.arguments !== undefined ? { arguments: facts.arguments } : {}),
    });
  }

  /** Flushes every buffered line to disk and closes the files. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#retired, endDestination(this.#current.destination)]);
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

/** The `<name>-<instance>.latest.jsonl` links in a server's log folder: one per instance that logged there. */
export function latestCallLogLinks(serverDir: string, name = 'calls'): string[] {
  let names: string[];
  try {
    names = readdirSync(serverDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .filter((file) => file.startsWith(`${name}-`) && file.endsWith('.latest.jsonl'))
    .map((file) => join(serverDir, file))
    .filter((file) => lstatSync(file).isSymbolicLink());
}

/**
 * What the instances logging in a server's folder wrote to their current files,
 * in time order (one instance's lines keep their order); none before any opened
 * its log. For tools and tests that look at a folder rather than one instance.
 */
export function readLatestCallLogs(serverDir: string, name = 'calls'): CallLogEntry[] {
  const lines = latestCallLogLinks(serverDir, name).flatMap((link) => readCallLog(link));
  return lines.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
}
