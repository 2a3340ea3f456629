import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, FIXTURE, NODE, ROOT, stopChild } from './processes.ts';

/**
 * The stdio gateway's upstreams are told what its client's first message
 * declared. A 2026-07-28 client may declare less in a later request: an
 * upstream request for a capability that request lacks is then refused by
 * the gateway itself with -32021 naming the capability; the client is never
 * asked.
 */

let child: ChildProcess | undefined;

afterEach(async () => {
  if (child) await stopChild(child);
  child = undefined;
});

function request(id: number, method: string, params: Record<string, unknown>, capabilities: object) {
  return {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      ...params,
      _meta: {
        [PROTOCOL_VERSION_META_KEY]: '2026-07-28',
        [CLIENT_INFO_META_KEY]: { name: 'raw-modern', version: '1.0.0' },
        [CLIENT_CAPABILITIES_META_KEY]: capabilities,
      },
    },
  };
}

describe('a 2026-07-28 client over stdio that declares less than its first request did', () => {
  it('gets -32021 from the gateway for what its request lacks, and is never asked', async () => {
    child = spawn(NODE, [BIN, 'proxy', '--', NODE, FIXTURE], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const answers = new Map<number, (message: Record<string, unknown>) => void>();
    const seen: Record<string, unknown>[] = [];
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const message = JSON.parse(line) as Record<string, unknown>;
      seen.push(message);
      if (typeof message.id === 'number' && !('method' in message)) answers.get(message.id)?.(message);
    });
    const ask = (message: ReturnType<typeof request>) =>
      new Promise<Record<string, unknown>>((resolve) => {
        answers.set(message.id, resolve);
        child?.stdin?.write(`${JSON.stringify(message)}\n`);
      });
    // The first request declares elicitation: the upstream is told so.
    const listed = await ask(request(1, 'tools/list', {}, { elicitation: {} }));
    expect(JSON.stringify(listed.result)).toContain('ask_twice');
    const refused = await ask(request(2, 'tools/call', { name: 'ask_twice', arguments: {} }, {}));
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    // Nothing was put to the client: no input_required round, no request of its own.
    expect(seen.filter((message) => 'method' in message)).toEqual([]);
  });
});
