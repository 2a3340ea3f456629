/**
 * What tracing costs the gateway's process per tools/call, with nothing else
 * in the measure: one `GatewayTelemetry` built as the gateway builds it, and
 * each call's telemetry run through its life (start, the upstream call, the
 * answer, the end) around an upstream that answers at once. The OTLP receiver
 * is another process, so what is counted is this process's CPU time alone
 * (process.cpuUsage): span creation, the batch processor, the OTLP/JSON
 * serialization and the HTTP export. Machine load moves this far less than it
 * moves a whole gateway's calls/s (bench/tracing.bench.ts).
 * TRACING_CPU_RATIOS lists the traces.sampleRatio values to weigh (default
 * "1,0.1"); "off" is the same loop with no tracer, the loop's own cost.
 * Run: node bench/tracing-cpu.bench.ts
 */
import { spawn } from 'node:child_process';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { TelemetryConfig } from '../src/gateway/operations/config.ts';
import { GatewayTelemetry } from '../src/gateway/telemetry/telemetry.ts';

const CALLS = Number(process.env.TRACING_CPU_CALLS ?? 40_000);
const WARMUP = 5_000;
const RATIOS = (process.env.TRACING_CPU_RATIOS ?? '1,0.1').split(',').map(Number);

/** A receiver in a process of its own that reads and drops each export; resolves with its URL. */
async function startReceiver(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      "require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(200).end('{}')); })" +
        ".listen(0, '127.0.0.1', function () { console.log(this.address().port); })",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<string>((resolve) =>
    child.stdout?.once('data', (data) => resolve(String(data).trim())),
  );
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

function config(endpoint: string, sampleRatio: number | undefined): TelemetryConfig {
  return {
    serviceName: 'tracing-cpu-bench',
    traces: { enabled: sampleRatio !== undefined, sampleRatio: sampleRatio ?? 1 },
    metrics: { prometheus: false, otlp: false, exportIntervalMs: 60_000 },
    otlp: { endpoint, headers: {} },
  };
}

const result: CallToolResult = { content: [{ type: 'text', text: 'x'.repeat(1024) }] };
const signal = new AbortController().signal;

async function call(telemetry: GatewayTelemetry, id: number): Promise<void> {
  const traced = telemetry.startCall({
    upstream: 'everything',
    tool: 'echo',
    meta: undefined,
    headers: undefined,
    transport: 'http',
    protocolVersion: '2025-11-25',
    sessionId: 'a-session',
    requestId: id,
    recording: false,
  });
  await traced.invoking(async () => result)({ name: 'echo', arguments: { text: 'x' } });
  traced.answered();
  traced.end({ summary: undefined, result, signal });
}

/** Microseconds of this process's CPU per call, over CALLS calls (the exporter's sends and the ends included). */
async function cpuPerCall(telemetry: GatewayTelemetry): Promise<number> {
  const run = async (count: number) => {
    for (let id = 0; id < count; id++) {
      await call(telemetry, id);
      // Let the ends (a turn later), the exports and their answers run, as they do between requests.
      if (id % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  };
  await run(WARMUP);
  const before = process.cpuUsage();
  await run(CALLS);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / CALLS;
}

const receiver = await startReceiver();
try {
  console.log(`CPU of this process per tools/call's telemetry, ${CALLS} calls each:`);
  for (const ratio of [undefined, ...RATIOS]) {
    const telemetry = new GatewayTelemetry(config(receiver.url, ratio), '0.0.0');
    const micros = await cpuPerCall(telemetry);
    await telemetry.shutdown();
    console.log(
      `  ${ratio === undefined ? 'off (no tracer)' : `sampleRatio ${ratio}`.padEnd(15)}  ${micros.toFixed(1)} µs`,
    );
  }
} finally {
  receiver.stop();
}
