import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferred, within } from '../gateway/events.ts';
import { type Connected, connectExample, EXAMPLES, firstText, nodeExample } from './spawn.ts';

describe('examples/legacy-server.ts with the SDK client', () => {
  let server: Connected;

  beforeAll(async () => {
    server = await connectExample(nodeExample('legacy-server.ts'));
  });

  afterAll(async () => {
    await server?.client.close();
  });

  const call = (name: string, args: Record<string, unknown> = {}) =>
    server.client.callTool({ name, arguments: args });

  it('lists every tool', async () => {
    const { tools } = await server.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        'array',
        'boolean',
        'crash',
        'echo',
        'json_text',
        'null',
        'number',
        'own_error',
        'plain_text',
        'progress',
        'slow',
        'stats',
        'throws',
      ].sort(),
    );
    expect(tools.find((tool) => tool.name === 'stats')?.outputSchema?.required).toEqual([
      'count',
      'sum',
      'mean',
    ]);
  });

  it('returns legacy payloads as text', async () => {
    expect(firstText(await call('plain_text'))).toBe('The quick brown fox jumps over the lazy dog.');
    expect(JSON.parse(firstText(await call('json_text')))).toMatchObject({ city: 'Lisbon', coastal: true });
    expect(JSON.parse(firstText(await call('array')))).toEqual([1, 'two', { three: 3 }, [4], null]);
    expect(firstText(await call('number'))).toBe('42.5');
    expect(firstText(await call('boolean'))).toBe('true');
    expect(firstText(await call('null'))).toBe('null');
  });

  it('echoes its text argument and rejects a missing one', async () => {
    expect(firstText(await call('echo', { text: 'héllo 👋' }))).toBe('héllo 👋');
    const bad = await call('echo', {});
    expect(bad.isError).toBe(true);
  });

  it('reports a thrown exception as an isError result', async () => {
    const result = await call('throws');
    expect(result.isError).toBe(true);
    expect(firstText(result)).toContain('The widget exploded');
  });

  it('returns its own structured error code', async () => {
    const result = await call('own_error');
    expect(result.isError).toBe(true);
    expect(JSON.parse(firstText(result))).toEqual({
      error: { code: 'WIDGET_LOCKED', message: 'The widget is locked by another user' },
    });
  });

  it('sleeps within bounds and refuses an unbounded sleep', async () => {
    expect(JSON.parse(firstText(await call('slow', { ms: 5 })))).toEqual({ slept_ms: 5 });
    expect((await call('slow', { ms: 60_000 })).isError).toBe(true);
  });

  it('stops a slow call when the caller cancels it, and keeps serving', async () => {
    const controller = new AbortController();
    const pending = server.client.callTool(
      { name: 'slow', arguments: { ms: 10_000 } },
      { signal: controller.signal },
    );
    controller.abort();
    await expect(pending).rejects.toThrow();
    expect(firstText(await call('echo', { text: 'still here' }))).toBe('still here');
  });

  it('returns structuredContent matching its outputSchema', async () => {
    const result = await call('stats', { values: [1, 2, 3, 4] });
    expect(result.structuredContent).toEqual({ count: 4, sum: 10, mean: 2.5 });
    expect((await call('stats', { values: [] })).structuredContent).toEqual({ count: 0, sum: 0, mean: null });
  });

  it('emits progress notifications and log messages', async () => {
    const logs: unknown[] = [];
    const allLogs = deferred();
    server.client.setNotificationHandler('notifications/message', (notification) => {
      logs.push(notification.params.data);
      if (logs.length === 3) allLogs.resolve();
    });
    // The client's own onprogress path drops notifications that it dispatches after
    // the response settled the request, so collect them with a handler of our own.
    const progress: unknown[] = [];
    const allProgress = deferred();
    server.client.setNotificationHandler('notifications/progress', (notification) => {
      progress.push(notification.params);
      if (progress.length === 3) allProgress.resolve();
    });
    const result = await server.client.callTool({
      name: 'progress',
      arguments: { steps: 3 },
      _meta: { progressToken: 'p-1' },
    });
    expect(JSON.parse(firstText(result))).toEqual({ steps: 3 });
    await within(allProgress.promise, 5_000, 'third progress notification');
    expect(progress).toEqual(
      [1, 2, 3].map((step) => ({ progressToken: 'p-1', progress: step, total: 3, message: `step ${step}` })),
    );
    await within(allLogs.promise, 5_000, 'third log message');
    expect(logs).toEqual([
      { step: 1, of: 3 },
      { step: 2, of: 3 },
      { step: 3, of: 3 },
    ]);
  });

  it('serves a resource and a prompt', async () => {
    const { resources } = await server.client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual(['legacy://readme']);
    const read = await server.client.readResource({ uri: 'legacy://readme' });
    expect(read.contents[0]).toMatchObject({ uri: 'legacy://readme', text: 'A legacy MCP server.' });
    const prompt = await server.client.getPrompt({ name: 'summarize', arguments: { text: 'abc' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'Summarize:\n\nabc' });
  });
});

describe('the crash tool of examples/legacy-server.ts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crash-'));
  const exitFile = join(dir, 'exit-code');
  let server: Connected | undefined;

  afterAll(async () => {
    await server?.client.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('closes the connection, writes to stderr and exits with code 3', async () => {
    // The SDK transport does not expose the exit code, so a tiny parent records it.
    const parent = [
      "const { spawnSync } = require('node:child_process');",
      "const { writeFileSync } = require('node:fs');",
      "const run = spawnSync(process.execPath, [process.argv[1]], { stdio: 'inherit' });",
      'writeFileSync(process.argv[2], String(run.status));',
      'process.exit(run.status ?? 1);',
    ].join('\n');
    const connected = await connectExample({
      command: process.execPath,
      args: ['-e', parent, `${EXAMPLES}legacy-server.ts`, exitFile],
    });
    server = connected;
    const closed = new Promise<void>((resolve) => {
      connected.client.onclose = () => resolve();
    });
    await expect(connected.client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow();
    await closed;
    expect(connected.stderr()).toContain('simulated crash');
    expect(readFileSync(exitFile, 'utf8')).toBe('3');
  });
});
