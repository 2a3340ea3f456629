/**
 * The sweep: real MCP servers from npm, each called directly (three times,
 * for ground truth: twice before the gateway, once after) and through the
 * gateway's proxy in every mode over stdio and Streamable HTTP, every gateway
 * answer classified against the direct ones (classify.ts). See scripts/sweep/README.md.
 *
 * Usage: node scripts/sweep/run.ts [--servers a,b] [--modes m,n] [--transports stdio,http]
 *                                  [--client-era 2025-11-25|2026-07-28]
 *                                  [--out FILE-OR-DIR] [--capture DIR] [--timeout MS]
 * Scratch: $SWEEP_DIR, else <os tmpdir>/mcp-envelope-sweep.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Tool } from '@modelcontextprotocol/client';
import { minimalArguments } from './arguments.ts';
import {
  type CallClass,
  CLASSES,
  classify,
  errorSummary,
  groundTruth,
  isErrorOutcome,
  type Outcome,
  volatilePaths,
} from './classify.ts';
import { install, packageDir } from './install.ts';
import { type Scratch, SERVERS, type ServerSpec, type ToolArguments } from './servers.ts';
import {
  BIN,
  CLIENT_ERAS,
  type ClientEra,
  MODES,
  type Mode,
  NODE,
  openSession,
  type Session,
  type Target,
  TRANSPORTS,
  type Transport,
  type Upstream,
  upstreamProtocol,
} from './session.ts';

const SHORT: Record<CallClass, string> = {
  identical: 'id',
  intact: 'ok',
  demoted: 'dem',
  lost: 'lost',
  'introduced-error': 'err',
};

interface PlannedCall {
  /** `tool`, or `tool#2` for its second set of arguments. */
  id: string;
  tool: string;
  arguments: ToolArguments;
}

interface GatewayCell {
  class: CallClass;
  reasons?: string[];
  ms: number;
  /** The gateway's answer, cut to 2,000 characters, when the class is neither identical nor intact. */
  answer?: string;
}

interface CallReport {
  call: string;
  tool: string;
  arguments: ToolArguments;
  direct: { error?: string; rejected?: string; ms: number; notes?: string[] };
  volatile: string[];
  gateway: Record<string, GatewayCell>;
}

interface ListReport {
  bytes: number | null;
  ratio: number | null;
  tools: number | null;
  missing?: string[];
  error?: string;
}

interface ServerReport {
  name: string;
  package: string;
  version: string;
  covers: string;
  /** The newest revision the server speaks (what the gateway negotiates with it); null when not found. */
  upstreamProtocol: string | null;
  error?: string;
  tools: number;
  skipped: { tool: string; reason: string }[];
  toolsList: Record<string, ListReport>;
  calls: CallReport[];
  /** Per pass; `protocol` is the revision the sweep's client negotiated (with the server, or with the gateway). */
  passes: Record<string, { ms: number; protocol?: string; reopened?: number; error?: string }>;
}

function usage(): never {
  console.error(
    'usage: node scripts/sweep/run.ts [--servers a,b] [--modes m,n] [--transports stdio,http] ' +
      `[--client-era ${CLIENT_ERAS.join('|')}] [--out FILE-OR-DIR] [--capture DIR] [--timeout MS]`,
  );
  process.exit(2);
}

function list<T extends string>(value: string | undefined, all: readonly T[], what: string): T[] {
  if (value === undefined) return [...all];
  const picked = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  for (const item of picked) {
    if (!all.includes(item as T)) {
      console.error(`unknown ${what}: ${item} (one of ${all.join(', ')})`);
      process.exit(2);
    }
  }
  return picked as T[];
}

function scratchOf(root: string, spec: ServerSpec): Scratch {
  return { root, prefix: join(root, spec.name), work: join(root, 'work', spec.name) };
}

function upstreamOf(spec: ServerSpec, at: Scratch): Upstream {
  mkdirSync(at.work, { recursive: true });
  return {
    command: NODE,
    args: [join(packageDir(at.prefix, spec), spec.entry), ...(spec.args?.(at) ?? [])],
    env: spec.env?.(at) ?? {},
    cwd: at.work,
  };
}

function reset(spec: ServerSpec, at: Scratch): void {
  spec.reset?.(at);
  mkdirSync(at.work, { recursive: true });
}

/** Every call of a pass, in tools/list order; tools left out, with the reason. */
function plan(spec: ServerSpec, at: Scratch, tools: Tool[]) {
  const given = spec.arguments?.(at) ?? {};
  const common = spec.common?.(at) ?? {};
  const calls: PlannedCall[] = [];
  const skipped: { tool: string; reason: string }[] = [];
  for (const tool of tools) {
    const reason = spec.skip?.[tool.name];
    if (reason) {
      skipped.push({ tool: tool.name, reason });
      continue;
    }
    const properties = (tool.inputSchema as { properties?: Record<string, unknown> }).properties ?? {};
    const shared = Object.fromEntries(Object.entries(common).filter(([key]) => key in properties));
    const sets = given[tool.name];
    // Given arguments win over the common members; common members win over generated ones.
    const argumentSets =
      sets === undefined
        ? [{ ...minimalArguments(tool.inputSchema), ...shared }]
        : (Array.isArray(sets) ? sets : [sets]).map((args) => ({ ...shared, ...args }));
    argumentSets.forEach((args, index) => {
      calls.push({
        id: index === 0 ? tool.name : `${tool.name}#${index + 1}`,
        tool: tool.name,
        arguments: args,
      });
    });
  }
  return { calls, skipped };
}

function toolsBytes(tools: Tool[]): number {
  return Buffer.byteLength(JSON.stringify(tools));
}

const CONNECTION_GONE = /connection closed|not connected|ECONNREFUSED|fetch failed|socket/i;

interface PassResult {
  tools: Tool[] | null;
  outcomes: Map<string, { outcome: Outcome; ms: number }>;
  ms: number;
  /** The revision the client negotiated (the last session opened). */
  protocol?: string;
  reopened: number;
  error?: string;
}

/** One pass: reset, one session (reopened at most twice if the connection dies), every call in order. */
async function runPass(
  spec: ServerSpec,
  at: Scratch,
  target: Target,
  calls: PlannedCall[] | null,
  timeoutMs: number,
  era: ClientEra,
  onTools?: (tools: Tool[]) => PlannedCall[],
): Promise<PassResult> {
  const started = performance.now();
  reset(spec, at);
  const upstream = upstreamOf(spec, at);
  const open = () => openSession({ upstream, target, root: at.work, timeoutMs, name: spec.name, era });
  const outcomes = new Map<string, { outcome: Outcome; ms: number }>();
  let session: Session | undefined;
  let reopened = 0;
  let error: string | undefined;
  let tools: Tool[] | null = null;
  let protocol: string | undefined;
  try {
    session = await open();
    tools = session.tools;
    protocol = session.protocol;
  } catch (failure) {
    error = (failure as Error).message;
  }
  const planned = calls ?? (tools && onTools ? onTools(tools) : []);
  for (const call of planned) {
    if (!session) {
      outcomes.set(call.id, {
        outcome: { kind: 'error', source: 'client', code: null, message: `no session: ${error}` },
        ms: 0,
      });
      continue;
    }
    const t0 = performance.now();
    const outcome = await session.call(call.tool, call.arguments);
    outcomes.set(call.id, { outcome, ms: Math.round(performance.now() - t0) });
    if (outcome.kind === 'error' && outcome.source !== 'jsonrpc' && CONNECTION_GONE.test(outcome.message)) {
      const stderr = session.stderr().slice(-1500);
      await session.close();
      session = undefined;
      error = `connection lost after ${call.id}: ${outcome.message}; stderr: ${stderr}`;
      if (reopened < 2) {
        reopened++;
        try {
          session = await open();
          protocol = session.protocol;
        } catch (failure) {
          error += `; reopen failed: ${(failure as Error).message}`;
        }
      }
    }
  }
  await session?.close();
  return {
    tools,
    outcomes,
    ms: Math.round(performance.now() - started),
    ...(protocol === undefined ? {} : { protocol }),
    reopened,
    ...(error === undefined ? {} : { error }),
  };
}

function passEntry(pass: PassResult): ServerReport['passes'][string] {
  return {
    ms: pass.ms,
    ...(pass.protocol ? { protocol: pass.protocol } : {}),
    ...(pass.reopened ? { reopened: pass.reopened } : {}),
    ...(pass.error ? { error: pass.error.slice(0, 3000) } : {}),
  };
}

function cut(value: unknown, max = 2000): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
}

async function sweepServer(
  spec: ServerSpec,
  root: string,
  modes: Mode[],
  transports: Transport[],
  timeoutMs: number,
  era: ClientEra,
  capture: string | undefined,
): Promise<ServerReport> {
  const at = scratchOf(root, spec);
  const report: ServerReport = {
    name: spec.name,
    package: spec.package,
    version: spec.version,
    covers: spec.covers,
    upstreamProtocol: null,
    tools: 0,
    skipped: [],
    toolsList: {},
    calls: [],
    passes: {},
  };
  let calls: PlannedCall[] = [];
  const first = await runPass(spec, at, { kind: 'direct' }, null, timeoutMs, era, (tools) => {
    const planned = plan(spec, at, tools);
    report.skipped = planned.skipped;
    calls = planned.calls;
    return calls;
  });
  report.passes.direct = passEntry(first);
  // What the server speaks at its newest: the direct passes negotiate it in the
  // 2026 era; in the 2025 era they do not, so one `auto` connection asks.
  if (era === '2026-07-28') report.upstreamProtocol = first.protocol ?? null;
  else {
    reset(spec, at);
    try {
      report.upstreamProtocol = await upstreamProtocol(upstreamOf(spec, at), at.work, timeoutMs);
    } catch (error) {
      console.error(`  upstream revision unknown: ${(error as Error).message.slice(0, 300)}`);
    }
  }
  if (!first.tools) {
    report.error = `direct session failed: ${first.error}`;
    return report;
  }
  const tools = first.tools;
  report.tools = tools.length;
  const directBytes = toolsBytes(tools);
  report.toolsList.direct = { bytes: directBytes, ratio: null, tools: tools.length };

  // A call that timed out directly is long-running: not called again.
  for (const call of [...calls]) {
    const outcome = first.outcomes.get(call.id)?.outcome;
    if (outcome?.kind === 'error' && outcome.source === 'timeout') {
      report.skipped.push({ tool: call.id, reason: `timed out after ${timeoutMs} ms when called directly` });
      calls = calls.filter((item) => item !== call);
    }
  }

  const second = await runPass(spec, at, { kind: 'direct' }, calls, timeoutMs, era);
  report.passes['direct-again'] = passEntry(second);

  const passthroughBytes: Partial<Record<Transport, number>> = {};
  const answers = new Map<string, PassResult>();
  for (const mode of modes) {
    for (const transport of transports) {
      const column = `${mode}/${transport}`;
      const pass = await runPass(spec, at, { kind: 'gateway', mode, transport }, calls, timeoutMs, era);
      answers.set(column, pass);
      report.passes[column] = passEntry(pass);
      if (pass.tools) {
        const bytes = toolsBytes(pass.tools);
        if (mode === 'passthrough') passthroughBytes[transport] = bytes;
        const base = passthroughBytes[transport] ?? directBytes;
        const names = new Set(pass.tools.map((tool) => tool.name));
        const missing = tools.map((tool) => tool.name).filter((name) => !names.has(name));
        report.toolsList[column] = {
          bytes,
          ratio: Math.round((bytes / base) * 100) / 100,
          tools: pass.tools.length,
          ...(missing.length > 0 ? { missing } : {}),
        };
      } else {
        report.toolsList[column] = {
          bytes: null,
          ratio: null,
          tools: null,
          error: pass.error?.slice(0, 500),
        };
      }
      const failed = [...pass.outcomes.values()].filter(({ outcome }) => isErrorOutcome(outcome)).length;
      console.error(`  ${column.padEnd(22)} ${String(failed).padStart(3)} errors  ${pass.ms} ms`);
    }
  }

  // A third direct run, after the gateway's: what changed since the first two
  // (a clock that ticked over, a counter) is volatile too.
  const last = await runPass(spec, at, { kind: 'direct' }, calls, timeoutMs, era);
  report.passes['direct-last'] = passEntry(last);

  for (const call of calls) {
    const direct = first.outcomes.get(call.id) as { outcome: Outcome; ms: number };
    const others = [second, last]
      .map((pass) => pass.outcomes.get(call.id)?.outcome)
      .filter((outcome): outcome is Outcome => outcome !== undefined);
    const truth = groundTruth(direct.outcome, others);
    const entry: CallReport = {
      call: call.id,
      tool: call.tool,
      arguments: call.arguments,
      direct: {
        ms: direct.ms,
        ...(isErrorOutcome(direct.outcome) ? { error: errorSummary(direct.outcome) } : {}),
        ...(direct.outcome.kind === 'result' && direct.outcome.rejected
          ? { rejected: direct.outcome.rejected }
          : {}),
        ...(truth.notes.length > 0 ? { notes: truth.notes } : {}),
      },
      volatile: volatilePaths(truth.pattern),
      gateway: {},
    };
    for (const [column, pass] of answers) {
      const got = pass.outcomes.get(call.id) as { outcome: Outcome; ms: number };
      const verdict = classify(direct.outcome, others, got.outcome);
      const cell: GatewayCell = { class: verdict.class, ms: got.ms };
      if (verdict.reasons.length > 0) cell.reasons = verdict.reasons;
      if (verdict.class !== 'identical' && verdict.class !== 'intact') {
        cell.answer = cut(got.outcome.kind === 'result' ? got.outcome.result : got.outcome);
      }
      entry.gateway[column] = cell;
    }
    report.calls.push(entry);
  }
  for (const column of answers.keys()) {
    const counts = countClasses(report.calls.map((call) => call.gateway[column]?.class));
    console.error(`  ${column.padEnd(22)} ${formatCounts(counts)}`);
  }

  if (capture) writeFixture(capture, spec, at, tools, calls, first.outcomes);
  return report;
}

function countClasses(classes: (CallClass | undefined)[]): Record<CallClass, number> {
  const counts = Object.fromEntries(CLASSES.map((name) => [name, 0])) as Record<CallClass, number>;
  for (const name of classes) if (name) counts[name]++;
  return counts;
}

function formatCounts(counts: Record<CallClass, number>): string {
  const parts = CLASSES.filter((name) => counts[name] > 0).map((name) => `${counts[name]} ${SHORT[name]}`);
  return parts.length > 0 ? parts.join(' ') : '-';
}

const LARGEST_BASE64 = 64 * 1024;

function hasBigBase64(value: unknown): boolean {
  if (typeof value === 'string') return value.length > LARGEST_BASE64 && /^[A-Za-z0-9+/=\s]+$/.test(value);
  if (Array.isArray(value)) return value.some(hasBigBase64);
  if (value && typeof value === 'object') return Object.values(value).some(hasBigBase64);
  return false;
}

/** The direct answers as a fixture (no server code): scratch paths written as `<scratch>`. */
function writeFixture(
  dir: string,
  spec: ServerSpec,
  at: Scratch,
  tools: Tool[],
  calls: PlannedCall[],
  outcomes: Map<string, { outcome: Outcome; ms: number }>,
): void {
  const kept: { tool: string; arguments: ToolArguments; result?: unknown; error?: unknown }[] = [];
  const omitted: { call: string; reason: string }[] = [];
  for (const call of calls) {
    const outcome = outcomes.get(call.id)?.outcome;
    if (!outcome) continue;
    const reason = spec.noCapture?.[call.id];
    if (reason) {
      omitted.push({ call: call.id, reason });
      continue;
    }
    const answer = outcome.kind === 'result' ? outcome.result : outcome;
    if (hasBigBase64(answer)) {
      omitted.push({ call: call.id, reason: 'base64 above 64 KiB' });
      continue;
    }
    kept.push({
      tool: call.tool,
      arguments: call.arguments,
      ...(outcome.kind === 'result' ? { result: outcome.result } : { error: outcome }),
    });
  }
  const fixture = {
    package: spec.package,
    version: spec.version,
    captured: new Date().toISOString(),
    note: 'Direct answers of the sweep (scripts/sweep); the scratch folder is written as <scratch>.',
    tools,
    calls: kept,
    ...(omitted.length > 0 ? { omitted } : {}),
  };
  const escaped = JSON.stringify(at.root).slice(1, -1);
  const text = JSON.stringify(fixture, null, 2).split(escaped).join('<scratch>');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${spec.name}.json`), `${text}\n`);
}

function shortMode(mode: string): string {
  return mode.replace(/-v\d.*$/, '').replace('passthrough', 'pass');
}

/** What the sweep's client spoke, as the table's first line says it. */
function eraLine(era: ClientEra): string {
  return era === '2026-07-28'
    ? 'client era 2026-07-28: pinned to 2026-07-28 through the gateway, auto negotiation directly'
    : 'client era 2025-11-25: the 2025 initialize handshake, directly and through the gateway';
}

function printTable(reports: ServerReport[], modes: Mode[], transports: Transport[], era: ClientEra): string {
  const columns = modes.flatMap((mode) => transports.map((transport) => `${mode}/${transport}`));
  const heads = [
    'upstream',
    ...columns.map((column) => {
      const [mode, transport] = column.split('/') as [string, string];
      return `${shortMode(mode)}/${transport}`;
    }),
  ];
  const rows: string[][] = [];
  const totals = new Map<string, CallClass[]>();
  for (const report of reports) {
    const cells = columns.map((column) => {
      const classes = report.calls.map((call) => call.gateway[column]?.class);
      totals.set(column, [...(totals.get(column) ?? []), ...(classes.filter(Boolean) as CallClass[])]);
      return report.error ? 'failed' : formatCounts(countClasses(classes));
    });
    rows.push([`${report.name} (${report.calls.length})`, report.upstreamProtocol ?? '?', ...cells]);
  }
  const callCount = reports.reduce((sum, report) => sum + report.calls.length, 0);
  rows.push([
    `total (${callCount})`,
    '',
    ...columns.map((column) => formatCounts(countClasses(totals.get(column) ?? []))),
  ]);
  rows.push([
    'tools/list ×',
    '',
    ...columns.map((column) => {
      const [, transport] = column.split('/') as [string, Transport];
      let sum = 0;
      let base = 0;
      for (const report of reports) {
        const own = report.toolsList[column]?.bytes;
        const pass = report.toolsList[`passthrough/${transport}`]?.bytes ?? report.toolsList.direct?.bytes;
        if (typeof own === 'number' && typeof pass === 'number') {
          sum += own;
          base += pass;
        }
      }
      return base > 0 ? `${(sum / base).toFixed(2)}` : '-';
    }),
  ]);
  const widths = [0, ...heads.map(() => 0)].map((_, index) =>
    Math.max(
      index === 0 ? 6 : (heads[index - 1] as string).length,
      ...rows.map((row) => (row[index] ?? '').length),
    ),
  );
  const line = (cells: string[]) =>
    cells.map((cell, index) => cell.padEnd(widths[index] as number)).join(' | ');
  const out = [
    eraLine(era),
    line(['server', ...heads]),
    widths.map((width) => '-'.repeat(width)).join('-|-'),
    ...rows.slice(0, -2).map(line),
    widths.map((width) => '-'.repeat(width)).join('-|-'),
    ...rows.slice(-2).map(line),
  ];
  return out.join('\n');
}

/** Which gateway ran: its CLI, when its dist/ was built, the repository's commit and whether src/ had changes. */
function gatewayBuild(): Record<string, unknown> {
  const dir = join(BIN, '..', '..');
  const built = join(dir, 'dist', 'cli', 'bin.js');
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      return null;
    }
  };
  const changed = git('status', '--porcelain', '--', 'src');
  return {
    bin: BIN,
    distBuilt: existsSync(built) ? statSync(built).mtime.toISOString() : null,
    commit: git('rev-parse', 'HEAD'),
    srcChanges: changed === null ? null : changed.split('\n').filter(Boolean).length,
  };
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseArgs<{ options: Record<string, { type: 'string' }> }>>;
  try {
    parsed = parseArgs({
      options: {
        servers: { type: 'string' },
        modes: { type: 'string' },
        transports: { type: 'string' },
        out: { type: 'string' },
        capture: { type: 'string' },
        timeout: { type: 'string' },
        'client-era': { type: 'string' },
      },
      allowPositionals: false,
    });
  } catch (error) {
    console.error((error as Error).message);
    usage();
  }
  const options = parsed.values as Record<string, string | undefined>;
  const names = SERVERS.map((spec) => spec.name);
  const picked = list(options.servers, names, 'server');
  const modes = list(options.modes, MODES, 'mode');
  const transports = list(options.transports, TRANSPORTS, 'transport');
  const timeoutMs = options.timeout ? Number(options.timeout) : 20_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) usage();
  const era = (options['client-era'] ?? CLIENT_ERAS[0]) as ClientEra;
  if (!CLIENT_ERAS.includes(era)) {
    console.error(`unknown client era: ${era} (one of ${CLIENT_ERAS.join(', ')})`);
    process.exit(2);
  }
  const root = resolve(process.env.SWEEP_DIR || join(tmpdir(), 'mcp-envelope-sweep'));
  mkdirSync(root, { recursive: true });
  let out = resolve(options.out ?? join(root, 'report.json'));
  if (existsSync(out) && statSync(out).isDirectory()) out = join(out, 'report.json');
  else if (!out.endsWith('.json')) {
    mkdirSync(out, { recursive: true });
    out = join(out, 'report.json');
  }
  const capture = options.capture ? resolve(options.capture) : undefined;

  const started = new Date();
  const t0 = performance.now();
  console.error(
    `sweep: scratch ${root}; ${picked.length} servers × ${modes.length} modes × ${transports.join('+')}; ` +
      `client era ${era}`,
  );
  const build = gatewayBuild();
  console.error(
    `gateway: ${build.bin} (dist built ${build.distBuilt}, commit ${String(build.commit).slice(0, 12)}, ` +
      `${build.srcChanges} changed files under src/)`,
  );
  const specs = SERVERS.filter((spec) => picked.includes(spec.name));
  for (const spec of specs) {
    const at = scratchOf(root, spec);
    const done = await install(at.prefix, spec);
    if (done === 'installed') console.error(`installed ${spec.package}@${spec.version}`);
  }
  const reports: ServerReport[] = [];
  for (const spec of specs) {
    const s0 = performance.now();
    console.error(`${spec.name}: ${spec.package}@${spec.version}`);
    let report: ServerReport;
    try {
      report = await sweepServer(spec, root, modes, transports, timeoutMs, era, capture);
    } catch (error) {
      report = {
        name: spec.name,
        package: spec.package,
        version: spec.version,
        covers: spec.covers,
        upstreamProtocol: null,
        error: (error as Error).stack ?? String(error),
        tools: 0,
        skipped: [],
        toolsList: {},
        calls: [],
        passes: {},
      };
    }
    if (report.error) console.error(`  FAILED: ${report.error.slice(0, 500)}`);
    console.error(`  ${report.calls.length} calls, ${Math.round((performance.now() - s0) / 1000)} s`);
    reports.push(report);
  }
  const durationMs = Math.round(performance.now() - t0);
  const table = printTable(reports, modes, transports, era);
  const skipped = reports.flatMap((report) =>
    report.skipped.map((item) => `  ${report.name} ${item.tool}: ${item.reason}`),
  );
  console.log(table);
  console.log('');
  console.log('cells: calls per class — id identical, ok intact, dem demoted, lost, err introduced-error');
  console.log('tools/list ×: JSON size of the tools array relative to passthrough over the same transport');
  if (skipped.length > 0) console.log(`not called:\n${skipped.join('\n')}`);
  console.log(
    `\n${Math.round(durationMs / 1000)} s; full report: ${out}${capture ? `; fixtures: ${capture}` : ''}`,
  );
  const report = {
    started: started.toISOString(),
    durationMs,
    node: process.version,
    gateway: build,
    scratch: root,
    clientEra: era,
    modes,
    transports,
    timeoutMs,
    table,
    servers: reports,
  };
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
}

await main();
