import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.ts';
import { statelessEraClient } from './era-2026-07-28.ts';
import { printed, within } from './events.ts';
import { type GatewayDir, gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { BIN, NODE, ROOT, type Running } from './processes.ts';

/**
 * Tool pinning through the real gateway: an upstream whose definitions change
 * at runtime (tests/fixtures/servers/shifting-tools.ts), clients of the
 * official SDK over HTTP, the `tools` CLI as a process on the same ledger.
 */

const SHIFTING = fileURLToPath(new URL('../fixtures/servers/shifting-tools.ts', import.meta.url));
const PINS = 'mcp-envelope/pins';
const run = promisify(execFile);

interface PinNote {
  kind: string;
  name: string;
  upstream: string;
  reason: string;
  pinned: string | null;
  current: string;
  renamedFrom?: string;
  action: string;
}

/** A gateway over the shifting upstream `docs`, pinning in `mode`, its variant kept in the folder. */
function pinnedDir(mode: 'off' | 'warn' | 'enforce'): GatewayDir & { state: string } {
  let state = '';
  const paths = gatewayDir((config) => {
    state = join(String((config.ledger as { path: string }).path), '..', 'variant');
    config.upstreams = [
      {
        name: 'docs',
        stdio: { command: 'node', args: [SHIFTING, state] },
        dialect: 'prov-v0.1',
        restart: { initialDelayMs: 50, maxDelayMs: 200, factor: 2, maxAttempts: 1000 },
      },
    ];
    config.auth = { required: false, tokens: [] };
    config.pinning = { mode };
  });
  return { ...paths, state };
}

const running: Running[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => {})));
  await Promise.all(running.splice(0).map((gateway) => gateway.stop()));
});
afterAll(() => removeGatewayDirs());

async function start(paths: GatewayDir): Promise<Running> {
  const gateway = await startGatewayHttp(['--config', paths.config]);
  running.push(gateway);
  return gateway;
}

/** A client that counts the tools/list_changed notifications it gets; `changed(n)` waits for the n-th. */
async function connect(gateway: Running, client = new Client({ name: 'pinning', version: '1.0.0' })) {
  let seen = 0;
  const waiting = new Set<() => void>();
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    seen++;
    for (const wake of waiting) wake();
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  clients.push(client);
  return {
    client,
    changed: (count: number) =>
      within(
        new Promise<void>((resolve) => {
          const wake = () => {
            if (seen >= count) resolve();
          };
          waiting.add(wake);
          wake();
        }),
        10_000,
        `tools/list_changed number ${count}`,
      ),
  };
}

async function listed(client: Client): Promise<{ names: string[]; notes: PinNote[] }> {
  const result = await client.listTools();
  const notes = (result._meta?.[PINS] as { changed: PinNote[] } | undefined)?.changed ?? [];
  return { names: result.tools.map((tool) => tool.name).sort(), notes };
}

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(NODE, [BIN, 'tools', ...args], { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

async function refusal(call: Promise<unknown>): Promise<{ code?: string; message: string }> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ProtocolError);
  const protocol = error as ProtocolError;
  return {
    code: (protocol.data as { canonical_code?: string } | undefined)?.canonical_code,
    message: protocol.message,
  };
}

describe('tool pinning', () => {
  it('warn: a changed tool is served, named in the list _meta, logged, counted and digested in its record', async () => {
    const paths = pinnedDir('warn');
    const gateway = await start(paths);
    const { client, changed } = await connect(gateway);
    expect(await listed(client)).toEqual({ names: ['control', 'search'], notes: [] });
    await client.callTool({ name: 'control', arguments: { variant: 'changed' } });
    await changed(1);
    const after = await listed(client);
    expect(after.names).toEqual(['control', 'search']);
    expect(after.notes).toEqual([
      expect.objectContaining({ kind: 'tool', name: 'search', reason: 'changed', action: 'served' }),
    ]);
    const [note] = after.notes;
    expect(note?.pinned).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(note?.current).not.toBe(note?.pinned);
    await printed(gateway, /TOOL_DEFINITION_CHANGED: upstream docs tool search differs from its pin/);
    const answer = await client.callTool({
      name: 'search',
      arguments: { query: 'q', key: 'k' },
      _meta: { capture_provenance: true },
    });
    expect(answer.isError).not.toBe(true);
    const health = (await (await fetch(new URL('/healthz', gateway.url))).json()) as Record<string, unknown>;
    expect(health.pin_changes).toEqual({ docs: { changes: 1, refused: 0 } });
    await gateway.stop();
    // The call's record names the definition it ran under: the changed one.
    const ledger = Ledger.open(paths.ledger, { readOnly: true });
    try {
      const [entry] = ledger.list({ tool: 'search' });
      expect(entry?.record.inputs[0]?.labels).toEqual({ role: 'arguments', tool_definition: note?.current });
    } finally {
      ledger.close();
    }
  });

  it('enforce: a changed tool is hidden and refused until `tools accept`, then served without a restart', async () => {
    const paths = pinnedDir('enforce');
    const gateway = await start(paths);
    const { client, changed } = await connect(gateway);
    expect((await listed(client)).names).toEqual(['control', 'search']);
    await client.callTool({ name: 'control', arguments: { variant: 'changed' } });
    await changed(1);
    const after = await listed(client);
    expect(after.names).toEqual(['control']);
    expect(after.notes).toEqual([expect.objectContaining({ name: 'search', action: 'hidden' })]);
    const refused = await refusal(client.callTool({ name: 'search', arguments: { query: 'q' } }));
    expect(refused.code).toBe('TOOL_DEFINITION_CHANGED');
    expect(refused.message).toContain('mcp-envelope tools accept --upstream docs --tool search');

    const diff = await cli('diff', '--db', paths.ledger);
    expect(diff.code).toBe(1);
    expect(diff.stdout).toContain('docs tool search: changed');
    expect(diff.stdout).toMatch(
      /description:\n {4}- "Searches the documents"\n {4}\+ "Searches the documents\. Before/,
    );
    expect(diff.stdout).toContain('    +     "key": {');
    const accepted = await cli('accept', '--db', paths.ledger, '--upstream', 'docs', '--tool', 'search');
    expect(accepted).toMatchObject({
      code: 0,
      stdout: expect.stringContaining(`accepted docs tool search ${after.notes[0]?.current}`),
    });

    expect(await listed(client)).toEqual({ names: ['control', 'search'], notes: [] });
    const answer = await client.callTool({ name: 'search', arguments: { query: 'now', key: 'k' } });
    expect(answer.isError).not.toBe(true);
    expect((await cli('diff', '--db', paths.ledger)).code).toBe(0);
  });

  it('enforce: the same definition under a new name is a rename, hidden until accepted', async () => {
    const paths = pinnedDir('enforce');
    const gateway = await start(paths);
    const { client, changed } = await connect(gateway);
    await listed(client);
    await client.callTool({ name: 'control', arguments: { variant: 'renamed' } });
    await changed(1);
    const after = await listed(client);
    expect(after.names).toEqual(['control']);
    expect(after.notes).toEqual([
      expect.objectContaining({ name: 'find', reason: 'renamed', renamedFrom: 'search', action: 'hidden' }),
    ]);
    expect((await refusal(client.callTool({ name: 'find', arguments: { query: 'q' } }))).code).toBe(
      'TOOL_DEFINITION_CHANGED',
    );
    const diff = await cli('diff', '--db', paths.ledger, '--upstream', 'docs', '--tool', 'find', '--json');
    expect(JSON.parse(diff.stdout)).toMatchObject({
      pending: [{ name: 'find', reason: 'renamed', renamed_from: 'search', changed_members: ['name'] }],
    });
    expect((await cli('accept', '--db', paths.ledger, '--upstream', 'docs', '--tool', 'find')).code).toBe(0);
    expect((await listed(client)).names).toEqual(['control', 'find']);
    expect((await client.callTool({ name: 'find', arguments: { query: 'q' } })).isError).not.toBe(true);
  });

  it('enforce: an upstream restarted with a changed definition is caught when it is back', async () => {
    const paths = pinnedDir('enforce');
    const gateway = await start(paths);
    const { client } = await connect(gateway);
    expect((await listed(client)).names).toEqual(['control', 'search']);
    writeFileSync(paths.state, 'changed');
    await client.callTool({ name: 'control', arguments: { exit: true } }).catch(() => {});
    await printed(gateway, /TOOL_DEFINITION_CHANGED: upstream docs tool search/);
    expect((await listed(client)).names).toEqual(['control']);
  });

  it('pins survive a gateway restart on the same ledger', async () => {
    const paths = pinnedDir('enforce');
    const first = await start(paths);
    const one = await connect(first);
    expect((await listed(one.client)).names).toEqual(['control', 'search']);
    await one.client.close();
    await first.stop();
    writeFileSync(paths.state, 'changed');
    const second = await start(paths);
    const two = await connect(second);
    expect(await listed(two.client)).toMatchObject({
      names: ['control'],
      notes: [{ name: 'search', reason: 'changed' }],
    });
  });

  it('a 2026-07-28 client gets the same notes', async () => {
    const paths = pinnedDir('warn');
    const gateway = await start(paths);
    const { client } = await connect(gateway, statelessEraClient());
    expect((await listed(client)).notes).toEqual([]);
    await client.callTool({ name: 'control', arguments: { variant: 'changed' } });
    expect((await listed(client)).notes).toEqual([
      expect.objectContaining({ name: 'search', reason: 'changed' }),
    ]);
  });

  it('off: nothing is pinned or noted', async () => {
    const paths = pinnedDir('off');
    const gateway = await start(paths);
    const { client, changed } = await connect(gateway);
    await listed(client);
    await client.callTool({ name: 'control', arguments: { variant: 'changed' } });
    await changed(1);
    expect(await listed(client)).toEqual({ names: ['control', 'search'], notes: [] });
    await gateway.stop();
    const pins = await cli('list', '--db', paths.ledger, '--json');
    expect(JSON.parse(pins.stdout)).toEqual({ pins: [] });
  });
});
