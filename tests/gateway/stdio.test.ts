import { spawn } from 'node:child_process';
import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferred, within } from './events.ts';
import { BIN, FIXTURE, initializeMessage, NODE, ROOT, stopChild } from './processes.ts';

function textOf(result: { content?: unknown }): string {
  const first = (result.content as { type: string; text?: string }[] | undefined)?.[0];
  return first?.text ?? '';
}

let samplingAborts = 0;
/** Resolves at the next sampling request the upstream withdraws. */
let samplingAborted = deferred();

/** An SDK v2 client talking to `bin/mcp-envelope proxy` as a real process over stdio. */
async function connectProxy(
  flags: string[] = [],
): Promise<{ client: Client; transport: StdioClientTransport }> {
  const client = new Client(
    { name: 'stdio-test', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
  );
  client.setRequestHandler('sampling/createMessage', async (request, ctx) => {
    if ((request.params.messages[0]?.content as { text?: string } | undefined)?.text === 'slow') {
      // Waits until the server gives up; the abort proves its cancellation came through.
      await new Promise<void>((resolve) => ctx.mcpReq.signal.addEventListener('abort', () => resolve()));
      samplingAborts++;
      samplingAborted.resolve();
      throw new Error('cancelled');
    }
    return {
      role: 'assistant',
      model: 'test-model',
      content: {
        type: 'text',
        text: `sampled: ${(request.params.messages[0]?.content as { text?: string } | undefined)?.text}`,
      },
    };
  });
  client.setRequestHandler('elicitation/create', async () => ({
    action: 'accept',
    content: { username: 'ada', email: 'ada@example.com' },
  }));
  client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
  const transport = new StdioClientTransport({
    command: NODE,
    args: [BIN, 'proxy', ...flags, '--', NODE, FIXTURE],
    cwd: ROOT,
    stderr: 'pipe',
  });
  await client.connect(transport);
  return { client, transport };
}

describe('proxy over stdio', () => {
  let client: Client;

  beforeAll(async () => {
    ({ client } = await connectProxy(['--timeout', '1500']));
  });

  afterAll(async () => {
    await client?.close();
  });

  it('mirrors the upstream identity and capabilities', () => {
    expect(client.getServerVersion()?.name).toBe('everything-fixture');
    const caps = client.getServerCapabilities();
    expect(caps?.tools).toBeDefined();
    expect(caps?.resources?.subscribe).toBe(true);
    expect(caps?.prompts).toBeDefined();
    expect(caps?.logging).toBeDefined();
    expect(caps?.completions).toBeDefined();
    expect(client.getInstructions()).toBe('Test server for the gateway.');
  });

  it('lists and calls tools unchanged', async () => {
    const tools = await client.listTools();
    const schemaTool = tools.tools.find((tool) => tool.name === 'json_schema_2020_12_tool');
    expect(schemaTool?.inputSchema.$defs).toBeDefined();
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(result.structuredContent).toEqual({ text: 'hello' });
    expect(textOf(result)).toBe('hello');
  });

  it('relays resources, templates, subscriptions and their update notifications', async () => {
    const listed = await client.listResources();
    expect(listed.resources.map((resource) => resource.uri)).toContain('test://static-text');
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates[0]?.uriTemplate).toBe('test://template/{id}/data');
    const read = await client.readResource({ uri: 'test://template/7/data' });
    expect(JSON.parse((read.contents[0] as { text: string }).text).id).toBe('7');
    const updated = new Promise<string>((resolve) => {
      client.setNotificationHandler('notifications/resources/updated', (notification) =>
        resolve(notification.params.uri),
      );
    });
    await client.subscribeResource({ uri: 'test://watched-resource' });
    expect(await updated).toBe('test://watched-resource');
    await client.unsubscribeResource({ uri: 'test://watched-resource' });
  });

  it('relays prompts and completion', async () => {
    const prompts = await client.listPrompts();
    expect(prompts.prompts.map((prompt) => prompt.name)).toContain('test_prompt_with_arguments');
    const prompt = await client.getPrompt({
      name: 'test_prompt_with_arguments',
      arguments: { arg1: 'a', arg2: 'b' },
    });
    expect((prompt.messages[0]?.content as { text?: string } | undefined)?.text).toBe(
      "Prompt with arguments: arg1='a', arg2='b'",
    );
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'par' },
    });
    expect(completion.completion.values).toEqual(['paris', 'park', 'party']);
  });

  it('relays logging/setLevel and log notifications', async () => {
    const messages: unknown[] = [];
    client.setNotificationHandler('notifications/message', (notification) => {
      messages.push(notification.params.data);
    });
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    expect(messages).toEqual(['Tool execution started', 'Tool processing data', 'Tool execution completed']);
  });

  it('relays list_changed notifications sent outside any request', async () => {
    const seen = new Set<string>();
    const all = new Promise<void>((resolve) => {
      for (const method of [
        'notifications/tools/list_changed',
        'notifications/prompts/list_changed',
        'notifications/resources/list_changed',
      ] as const) {
        client.setNotificationHandler(method, () => {
          seen.add(method);
          if (seen.size === 3) resolve();
        });
      }
    });
    await client.callTool({ name: 'announce', arguments: {} });
    await all;
    expect(seen.size).toBe(3);
  });

  it('maps progress tokens both ways', async () => {
    const seen: number[] = [];
    await client.callTool(
      { name: 'test_tool_with_progress', arguments: {} },
      { onprogress: (progress) => seen.push(progress.progress) },
    );
    // The SDK client may settle the result before handling a last notification read in the same
    // chunk, so the final 100 can be missed on the client side; what arrived must be in order.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual([0, 50, 100].slice(0, seen.length));
  });

  it('forwards sampling, elicitation and roots requests to the downstream client', async () => {
    const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hi' } });
    expect(textOf(sampled)).toBe('LLM response: sampled: hi');
    const elicited = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } });
    expect(textOf(elicited)).toContain('"username":"ada"');
    const roots = await client.callTool({ name: 'list_roots', arguments: {} });
    expect(JSON.parse(textOf(roots)).roots[0].uri).toBe('file:///work');
  });

  it('passes the upstream cancelling its own sampling request on to the downstream client', async () => {
    samplingAborted = deferred();
    const result = await client.callTool({ name: 'impatient_sampling', arguments: {} });
    expect(textOf(result)).toBe('gave up');
    // The cancellation arrives ahead of the result, but the client handles notifications a microtask late.
    await within(samplingAborted.promise, 5_000, 'cancellation of the sampling request');
    expect(samplingAborts).toBe(1);
  });

  it('passes an unknown tool to the upstream, whose answer comes back as is', async () => {
    const result = await client.callTool({ name: 'no_such_tool', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('Unknown tool: no_such_tool');
  });

  it('survives garbage on the upstream stdout', async () => {
    const result = await client.callTool({ name: 'garbage', arguments: {} });
    expect(textOf(result)).toBe('after garbage');
    const again = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    expect(textOf(again)).toBe('still here');
  });

  it('fails a call that outlives the timeout with a timeout error, and keeps serving', async () => {
    const error = await client.callTool({ name: 'slow', arguments: { ms: 10_000 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).data).toMatchObject({ canonical_code: 'TIMEOUT', timeout_ms: 1500 });
    const after = await client.callTool({ name: 'echo', arguments: { text: 'ok' } });
    expect(textOf(after)).toBe('ok');
  });
});

describe('proxy over stdio with a misbehaving client', () => {
  /** Writes raw text to the proxy's stdin and collects the JSON lines it answers. */
  async function exchange(input: string, answers: number): Promise<Record<string, unknown>[]> {
    const child = spawn(NODE, [BIN, 'proxy', '--', NODE, FIXTURE], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    try {
      const lines = new Promise<string[]>((resolve) => {
        let out = '';
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (text: string) => {
          out += text;
          const complete = out.split('\n').slice(0, -1);
          if (complete.length >= answers) resolve(complete);
        });
      });
      child.stdin.write(input);
      return (await lines).map((line) => JSON.parse(line) as Record<string, unknown>);
    } finally {
      await stopChild(child);
    }
  }

  it('answers a line that is not JSON with a parse error, as HTTP does, and reads on', async () => {
    const init = initializeMessage();
    const [parse, half, answer] = await exchange(`not json at all\n{"half": \n${JSON.stringify(init)}\n`, 3);
    for (const error of [parse, half]) {
      expect(error).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, data: { canonical_code: 'JSON_MALFORMED' } },
      });
    }
    expect(answer).toMatchObject({ id: 1, result: { serverInfo: { name: 'everything-fixture' } } });
  });

  it('answers JSON that is not JSON-RPC with -32600, under its id when it has one', async () => {
    const init = initializeMessage();
    const answers = await exchange(`{"id":7,"method":"ping"}\n[]\n"text"\n${JSON.stringify(init)}\n`, 4);
    expect(
      answers.slice(0, 3).map((answer) => [answer.id, (answer.error as { code?: number })?.code]),
    ).toEqual([
      [7, -32600],
      [null, -32600],
      [null, -32600],
    ]);
    expect(answers[3]).toMatchObject({ id: 1, result: { protocolVersion: expect.any(String) } });
  });

  it('refuses a request nested too deeply to forward with JSON_TOO_DEEP, and keeps serving', async () => {
    const init = initializeMessage();
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","d":${deep}}}}`;
    const ping = '{"jsonrpc":"2.0","id":3,"method":"ping"}';
    const answers = await exchange(`${JSON.stringify(init)}\n${call}\n${ping}\n`, 3);
    const byId = (id: number) => answers.find((answer) => answer.id === id);
    expect(byId(2)).toMatchObject({
      id: 2,
      error: { code: -32602, data: { canonical_code: 'JSON_TOO_DEEP' } },
    });
    expect(byId(3)).toMatchObject({ result: {} });
  });
});

describe('proxy over stdio when the upstream crashes', () => {
  let client: Client;

  beforeAll(async () => {
    ({ client } = await connectProxy(['--timeout', '20000']));
  });

  afterAll(async () => {
    await client?.close();
  });

  it('fails in-flight calls when the upstream crashes, restarts it, and serves the next call', async () => {
    const before = textOf(await client.callTool({ name: 'pid', arguments: {} }));
    const pending = client.callTool({ name: 'slow', arguments: { ms: 10_000 } }).catch((e: unknown) => e);
    const crash = await client.callTool({ name: 'crash', arguments: { code: 7 } }).catch((e: unknown) => e);
    for (const error of [crash, await pending]) {
      expect(error).toBeInstanceOf(ProtocolError);
      const data = (error as ProtocolError).data as Record<string, unknown>;
      expect(data.canonical_code).toBe('ADAPTER.EXECUTION.FAILED');
      expect(data.exit_code).toBe(7);
      expect(String(data.stderr)).toContain('fixture: crashing on request');
    }
    const after = textOf(await client.callTool({ name: 'pid', arguments: {} }));
    expect(after).not.toBe(before);
  });
});
