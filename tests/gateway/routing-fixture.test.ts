import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE, ROOT } from './processes.ts';

/**
 * The routing fixture, spoken to directly (no gateway) by the SDK's client
 * with --label alpha: each thing the gateway's routing tests rely on answers,
 * and carries the label. 2025-11-25 gets every feature; 2026-07-28 all but
 * what that revision dropped (tasks, resources/subscribe).
 */

const ROUTING = fileURLToPath(new URL('../fixtures/servers/routing.ts', import.meta.url));
const README = 'file:///shared/readme.txt';
const ANY = {
  '~standard': { version: 1 as const, vendor: 'tests', validate: (value: unknown) => ({ value }) },
};

type Era = '2025-11-25' | '2026-07-28';

async function connect(era: Era): Promise<Client> {
  const client = new Client(
    { name: 'routing-fixture-test', version: '1.0.0' },
    era === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  await client.connect(
    new StdioClientTransport({ command: NODE, args: [ROUTING, '--label', 'alpha'], cwd: ROOT }),
  );
  return client;
}

function textOf(result: unknown): string {
  const [block] = (result as { content: { type: string; text?: string }[] }).content;
  return block?.text ?? '';
}

/** Resolves with the URI of the next notifications/resources/updated the client receives. */
function nextUpdate(client: Client): Promise<string> {
  return new Promise((resolve) => {
    client.setNotificationHandler('notifications/resources/updated', (notification) => {
      resolve(notification.params.uri);
    });
  });
}

for (const era of ['2025-11-25', '2026-07-28'] as const) {
  describe(`the routing fixture on ${era}`, () => {
    let client: Client;
    beforeAll(async () => {
      client = await connect(era);
    });
    afterAll(async () => {
      await client?.close();
    });

    it('declares the extensions and, on 2025-11-25, tasks', () => {
      const capabilities = client.getServerCapabilities();
      expect(capabilities?.extensions).toHaveProperty(['com.example/echo']);
      expect(capabilities?.extensions).toHaveProperty(['io.modelcontextprotocol/skills']);
      if (era === '2025-11-25') {
        expect(capabilities?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
        expect(capabilities?.resources?.subscribe).toBe(true);
      }
    });

    it('lists and reads its resources, each carrying the label', async () => {
      const { resources } = await client.listResources();
      const byUri = new Map(resources.map((resource) => [resource.uri, resource]));
      expect(byUri.get(README)?.mimeType).toBe('text/plain');
      expect(byUri.get('ui://widget/alpha.html')?.mimeType).toBe('text/html;profile=mcp-app');
      expect(byUri.has('note://alpha/one')).toBe(true);

      for (const [uri, expected] of [
        [README, 'readme of alpha'],
        ['ui://widget/alpha.html', 'widget of alpha'],
        ['note://alpha/one', 'note one of alpha'],
      ] as const) {
        const { contents } = await client.readResource({ uri });
        expect(contents[0]).toMatchObject({ uri });
        expect((contents[0] as { text: string }).text).toContain(expected);
      }
      const widget = await client.readResource({ uri: 'ui://widget/alpha.html' });
      expect(widget.contents[0]?.mimeType).toBe('text/html;profile=mcp-app');
    });

    it('serves the shared template, and completes its name with the label', async () => {
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((template) => template.uriTemplate)).toContain('file:///shared/{name}');
      const { contents } = await client.readResource({ uri: 'file:///shared/todo' });
      expect(contents[0]).toMatchObject({ uri: 'file:///shared/todo', text: 'alpha:todo' });
      const { completion } = await client.complete({
        ref: { type: 'ref/resource', uri: 'file:///shared/{name}' },
        argument: { name: 'name', value: '' },
      });
      expect(completion.values).toEqual(['alpha-notes', 'alpha-todo']);
    });

    it('answers prompts/get and completes its argument with the label', async () => {
      const { prompts } = await client.listPrompts();
      expect(prompts.find((prompt) => prompt.name === 'greet')?.arguments?.[0]?.name).toBe('who');
      const prompt = await client.getPrompt({ name: 'greet', arguments: { who: 'bob' } });
      expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'alpha greets bob' });
      const { completion } = await client.complete({
        ref: { type: 'ref/prompt', name: 'greet' },
        argument: { name: 'who', value: 'g' },
      });
      expect(completion.values).toEqual(['alpha-grace']);
    });

    it('answers its tools: whoami, a resource_link, slow', async () => {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['link_readme', 'slow', 'touch', 'whoami']);
      expect(textOf(await client.callTool({ name: 'whoami' }))).toBe('alpha');
      const link = await client.callTool({ name: 'link_readme' });
      expect(link.content).toEqual([
        {
          type: 'resource_link',
          uri: README,
          name: 'readme',
          mimeType: 'text/plain',
          description: 'from alpha',
        },
      ]);
      expect(textOf(await client.callTool({ name: 'slow', arguments: { ms: 5 } }))).toBe('alpha: slept 5 ms');
    });

    it('tells a subscriber that the shared readme was touched', async () => {
      const update = nextUpdate(client);
      if (era === '2025-11-25') {
        await client.subscribeResource({ uri: README });
        expect(textOf(await client.callTool({ name: 'touch' }))).toBe(`alpha: touched ${README}`);
        expect(await update).toBe(README);
        await client.unsubscribeResource({ uri: README });
        expect(textOf(await client.callTool({ name: 'touch' }))).toBe(
          `alpha: nobody subscribed to ${README}`,
        );
      } else {
        const subscription = await client.listen({ resourceSubscriptions: [README] });
        expect(textOf(await client.callTool({ name: 'touch' }))).toBe(`alpha: touched ${README}`);
        expect(await update).toBe(README);
        await subscription.close();
      }
    });

    it('serves its skill: skills/list, skills/get and the files by resources/read', async () => {
      const skills = new SkillsClient(client);
      expect(skills.supported).toBe(true);
      const listing = await skills.list();
      expect(listing.skills.map((skill) => skill.frontmatter.name)).toEqual(['alpha-skill']);
      const [entry] = listing.skills;
      if (!entry) throw new Error('no skill listed');
      expect(entry.uri).toBe('skill://alpha-skill/SKILL.md');
      const { skill } = await skills.get(entry.uri);
      expect(skill.frontmatter.description).toContain('alpha');
      // SkillsClient.read checks each file's size and digest against the entry.
      const manifest = await skills.read(skill);
      expect(manifest.body).toContain('Served by alpha');
      const notes = await skills.read(skill, 'references/NOTES.md');
      expect(notes.text).toBe('Notes from alpha.\n');
    });

    it('answers the extension method with its label and the params', async () => {
      const answer = await client.request({ method: 'com.example/echo', params: { route: 'me', n: 1 } }, ANY);
      expect(answer).toMatchObject({ label: 'alpha', params: { route: 'me', n: 1 } });
    });

    if (era === '2025-11-25') {
      it('runs slow as a task: tasks/get, tasks/list, tasks/result, tasks/cancel', async () => {
        const created = (await client.request(
          { method: 'tools/call', params: { name: 'slow', arguments: { ms: 50 }, task: { ttl: 60_000 } } },
          ANY,
        )) as { task: { taskId: string; status: string; ttl: number } };
        expect(created.task).toMatchObject({ status: 'working', ttl: 60_000 });
        const { taskId } = created.task;
        expect(taskId).toMatch(/^alpha-task-\d+$/);

        expect(await client.request({ method: 'tasks/get', params: { taskId } }, ANY)).toMatchObject({
          taskId,
        });
        const listed = (await client.request({ method: 'tasks/list', params: {} }, ANY)) as {
          tasks: { taskId: string }[];
        };
        expect(listed.tasks.map((task) => task.taskId)).toContain(taskId);
        const result = (await client.request({ method: 'tasks/result', params: { taskId } }, ANY)) as {
          _meta?: Record<string, unknown>;
        };
        expect(textOf(result)).toBe(`alpha: ${taskId} slept 50 ms`);
        expect(result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId });
        expect(await client.request({ method: 'tasks/get', params: { taskId } }, ANY)).toMatchObject({
          status: 'completed',
        });

        const other = (await client.request(
          { method: 'tools/call', params: { name: 'slow', arguments: { ms: 60_000 }, task: {} } },
          ANY,
        )) as { task: { taskId: string } };
        const cancelled = await client.request(
          { method: 'tasks/cancel', params: { taskId: other.task.taskId } },
          ANY,
        );
        expect(cancelled).toMatchObject({ taskId: other.task.taskId, status: 'cancelled' });
      });
    } else {
      it('ignores a task request: 2026-07-28 has no tasks in its core', async () => {
        const answer = await client.request(
          { method: 'tools/call', params: { name: 'slow', arguments: { ms: 5 }, task: { ttl: 60_000 } } },
          ANY,
        );
        expect(textOf(answer)).toBe('alpha: slept 5 ms');
      });
    }
  });
}
