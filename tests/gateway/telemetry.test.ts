import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './gateway-process.ts';
import { BIN, gatewayStdio, NODE, ROOT, type Running, stopChild } from './processes.ts';

/**
 * OpenTelemetry through the real gateway: a 2026-07-28 client sends its trace
 * context in `_meta`, a 2025-11-25 session client in the HTTP `traceparent`
 * header; the gateway's spans reach an OTLP/HTTP receiver in this process, and
 * the upstream (tests/fixtures/servers/traced.ts, one process per protocol
 * revision) answers the trace context it was sent, so the chain client →
 * gateway → upstream is checked end to end. `/metrics` is read with a
 * Prometheus parser. A gateway without telemetry exports nothing.
 */

const TRACED = fileURLToPath(new URL('../fixtures/servers/traced.ts', import.meta.url));
const TOKEN = 'telemetry-token-0123456789abcdef';
const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const HEADER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const HEADER_SPAN = '00f067aa0ba902b7';
const LIST_TRACE = '11111111111111111111111111111111';
const PROMPT_TRACE = '22222222222222222222222222222222';
const MISSING_TRACE = '33333333333333333333333333333333';
const UNSAMPLED_TRACE = '44444444444444444444444444444444';
const SERVER = 2;
const CLIENT = 3;
const STATUS_ERROR = 2;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: OtlpValue }[];
  status?: { code?: number };
}

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

interface Receiver {
  url: string;
  received: Received[];
  spans(): OtlpSpan[];
  /** Settles once what was received satisfies `done` (checked at each arrival). */
  until(done: () => boolean): Promise<void>;
  close(): Promise<void>;
}

/** An OTLP/HTTP collector on 127.0.0.1: takes POST /v1/traces and /v1/metrics as JSON. */
async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const waiting = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
      for (const check of [...waiting]) check();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const spans = () =>
    received
      .filter((entry) => entry.path === '/v1/traces')
      .flatMap((entry) =>
        (entry.body as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap(
          (resource) => resource.scopeSpans.flatMap((scope) => scope.spans),
        ),
      );
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    spans,
    until: (done) =>
      new Promise((resolve) => {
        const check = () => {
          if (!done()) return;
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function attribute(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const value = span.attributes.find((entry) => entry.key === key)?.value;
  return value?.stringValue ?? value?.intValue ?? value?.boolValue;
}

const folders: string[] = [];

/**
 * A gateway of two traced upstreams, one per protocol revision; with `telemetry`,
 * tracing to `receiver` and signing its records with a key made here.
 */
async function gatewayConfig(
  receiver: string | undefined,
  telemetry: boolean,
): Promise<{ dir: string; file: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'telemetry-'));
  folders.push(dir);
  if (telemetry) {
    mkdirSync(join(dir, 'keys'));
    const keygen = await runCli(['keygen', '--out', join(dir, 'keys', 'gateway')]);
    expect(keygen.code, keygen.stderr).toBe(0);
  }
  const config = {
    upstreams: [
      { name: 'modern', stdio: { command: NODE, args: [TRACED] }, protocol: '2026-07-28' },
      { name: 'legacy', stdio: { command: NODE, args: [TRACED] }, protocol: '2025-11-25' },
    ],
    listen: { stdio: false, http: { host: '127.0.0.1', port: 0 } },
    // Tokens required (so /metrics is served by default) only where telemetry is on.
    ...(telemetry ? { auth: { tokens: [{ name: 'tester', token: TOKEN, tier: 'pro' }] } } : {}),
    ledger: { path: join(dir, 'ledger.sqlite') },
    // One fail call an hour: the second is refused before it reaches the upstream.
    rateLimits: [{ bucket: 'one-failure', limit: 1, windowMs: 3_600_000, upstream: 'legacy', tool: 'fail' }],
    logs: { dir: join(dir, 'runs') },
    ...(telemetry
      ? {
          signing: { keyFile: 'keys/gateway.private.pem' },
          telemetry: {
            serviceName: 'telemetry-test',
            traces: { enabled: true },
            otlp: { endpoint: receiver, headers: { 'x-collector': 'test' } },
          },
        }
      : {}),
  };
  const file = join(dir, 'gateway.config.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { dir, file };
}

const MODULE_TRACE = fileURLToPath(new URL('../fixtures/hooks/module-trace.mjs', import.meta.url));

/** The OpenTelemetry modules a gateway started with `modulesFile` has loaded so far. */
function openTelemetryModules(modulesFile: string): string[] {
  try {
    return readFileSync(modulesFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** A gateway whose OpenTelemetry modules, as it loads them, are listed in `<dir>/modules.txt`. */
function startGateway(file: string, env: NodeJS.ProcessEnv = {}): Promise<Running> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, ['--import', MODULE_TRACE, BIN, 'gateway', '--config', file], {
      cwd: ROOT,
      env: { ...process.env, MODULE_TRACE_FILE: join(dirname(file), 'modules.txt'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      err += text;
      const match = /^Streamable HTTP: (http:\/\/\S+)$/m.exec(err);
      if (match?.[1]) resolve({ child, url: match[1], stderr: () => err, stop: () => stopChild(child) });
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}: ${err}`)));
  });
}

async function connect(url: string, headers: Record<string, string>, modern: boolean): Promise<Client> {
  const client = new Client(
    { name: 'telemetry-test', version: '1.0.0' },
    modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return client;
}

/** The `_meta` the upstream says it received, from the envelope the gateway wrapped its answer in. */
function upstreamMeta(result: CallToolResult): Record<string, unknown> {
  return (result.structuredContent as { result: { meta: Record<string, unknown> } }).result.meta;
}

function callLogLines(dir: string): Record<string, unknown>[] {
  const logs = join(dir, 'runs');
  return readdirSync(logs, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.jsonl') && !file.endsWith('.latest.jsonl'))
    .flatMap((file) => readFileSync(join(logs, file), 'utf8').split('\n').filter(Boolean))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const bearer = { authorization: `Bearer ${TOKEN}` };

describe('telemetry on', () => {
  let receiver: Receiver;
  let gateway: Running;
  let dir: string;
  let modern: Client;
  let legacy: Client;
  let legacySession: string;
  let viaMeta: CallToolResult;
  let viaHeader: CallToolResult;
  let failedCall: CallToolResult;
  let limitedCall: CallToolResult;
  let promptMeta: Record<string, unknown>;
  let resourceMeta: Record<string, unknown>;
  let missingPrompt: unknown;
  let unsampledCall: CallToolResult;

  beforeAll(async () => {
    receiver = await startReceiver();
    const config = await gatewayConfig(receiver.url, true);
    dir = config.dir;
    gateway = await startGateway(config.file);
    modern = await connect(gateway.url, bearer, true);
    legacy = await connect(
      gateway.url,
      { ...bearer, traceparent: `00-${HEADER_TRACE}-${HEADER_SPAN}-01` },
      false,
    );
    legacySession = (legacy.transport as StreamableHTTPClientTransport).sessionId as string;
    viaMeta = (await modern.callTool({
      name: 'modern__context',
      arguments: {},
      _meta: {
        traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
        tracestate: 'vendor=one',
        'com.example/keep': 'kept',
        // Asks for a provenance record, so the ledger gets one to append.
        capture_provenance: true,
      },
    })) as CallToolResult;
    // A caller that decided not to sample its trace: the gateway records none of the call either.
    unsampledCall = (await modern.callTool({
      name: 'modern__context',
      arguments: {},
      _meta: { traceparent: `00-${UNSAMPLED_TRACE}-${CLIENT_SPAN}-00` },
    })) as CallToolResult;
    viaHeader = (await legacy.callTool({ name: 'legacy__context', arguments: {} })) as CallToolResult;
    failedCall = (await legacy.callTool({ name: 'legacy__fail', arguments: {} })) as CallToolResult;
    limitedCall = (await legacy.callTool({ name: 'legacy__fail', arguments: {} })) as CallToolResult;
    // Requests other than tools/call: a list gathered from both upstreams, a prompt and a
    // resource (each answering the _meta it reached the upstream with), a refusal, a ping.
    await modern.listPrompts({ _meta: { traceparent: `00-${LIST_TRACE}-${CLIENT_SPAN}-01` } });
    const prompt = await modern.getPrompt({
      name: 'modern__context',
      _meta: { traceparent: `00-${PROMPT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=two' },
    });
    promptMeta = JSON.parse((prompt.messages[0] as { content: { text: string } }).content.text).meta;
    const read = await legacy.readResource({ uri: 'trace://legacy/context' });
    resourceMeta = JSON.parse((read.contents[0] as { text: string }).text).meta;
    missingPrompt = await modern
      .getPrompt({ name: 'modern__missing', _meta: { traceparent: `00-${MISSING_TRACE}-${CLIENT_SPAN}-01` } })
      .catch((error: unknown) => error);
    await legacy.ping();
    // Each request makes a span and its children; wait until every request's has arrived.
    const expected = [
      'tools/call modern__context',
      'tools/call legacy__context',
      'prompts/list',
      'prompts/get modern__context',
      'resources/read',
      'prompts/get modern__missing',
      'ping',
    ];
    await receiver.until(() =>
      expected.every((name) => receiver.spans().some((span) => span.kind === SERVER && span.name === name)),
    );
    await receiver.until(
      () => receiver.spans().filter((span) => span.name.startsWith('tools/call legacy__fail')).length >= 2,
    );
  }, 60_000);

  afterAll(async () => {
    await modern?.close();
    await legacy?.close();
    await gateway?.stop();
    await receiver?.close();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  function root(tool: string): OtlpSpan {
    const found = receiver.spans().find((span) => span.kind === SERVER && span.name === `tools/call ${tool}`);
    if (!found)
      throw new Error(`no root span for ${tool}: ${JSON.stringify(receiver.spans().map((s) => s.name))}`);
    return found;
  }

  function children(parent: OtlpSpan): OtlpSpan[] {
    return receiver.spans().filter((span) => span.parentSpanId === parent.spanId);
  }

  it('continues the trace a 2026-07-28 client sent in _meta, and sends the upstream its own span as parent', async () => {
    const server = root('modern__context');
    expect(server.traceId).toBe(CLIENT_TRACE);
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(attribute(server, 'mcp.method.name')).toBe('tools/call');
    expect(attribute(server, 'gen_ai.tool.name')).toBe('modern__context');
    expect(attribute(server, 'mcp.protocol.version')).toBe('2026-07-28');
    expect(attribute(server, 'jsonrpc.request.id')).toEqual(expect.any(String));
    // The 2026-07-28 wire has no sessions.
    expect(attribute(server, 'mcp.session.id')).toBeUndefined();

    const kids = children(server);
    expect(kids.map((span) => span.name).sort()).toEqual([
      'envelope',
      'record',
      'tools/call context',
      'validate',
    ]);
    const upstreamCall = kids.find((span) => span.kind === CLIENT) as OtlpSpan;
    expect(upstreamCall.traceId).toBe(CLIENT_TRACE);

    // What the upstream got: the gateway's upstream-call span as parent, the rest of _meta as sent.
    const meta = upstreamMeta(viaMeta);
    expect(meta.traceparent).toBe(`00-${CLIENT_TRACE}-${upstreamCall.spanId}-01`);
    expect(meta.tracestate).toBe('vendor=one');
    expect(meta['com.example/keep']).toBe('kept');
  });

  it("follows a caller's unsampled flag: no span is recorded, and the upstream is told the trace is not sampled", () => {
    const sent = upstreamMeta(unsampledCall).traceparent as string;
    expect(sent).toMatch(new RegExp(`^00-${UNSAMPLED_TRACE}-[0-9a-f]{16}-00$`));
    // The gateway's own (unrecorded) span is the upstream's parent, not the caller's.
    expect(sent).not.toContain(CLIENT_SPAN);
    // Spans of later calls have arrived; none of this trace's.
    expect(receiver.spans().filter((span) => span.traceId === UNSAMPLED_TRACE)).toEqual([]);
    // Its call-log line still names the trace.
    const lines = callLogLines(dir).filter((entry) => entry.traceId === UNSAMPLED_TRACE);
    expect(lines).toHaveLength(1);
  });

  it('takes the parent from the HTTP traceparent header of a 2025-11-25 session', () => {
    const server = root('legacy__context');
    expect(server.traceId).toBe(HEADER_TRACE);
    expect(server.parentSpanId).toBe(HEADER_SPAN);
    expect(attribute(server, 'mcp.protocol.version')).toBe('2025-11-25');
    expect(attribute(server, 'mcp.session.id')).toBe(legacySession);
    const upstreamCall = children(server).find((span) => span.kind === CLIENT) as OtlpSpan;
    expect(upstreamMeta(viaHeader).traceparent).toBe(`00-${HEADER_TRACE}-${upstreamCall.spanId}-01`);
  });

  it('marks a call whose tool answered isError as a failed span with its canonical code', () => {
    expect(failedCall.isError).toBe(true);
    // The first fail call ran (the second was rate limited): its line names its span.
    const line = callLogLines(dir).find((entry) => entry.tool === 'fail');
    const server = receiver.spans().find((span) => span.spanId === line?.spanId) as OtlpSpan;
    expect(server.name).toBe('tools/call legacy__fail');
    expect(server.status?.code).toBe(STATUS_ERROR);
    expect(line?.outcome).toBe('error');
    expect(typeof line?.code).toBe('string');
    expect(attribute(server, 'error.type')).toBe(line?.code);
    const upstreamCall = children(server).find((span) => span.kind === CLIENT) as OtlpSpan;
    expect(upstreamCall.status?.code).toBe(STATUS_ERROR);
    expect(attribute(upstreamCall, 'error.type')).toBe('tool_error');
  });

  it('writes the trace and span ids of each call in its call-log line', () => {
    const line = callLogLines(dir).find((entry) => entry.tool === 'context' && entry.upstream === 'modern');
    const server = root('modern__context');
    expect(line?.traceId).toBe(server.traceId);
    expect(line?.spanId).toBe(server.spanId);
  });

  function server(name: string, traceId?: string): OtlpSpan {
    const found = receiver
      .spans()
      .find((span) => span.kind === SERVER && span.name === name && (!traceId || span.traceId === traceId));
    if (!found) throw new Error(`no span ${name}: ${JSON.stringify(receiver.spans().map((s) => s.name))}`);
    return found;
  }

  it('makes a span of initialize, with the HTTP traceparent as parent', () => {
    const initialize = server('initialize', HEADER_TRACE);
    expect(initialize.parentSpanId).toBe(HEADER_SPAN);
    expect(attribute(initialize, 'mcp.method.name')).toBe('initialize');
    expect(attribute(initialize, 'jsonrpc.request.id')).toEqual(expect.any(String));
    expect(attribute(initialize, 'mcp.protocol.version')).toBe('2025-11-25');
    // initialize asks no upstream: the gateway answers with what it learned of them when they started.
    expect(children(initialize)).toEqual([]);
    // Notifications (notifications/initialized) have no span.
    expect(receiver.spans().filter((span) => span.name.startsWith('notifications/'))).toEqual([]);
  });

  it('gives a list gathered from two upstreams one CLIENT child per upstream', () => {
    const list = server('prompts/list', LIST_TRACE);
    expect(list.parentSpanId).toBe(CLIENT_SPAN);
    expect(attribute(list, 'mcp.method.name')).toBe('prompts/list');
    expect(attribute(list, 'mcp.protocol.version')).toBe('2026-07-28');
    expect(attribute(list, 'mcp.session.id')).toBeUndefined();
    expect(list.status?.code).not.toBe(STATUS_ERROR);
    const kids = children(list);
    expect(
      kids.map((span) => [span.kind, span.name, attribute(span, 'mcp_envelope.upstream')]).sort(),
    ).toEqual([
      [CLIENT, 'prompts/list', 'legacy'],
      [CLIENT, 'prompts/list', 'modern'],
    ]);
  });

  it('names a prompts/get span by its prompt and sends the upstream its CLIENT span in _meta', () => {
    const get = server('prompts/get modern__context', PROMPT_TRACE);
    expect(get.parentSpanId).toBe(CLIENT_SPAN);
    expect(attribute(get, 'gen_ai.prompt.name')).toBe('modern__context');
    const [upstreamGet, ...others] = children(get);
    expect(others).toEqual([]);
    expect(upstreamGet?.kind).toBe(CLIENT);
    expect(upstreamGet?.name).toBe('prompts/get context');
    expect(attribute(upstreamGet as OtlpSpan, 'gen_ai.prompt.name')).toBe('context');
    expect(promptMeta.traceparent).toBe(`00-${PROMPT_TRACE}-${upstreamGet?.spanId}-01`);
    expect(promptMeta.tracestate).toBe('vendor=two');
  });

  it('records a resource read by its URI (not in the span name) with the session of a 2025-11-25 client', () => {
    const read = server('resources/read', HEADER_TRACE);
    expect(read.parentSpanId).toBe(HEADER_SPAN);
    expect(attribute(read, 'mcp.resource.uri')).toBe('trace://legacy/context');
    expect(attribute(read, 'mcp.session.id')).toBe(legacySession);
    const [upstreamRead] = children(read);
    expect(upstreamRead?.kind).toBe(CLIENT);
    expect(attribute(upstreamRead as OtlpSpan, 'mcp.resource.uri')).toBe('trace://context');
    expect(resourceMeta.traceparent).toBe(`00-${HEADER_TRACE}-${upstreamRead?.spanId}-01`);
  });

  it('marks a request answered with a JSON-RPC error as failed, with its code as error.type', () => {
    const code = (missingPrompt as { code?: number }).code;
    expect(typeof code).toBe('number');
    const get = server('prompts/get modern__missing', MISSING_TRACE);
    expect(get.status?.code).toBe(STATUS_ERROR);
    expect(attribute(get, 'error.type')).toBe(String(code));
    expect(attribute(get, 'rpc.response.status_code')).toBe(String(code));
    // The upstream refused it: its CLIENT span failed too.
    const [upstreamGet] = children(get);
    expect(upstreamGet?.status?.code).toBe(STATUS_ERROR);
    expect(attribute(upstreamGet as OtlpSpan, 'error.type')).toEqual(expect.any(String));
  });

  it('makes a span of ping, which the gateway answers itself', () => {
    const ping = receiver.spans().filter((span) => span.kind === SERVER && span.name === 'ping');
    expect(ping).toHaveLength(1);
    expect(ping[0]?.traceId).toBe(HEADER_TRACE);
    expect(children(ping[0] as OtlpSpan)).toEqual([]);
  });

  it("puts the call's trace and span ids on its provenance record, which still verifies under the key", async () => {
    const server = root('modern__context');
    const db = new DatabaseSync(join(dir, 'ledger.sqlite'), { readOnly: true });
    const leaves = (db.prepare('SELECT leaf FROM records ORDER BY seq').all() as { leaf: Uint8Array }[]).map(
      (row) => JSON.parse(Buffer.from(row.leaf).toString('utf8')) as { record: Record<string, unknown> },
    );
    db.close();
    // The one call that asked for a record (capture_provenance).
    expect(leaves).toHaveLength(1);
    const record = leaves[0]?.record as {
      inputs: { artifact_id: string; labels?: Record<string, string> }[];
    };
    const args = record.inputs.find((input) => input.artifact_id === 'arguments');
    // Beside the labels every record's arguments carry (their role, the pinned definition).
    expect(args?.labels).toMatchObject({ role: 'arguments', trace_id: CLIENT_TRACE, span_id: server.spanId });
    expect(args?.labels?.trace_id).toMatch(/^[0-9a-f]{32}$/);
    // The answer carries the same record.
    const sent = (viaMeta.structuredContent as { provenance?: unknown }).provenance;
    expect(sent).toEqual(record);
    const file = join(dir, 'record.json');
    writeFileSync(file, JSON.stringify(record));
    const run = await runCli(['verify', file, '--public-key', join(dir, 'keys', 'gateway.public.pem')]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/VERIFIED.*signature/);
  });

  it('loads the OpenTelemetry SDK when telemetry is configured', () => {
    const loaded = openTelemetryModules(join(dir, 'modules.txt'));
    expect(loaded.some((url) => url.includes('/@opentelemetry/sdk-trace/'))).toBe(true);
  });

  it('exports to the configured endpoint with the configured headers and service name', () => {
    const traces = receiver.received.filter((entry) => entry.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    expect(traces[0]?.headers['x-collector']).toBe('test');
    const body = traces[0]?.body as { resourceSpans: unknown[] } | undefined;
    expect(JSON.stringify(body?.resourceSpans[0])).toContain('telemetry-test');
  });

  it('serves /metrics behind the bearer token, with calls by upstream, tool, outcome and code', async () => {
    const metricsUrl = new URL('/metrics', gateway.url);
    const refused = await fetch(metricsUrl);
    await refused.text();
    expect(refused.status).toBe(401);
    const answer = await fetch(metricsUrl, { headers: bearer });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const text = await answer.text();
    const families = parsePrometheusTextFormat(text);
    const family = (name: string) => families.find((entry) => entry.name === name);

    const calls = family('mcp_envelope_gateway_calls_total');
    expect(calls?.type).toBe('COUNTER');
    const failedLine = callLogLines(dir).find((entry) => entry.tool === 'fail');
    expect(calls?.metrics).toEqual(
      expect.arrayContaining([
        // Counted whether or not the trace was sampled.
        { labels: { upstream: 'modern', tool: 'modern__context', outcome: 'ok' }, value: '2' },
        { labels: { upstream: 'legacy', tool: 'legacy__context', outcome: 'ok' }, value: '1' },
        {
          labels: {
            upstream: 'legacy',
            tool: 'legacy__fail',
            outcome: 'error',
            code: String(failedLine?.code),
          },
          value: '1',
        },
      ]),
    );

    const duration = family('mcp_server_operation_duration_seconds');
    expect(duration?.type).toBe('HISTOGRAM');
    // The semantic conventions' boundaries for MCP operation durations.
    expect(
      Object.keys(duration?.metrics[0]?.buckets ?? {})
        .map((le) => (le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le)))
        .sort((a, b) => a - b),
    ).toEqual([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, Number.POSITIVE_INFINITY]);
    const counted = (method: string) =>
      text
        .split('\n')
        .filter(
          (line) =>
            line.startsWith('mcp_server_operation_duration_seconds_count') &&
            line.includes(`mcp_method_name="${method}"`),
        )
        .map((line) => Number(line.split(' ').at(-1)))
        .reduce((sum, count) => sum + count, 0);
    expect(counted('tools/call')).toBe(5);
    // Every operation is timed, not only tool calls; a failed one with its JSON-RPC code as error.type.
    expect(counted('initialize')).toBe(1);
    expect(counted('server/discover')).toBe(1);
    expect(counted('prompts/list')).toBe(1);
    expect(counted('ping')).toBe(1);
    expect(text).toContain(
      'mcp_server_operation_duration_seconds_count{mcp_method_name="prompts/get",gen_ai_prompt_name="modern__missing",error_type="-32602"} 1',
    );

    // The second fail call was refused by its rate limit, before the tool ran.
    expect(limitedCall.isError).toBe(true);
    expect(calls?.metrics).toEqual(
      expect.arrayContaining([
        {
          labels: { upstream: 'legacy', tool: 'legacy__fail', outcome: 'error', code: 'RATE_LIMITED' },
          value: '1',
        },
      ]),
    );
    expect(family('mcp_envelope_gateway_calls_refused_total')?.metrics).toEqual([
      { labels: { upstream: 'legacy', tool: 'legacy__fail', code: 'RATE_LIMITED' }, value: '1' },
    ]);

    const states = family('mcp_envelope_gateway_upstream_state');
    expect(states?.metrics).toEqual(
      expect.arrayContaining([
        { labels: { mcp_envelope_upstream: 'modern', state: 'ready' }, value: '1' },
        { labels: { mcp_envelope_upstream: 'legacy', state: 'ready' }, value: '1' },
        { labels: { mcp_envelope_upstream: 'legacy', state: 'gave_up' }, value: '0' },
      ]),
    );
    expect(family('mcp_envelope_gateway_upstream_restarts_total')?.metrics).toEqual(
      expect.arrayContaining([{ labels: { mcp_envelope_upstream: 'modern' }, value: '0' }]),
    );
    expect(family('mcp_envelope_gateway_ledger_append_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(text).toMatch(
      /^mcp_envelope_gateway_ledger_append_duration_seconds_count\{records="single"\} 1$/m,
    );
  });
});

describe('telemetry off (the default without tokens)', () => {
  it('loads no OpenTelemetry module, creates no exporter, leaves the client trace context to the upstream, and serves no /metrics', async () => {
    const receiver = await startReceiver();
    const { dir, file } = await gatewayConfig(undefined, false);
    // Were an SDK exporter made anyway, the standard variable would send it here.
    const gateway = await startGateway(file, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    try {
      const client = await connect(gateway.url, {}, true);
      const traceparent = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
      const result = (await client.callTool({
        name: 'modern__context',
        arguments: {},
        _meta: { traceparent },
      })) as CallToolResult;
      expect(upstreamMeta(result).traceparent).toBe(traceparent);
      const metrics = await fetch(new URL('/metrics', gateway.url));
      await metrics.text();
      expect(metrics.status).toBe(404);
      // Started, listed, called and asked for metrics: not one module of the SDK (nor the API) was loaded.
      expect(openTelemetryModules(join(dir, 'modules.txt'))).toEqual([]);
      await client.close();
    } finally {
      // Stopping flushes whatever telemetry a gateway has: none must arrive.
      await gateway.stop();
    }
    expect(receiver.received).toEqual([]);
    await receiver.close();
  }, 60_000);
});

describe('telemetry over stdio, with the skills and completion methods of two upstreams', () => {
  const ROUTING = fileURLToPath(new URL('../fixtures/servers/routing.ts', import.meta.url));
  let receiver: Receiver;
  let client: Client;

  beforeAll(async () => {
    receiver = await startReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'telemetry-stdio-'));
    folders.push(dir);
    const file = join(dir, 'gateway.config.json');
    writeFileSync(
      file,
      JSON.stringify({
        upstreams: ['alpha', 'beta'].map((label) => ({
          name: label,
          stdio: { command: NODE, args: [ROUTING, '--label', label] },
        })),
        ledger: { enabled: false },
        logs: { enabled: false },
        telemetry: { traces: { enabled: true }, otlp: { endpoint: receiver.url } },
      }),
    );
    client = new Client({ name: 'telemetry-stdio', version: '1.0.0' });
    await client.connect(gatewayStdio(file, { args: ['--stdio', '--no-http'] }));
    const skills = new SkillsClient(client);
    await skills.list();
    await skills.get('skill://beta/beta-skill/SKILL.md');
    await client.complete({
      ref: { type: 'ref/prompt', name: 'alpha__greet' },
      argument: { name: 'who', value: '' },
    });
    // Closing stops the gateway, which exports what it has buffered.
    await client.close();
    const names = ['skills/list', 'skills/get', 'completion/complete alpha__greet'];
    await receiver.until(() => names.every((name) => receiver.spans().some((span) => span.name === name)));
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
  });

  const span = (name: string) =>
    receiver.spans().find((entry) => entry.kind === SERVER && entry.name === name) as OtlpSpan;
  const childrenOf = (parent: OtlpSpan) =>
    receiver.spans().filter((entry) => entry.parentSpanId === parent.spanId);

  it('traces skills/list with a CLIENT child for each upstream, over the pipe and with no session', () => {
    const list = span('skills/list');
    expect(attribute(list, 'network.transport')).toBe('pipe');
    expect(attribute(list, 'mcp.session.id')).toBeUndefined();
    expect(
      childrenOf(list)
        .map((child) => [child.kind, attribute(child, 'mcp_envelope.upstream')])
        .sort(),
    ).toEqual([
      [CLIENT, 'alpha'],
      [CLIENT, 'beta'],
    ]);
  });

  it('records the URI skills/get asked for, and the one its upstream was asked', () => {
    const get = span('skills/get');
    expect(attribute(get, 'mcp.resource.uri')).toBe('skill://beta/beta-skill/SKILL.md');
    const [upstream, ...others] = childrenOf(get);
    expect(others).toEqual([]);
    expect(attribute(upstream as OtlpSpan, 'mcp.resource.uri')).toBe('skill://beta-skill/SKILL.md');
    expect(attribute(upstream as OtlpSpan, 'mcp_envelope.upstream')).toBe('beta');
  });

  it('names a completion of a prompt argument by its prompt', () => {
    const complete = span('completion/complete alpha__greet');
    expect(attribute(complete, 'gen_ai.prompt.name')).toBe('alpha__greet');
    expect(childrenOf(complete).map((child) => child.name)).toEqual(['completion/complete greet']);
  });
});
