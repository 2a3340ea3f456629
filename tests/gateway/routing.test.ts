import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayDir, removeGatewayDirs, startGatewayHttp } from './gateway-process.ts';
import { gatewayStdio, NODE, ROOT, type Running } from './processes.ts';

/**
 * Every method of several upstreams is namespaced and reaches the upstream
 * that owns it (src/gateway/relay/namespace.ts): two instances of the routing
 * fixture serve the same names and URIs and put their label in every answer,
 * behind one gateway, over HTTP and stdio, for clients of both eras. One of
 * them is in an envelope mode, whose task handles and resources must pass
 * unwrapped. A gateway with one upstream names nothing differently.
 */

const ROUTING = fileURLToPath(new URL('../fixtures/servers/routing.ts', import.meta.url));
const ANY = {
  '~standard': { version: 1 as const, vendor: 'tests', validate: (value: unknown) => ({ value }) },
};

type Era = '2025-11-25' | '2026-07-28';
type Transport = 'HTTP' | 'stdio';

function upstream(label: string, dialect: string) {
  return { name: label, stdio: { command: NODE, args: [ROUTING, '--label', label], cwd: ROOT }, dialect };
}

function configWith(upstreams: ReturnType<typeof upstream>[]): string {
  return gatewayDir((config) => {
    config.upstreams = upstreams;
  }).config;
}

/** What a read returned, as text. */
function readText(result: { contents: unknown[] }): string {
  return result.contents.map((content) => (content as { text?: string }).text ?? '').join('\n');
}

async function connect(era: Era, transport: Transport, config: string, http?: Running): Promise<Client> {
  const client = new Client(
    { name: 'routing-test', version: '1.0.0' },
    era === '2026-07-28' ? { versionNegotiation: { mode: { pin: era } } } : {},
  );
  await client.connect(
    transport === 'HTTP'
      ? new StreamableHTTPClientTransport(new URL((http as Running).url))
      : gatewayStdio(config, { args: ['--stdio', '--no-http'], stderr: 'inherit' }),
  );
  return client;
}

const CASES: [Era, Transport][] = [
  ['2025-11-25', 'HTTP'],
  ['2025-11-25', 'stdio'],
  ['2026-07-28', 'HTTP'],
  ['2026-07-28', 'stdio'],
];

describe.each(CASES)('two upstreams behind one gateway, %s client over %s', (era, transport) => {
  let http: Running | undefined;
  let client: Client;

  beforeAll(async () => {
    const config = configWith([upstream('alpha', 'prov-v0.1'), upstream('beta', 'passthrough')]);
    if (transport === 'HTTP') http = await startGatewayHttp(['--config', config]);
    client = await connect(era, transport, config, http);
  });

  afterAll(async () => {
    await client?.close().catch(() => {});
    await http?.stop();
    removeGatewayDirs();
  });

  it('lists each upstream’s resources and templates under its name, and reads each from its owner', async () => {
    const uris = (await client.listResources()).resources.map((resource) => resource.uri);
    expect(uris).toEqual(
      expect.arrayContaining([
        'file://alpha//shared/readme.txt',
        'file://beta//shared/readme.txt',
        'ui://alpha/widget/alpha.html',
        'note://beta/beta/one',
      ]),
    );
    expect(readText(await client.readResource({ uri: 'file://beta//shared/readme.txt' }))).toContain('beta');
    expect(readText(await client.readResource({ uri: 'file://alpha//shared/readme.txt' }))).toContain(
      'alpha',
    );
    // A URI as its upstream wrote it (a link in a tool result) goes to the upstream that listed it.
    expect(readText(await client.readResource({ uri: 'note://beta/one' }))).toContain('beta');
    const widget = await client.readResource({ uri: 'ui://alpha/widget/alpha.html' });
    // An app's page is a resource like any other: never wrapped in an envelope.
    expect(widget.contents[0]).toMatchObject({ mimeType: 'text/html;profile=mcp-app' });
    expect(readText(widget)).toContain('alpha');

    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
    expect(templates).toEqual(
      expect.arrayContaining(['file://alpha//shared/{name}', 'file://beta//shared/{name}']),
    );
    expect(readText(await client.readResource({ uri: 'file://beta//shared/todo' }))).toBe('beta:todo');
  });

  it('routes prompts and completions of prompts and templates to their owner', async () => {
    const prompt = await client.getPrompt({ name: 'beta__greet', arguments: { who: 'ada' } });
    expect(JSON.stringify(prompt.messages)).toContain('beta greets ada');
    const names = await client.complete({
      ref: { type: 'ref/prompt', name: 'alpha__greet' },
      argument: { name: 'who', value: '' },
    });
    expect(names.completion.values.every((value) => value.startsWith('alpha-'))).toBe(true);
    const files = await client.complete({
      ref: { type: 'ref/resource', uri: 'file://beta//shared/{name}' },
      argument: { name: 'name', value: '' },
    });
    expect(files.completion.values).toEqual(expect.arrayContaining(['beta-notes']));
  });

  it('lists each upstream’s skills under its name and serves their files from it', async () => {
    const skills = new SkillsClient(client);
    const listing = await skills.list();
    const entries = new Map(listing.skills.map((skill) => [skill.frontmatter.name, skill]));
    expect(entries.get('alpha-skill')?.uri).toBe('skill://alpha/alpha-skill/SKILL.md');
    expect(entries.get('beta-skill')?.uri).toBe('skill://beta/beta-skill/SKILL.md');
    const { skill } = await skills.get('skill://beta/beta-skill/SKILL.md');
    expect(skill.frontmatter.description).toContain('beta');
    // The files' URIs are namespaced too, and their digests still hold (SkillsClient checks them).
    const notes = await skills.read(skill, 'references/NOTES.md');
    expect(notes.text).toBe('Notes from beta.\n');
  });

  it('sends an extension method to the upstream it is namespaced for, and says so when that is not known', async () => {
    const answer = await client.request({ method: 'beta__com.example/echo', params: { n: 1 } }, ANY);
    expect(answer).toMatchObject({ label: 'beta', params: { n: 1 } });
    const ambiguous = await client
      .request({ method: 'com.example/echo', params: {} }, ANY)
      .catch((error: unknown) => error);
    expect(ambiguous).toMatchObject({ message: expect.stringContaining('<upstream>__com.example/echo') });
  });

  if (era === '2025-11-25') {
    it('names task handles by their upstream, routes tasks/* by them, and never wraps a handle', async () => {
      // alpha is in an envelope mode: its handle is not a tool's result and passes as it is.
      const created = (await client.request(
        {
          method: 'tools/call',
          params: { name: 'alpha__slow', arguments: { ms: 20 }, task: { ttl: 60_000 } },
        },
        ANY,
      )) as { task: { taskId: string }; content?: unknown; structuredContent?: unknown };
      expect(created.content).toBeUndefined();
      expect(created.structuredContent).toBeUndefined();
      const { taskId } = created.task;
      expect(taskId).toMatch(/^alpha__alpha-task-\d+$/);
      expect(await client.request({ method: 'tasks/get', params: { taskId } }, ANY)).toMatchObject({
        taskId,
      });
      const result = (await client.request({ method: 'tasks/result', params: { taskId } }, ANY)) as {
        content: { text: string }[];
        _meta?: Record<string, unknown>;
      };
      expect(result.content[0]?.text).toContain('alpha: alpha-task-');
      expect(result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId });
      const other = (await client.request(
        { method: 'tools/call', params: { name: 'beta__slow', arguments: { ms: 60_000 }, task: {} } },
        ANY,
      )) as { task: { taskId: string } };
      expect(other.task.taskId).toMatch(/^beta__beta-task-\d+$/);
      const listed = (await client.request({ method: 'tasks/list', params: {} }, ANY)) as {
        tasks: { taskId: string }[];
      };
      expect(listed.tasks.map((task) => task.taskId)).toEqual(
        expect.arrayContaining([taskId, other.task.taskId]),
      );
      expect(
        await client.request({ method: 'tasks/cancel', params: { taskId: other.task.taskId } }, ANY),
      ).toMatchObject({ taskId: other.task.taskId, status: 'cancelled' });
    });

    it('tells a subscriber of a namespaced resource of its updates, under the same name', async () => {
      const uri = 'file://alpha//shared/readme.txt';
      const updated = new Promise<string>((resolve) => {
        client.setNotificationHandler('notifications/resources/updated', (notification) =>
          resolve(notification.params.uri),
        );
      });
      await client.subscribeResource({ uri });
      await client.callTool({ name: 'alpha__touch' });
      expect(await updated).toBe(uri);
    });
  } else {
    // Over HTTP the upstreams speak 2026-07-28 too, which has no resources/subscribe: the gateway
    // names the resource on its own listen stream to the upstream.
    it('tells a listener of a namespaced resource of its updates, under the same name', async () => {
      const uri = 'file://beta//shared/readme.txt';
      const updated = new Promise<string>((resolve) => {
        client.setNotificationHandler('notifications/resources/updated', (notification) =>
          resolve(notification.params.uri),
        );
      });
      const subscription = await client.listen({ resourceSubscriptions: [uri] });
      await client.callTool({ name: 'beta__touch' });
      expect(await updated).toBe(uri);
      await subscription.close();
    });
  }
});

describe('one upstream behind the gateway', () => {
  let client: Client;

  beforeAll(async () => {
    client = await connect('2025-11-25', 'stdio', configWith([upstream('alpha', 'passthrough')]));
  });

  afterAll(async () => {
    await client?.close().catch(() => {});
    removeGatewayDirs();
  });

  it('names nothing differently', async () => {
    const uris = (await client.listResources()).resources.map((resource) => resource.uri);
    expect(uris).toContain('file:///shared/readme.txt');
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('whoami');
    const listing = await new SkillsClient(client).list();
    expect(listing.skills[0]?.uri).toBe('skill://alpha-skill/SKILL.md');
    expect(await client.request({ method: 'com.example/echo', params: {} }, ANY)).toMatchObject({
      label: 'alpha',
    });
  });
});
