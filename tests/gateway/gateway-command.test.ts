import { existsSync, lstatSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latestCallLogLinks, readCallLog } from '../../src/gateway/operations/call-log.ts';
import { outputSchemaFor } from '../../src/mcp/dialects.ts';
import { defaultRegistry } from '../../src/schemas/index.ts';
import {
  type GatewayDir,
  gatewayDir,
  removeGatewayDirs,
  runCli,
  startGatewayHttp,
} from './gateway-process.ts';
import type { Running } from './processes.ts';

interface Envelope {
  schema_version: string;
  result: unknown;
  errors?: { code: string; message: string; details?: Record<string, unknown> }[];
  provenance?: { schema_version: string; run_id: string; tool: { name: string; version: string } };
}

type Result = Awaited<ReturnType<Client['callTool']>>;

function textOf(result: Result): string {
  const first = (result.content as { type: string; text?: string }[])[0];
  expect(first?.type).toBe('text');
  return first?.text ?? '';
}

/** The structured envelope, checked to be the same JSON as the text block. */
function envelopeOf(result: Result): Envelope {
  expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
  return result.structuredContent as unknown as Envelope;
}

describe('bin/mcp-envelope gateway over HTTP, in front of the example servers', () => {
  let paths: GatewayDir;
  let gateway: Running;
  let client: Client;
  let calls = 0;

  const call = async (name: string, args?: Record<string, unknown>, meta?: Record<string, unknown>) => {
    calls++;
    return client.callTool({ name, arguments: args ?? {}, ...(meta ? { _meta: meta } : {}) });
  };

  beforeAll(async () => {
    paths = gatewayDir();
    gateway = await startGatewayHttp(['--config', paths.config]);
    client = new Client({ name: 'gateway-command-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
    removeGatewayDirs();
  });

  it('prints the URL with the port the system chose', () => {
    expect(gateway.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*\/mcp$/);
    expect(gateway.url).not.toContain(':0/');
  });

  it('namespaces tools as <upstream>__<tool> and advertises the dialect envelope schema', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining(['legacy__plain_text', 'legacy__echo', 'envelopes__word_count', 'python__add']),
    );
    expect(names.every((name) => /^(legacy|envelopes|python|templates)__\w+$/.test(name))).toBe(true);
    const byUpstream = {
      legacy: 'prov-v0.1',
      envelopes: 'prov-v0.1',
      python: 'hosted-v2',
      templates: 'hosted-v2',
    } as const;
    for (const tool of tools) {
      const upstream = tool.name.split('__')[0] as keyof typeof byUpstream;
      expect(tool.outputSchema, tool.name).toEqual(outputSchemaFor(byUpstream[upstream]));
    }
    // The legacy stats tool has an outputSchema of its own; the envelope schema replaces it.
    expect(tools.find((tool) => tool.name === 'legacy__stats')?.outputSchema?.properties).toHaveProperty(
      'schema_version',
    );
  });

  it('wraps legacy text, JSON, array and number results as prov-v0.1 envelopes', async () => {
    const expected: [string, unknown][] = [
      ['plain_text', expect.any(String)],
      ['json_text', { city: 'Lisbon', population: 545_796, coastal: true, tags: ['capital', 'port'] }],
      ['array', [1, 'two', { three: 3 }, [4], null]],
      // A text that is a JSON scalar stays the text the tool wrote.
      ['number', '42.5'],
    ];
    for (const [tool, result] of expected) {
      const answer = await call(`legacy__${tool}`);
      expect(answer.isError ?? false).toBe(false);
      const envelope = envelopeOf(answer);
      expect(envelope.schema_version).toBe('mcp.envelope.v0.1');
      expect(envelope.result).toEqual(result);
      expect(defaultRegistry().validate('mcp.envelope.v0.1', envelope).valid, tool).toBe(true);
    }
  });

  it('answers the python upstream in hosted-v2, in the text block too', async () => {
    const answer = await call('python__add', { a: 2, b: 3.5 });
    expect(answer.isError ?? false).toBe(false);
    const text = JSON.parse(textOf(answer));
    expect(text).toEqual(answer.structuredContent);
    // The tool's text `5.5` is a string: a JSON scalar stays the text the tool wrote.
    expect(text).toMatchObject({ ok: true, tool: 'add', data: '5.5' });
    expect(defaultRegistry().validate('hosted.envelope.v2', text).valid).toBe(true);
    const failed = await call('python__fail');
    expect(failed.isError).toBe(true);
    expect(JSON.parse(textOf(failed))).toEqual(failed.structuredContent);
    expect(failed.structuredContent).toMatchObject({
      ok: false,
      tool: 'fail',
      error: { message: 'Something went wrong in the Python tool' },
    });
  });

  it("passes the envelope server's envelopes through unchanged (no double wrap)", async () => {
    // Exactly what the server sent: no meta added, nothing renamed, the payload's own schema_version kept.
    expect(envelopeOf(await call('envelopes__report'))).toEqual({
      schema_version: 'mcp.envelope.v0.1',
      result: { schema_version: 'report.v3', title: 'Quarterly', rows: [{ q: 1, total: 10.5 }] },
      warnings: [{ code: 'REPORT.PARTIAL', message: 'One source was unavailable' }],
    });
    const count = envelopeOf(await call('envelopes__word_count', { text: 'one two three' }));
    expect(count).toEqual({
      schema_version: 'mcp.envelope.v0.1',
      result: { words: 3, characters: 13 },
      meta: { adapter: 'mcp' },
    });
  });

  it("turns a thrown exception and a tool's own error into error envelopes, keeping the tool's code", async () => {
    const thrown = await call('legacy__throws');
    expect(thrown.isError).toBe(true);
    const thrownEnvelope = envelopeOf(thrown);
    expect(thrownEnvelope.result).toBeNull();
    expect(thrownEnvelope.errors?.[0]).toMatchObject({
      code: 'ADAPTER.EXECUTION.FAILED',
      message: expect.stringContaining('The widget exploded'),
    });
    const own = await call('legacy__own_error');
    expect(own.isError).toBe(true);
    expect(envelopeOf(own).errors?.[0]?.code).toBe('WIDGET_LOCKED');
    const order = await call('envelopes__place_order', { item: 'x', quantity: 0 });
    expect(order.isError).toBe(true);
    expect(envelopeOf(order).errors?.[0]?.code).toBe('ORDER.QUANTITY.INVALID');
  });

  it('answers invalid arguments with INVALID_INPUT and a pointer', async () => {
    const answer = await call('legacy__echo', { text: 5 });
    expect(answer.isError).toBe(true);
    const error = envelopeOf(answer).errors?.[0];
    expect(error?.code).toBe('INVALID_INPUT');
    expect(error?.details?.pointer).toBe('/text');
  });

  it('says clearly when a tool does not exist', async () => {
    calls++;
    const outcome = await client.callTool({ name: 'legacy__nope', arguments: {} }).then(
      (result) => JSON.stringify(result),
      (error: unknown) => String(error),
    );
    expect(outcome).toMatch(/legacy__nope/);
    expect(outcome).toMatch(/Unknown tool: legacy__nope/);
  });

  it('attaches a provenance record on opt-in and files it in the ledger', async () => {
    const answer = await call('legacy__echo', { text: 'prove it' }, { capture_provenance: true });
    const envelope = envelopeOf(answer);
    expect(envelope.provenance?.schema_version).toBe('prov.record.v0.1');
    // The tool is the upstream's, so its version is the upstream server's, not the gateway's.
    expect(envelope.provenance?.tool).toMatchObject({ name: 'echo', version: '1.0.0' });
    const runId = envelope.provenance?.run_id;
    const list = await runCli(['ledger', 'list', '--db', paths.ledger, '--json']);
    expect(list.code, list.stderr).toBe(0);
    const entries = (JSON.parse(list.stdout) as { entries: { run_id: string; tool: string }[] }).entries;
    expect(entries).toEqual([expect.objectContaining({ run_id: runId, upstream: 'legacy' })]);
    const verify = await runCli(['ledger', 'verify', '--db', paths.ledger]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  });

  it('restarts a crashed upstream: ADAPTER.EXECUTION.FAILED with the exit code, then the next call works', async () => {
    const crashed = await call('legacy__crash');
    expect(crashed.isError).toBe(true);
    const error = envelopeOf(crashed).errors?.[0];
    expect(error?.code).toBe('ADAPTER.EXECUTION.FAILED');
    expect(error?.details).toMatchObject({ exit_code: 3 });
    const after = await call('legacy__echo', { text: 'back' });
    expect(envelopeOf(after).result).toBe('back');
  });

  // Last in this group: it stops the gateway.
  it('writes one call-log line per call, with the .latest.jsonl symlink', async () => {
    // The link of this gateway instance, the only one logging here.
    const links = latestCallLogLinks(join(paths.logs, 'gateway'));
    expect(links).toHaveLength(1);
    const latest = links[0] ?? '';
    expect(lstatSync(latest).isSymbolicLink()).toBe(true);
    const file = realpathSync(latest);
    expect(existsSync(file)).toBe(true);
    // pino writes asynchronously; a gateway that has ended has flushed every line.
    await client.close();
    await gateway.stop();
    expect(gateway.child.exitCode).toBe(0);
    const lines = readCallLog(file);
    expect(lines.length).toBe(calls);
    expect(lines.every((line) => line.transport === 'http')).toBe(true);
    expect(lines).toContainEqual(
      expect.objectContaining({
        upstream: 'legacy',
        tool: 'crash',
        outcome: 'error',
        code: 'ADAPTER.EXECUTION.FAILED',
      }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ upstream: 'legacy', tool: 'nope', outcome: 'error', code: 'NOT_FOUND' }),
    );
  });
});

describe('bin/mcp-envelope gateway with a bad configuration', () => {
  afterAll(removeGatewayDirs);

  it('exits 2 with CONFIG_NOT_FOUND when the file is missing', async () => {
    const run = await runCli(['gateway', '--config', '/nonexistent/gateway.config.json', '--no-stdio']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('CONFIG_NOT_FOUND');
  });

  it('names the offending field with a JSON Pointer when the configuration is invalid', async () => {
    const paths = gatewayDir((config) => {
      (config.upstreams as { dialect: string }[])[1] = {
        ...(config.upstreams as { dialect: string }[])[1],
        dialect: 'no-such-dialect',
      } as { dialect: string };
    });
    const run = await runCli(['gateway', '--config', paths.config, '--no-stdio']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('CONFIG_INVALID');
    expect(run.stderr).toContain('/upstreams/1/dialect');
    writeFileSync(paths.config, '{"upstreams": [');
    const broken = await runCli(['gateway', '--config', paths.config, '--no-stdio']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('CONFIG_INVALID');
    expect(readFileSync(paths.config, 'utf8')).toContain('upstreams');
  });
});
