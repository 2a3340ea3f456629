import { mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, it } from 'vitest';
import { latestCallLogLinks, readCallLog } from '../../src/gateway/operations/call-log.ts';
import { BIN, FIXTURE, NODE, ROOT } from './processes.ts';

/**
 * Gateways that log to one folder: each stdio launch is an instance with its own
 * file and latest link, and a configured instance name is kept across launches.
 */

const logs = mkdtempSync(join(tmpdir(), 'call-log-instances-'));
afterAll(() => rmSync(logs, { recursive: true, force: true }));

/** A stdio gateway logging to the shared folder, under the instance name `env` gives it. */
async function launch(env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'instances', version: '1.0.0' });
  const args = [BIN, 'proxy', '--name', 'shared', '--logs', logs, '--', NODE, FIXTURE];
  await client.connect(new StdioClientTransport({ command: NODE, args, cwd: ROOT, env, stderr: 'ignore' }));
  return client;
}

async function echo(client: Client, text: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) await client.callTool({ name: 'echo', arguments: { text } });
}

const serverDir = join(logs, 'shared');

describe('call logs of gateway instances sharing a folder', () => {
  it('gives two gateways running together a file and a latest link each', async () => {
    const [one, two] = await Promise.all([launch(), launch()]);
    await Promise.all([echo(one, 'one', 3), echo(two, 'two', 2)]);
    // Closing a stdio client waits for its gateway to exit, which flushes its log.
    await Promise.all([one.close(), two.close()]);

    const links = latestCallLogLinks(serverDir);
    expect(links).toHaveLength(2);
    const files = links.map((link) => realpathSync(link));
    expect(new Set(files).size).toBe(2);
    // Each file holds one gateway's calls, all of them.
    const counts = files.map((file) => readCallLog(file).length).sort();
    expect(counts).toEqual([2, 3]);
    for (const link of links) {
      // Named after the instance: `calls-<host>-<pid>.latest.jsonl` next to `<day>/calls-<host>-<pid>.jsonl`.
      const instance = basename(link)
        .replace(/^calls-/, '')
        .replace(/\.latest\.jsonl$/, '');
      expect(instance).toMatch(/-\d+$/);
      expect(basename(readlinkSync(link))).toBe(`calls-${instance}.jsonl`);
    }
  });

  it('keeps one file and link for a configured instance name, launch after launch', async () => {
    for (const text of ['first', 'second']) {
      const client = await launch({ MCP_ENVELOPE_INSTANCE: 'desk' });
      await echo(client, text, 1);
      await client.close();
    }
    const link = join(serverDir, 'calls-desk.latest.jsonl');
    expect(latestCallLogLinks(serverDir)).toContain(link);
    expect(readCallLog(link).map((line) => line.tool)).toEqual(['echo', 'echo']);
    const [day] = readdirSync(serverDir).filter((name) => /^\d{4}-\d{2}-\d{2}$/.test(name));
    expect(readdirSync(join(serverDir, day ?? '')).filter((name) => name.includes('desk'))).toEqual([
      'calls-desk.jsonl',
    ]);
  });
});
