import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import {
  ChildProcessTransport,
  lastLines,
  StderrRing,
} from '../../../src/gateway/upstreams/child-transport.ts';

/** Runs a child that writes the given stdout bytes and exits; collects what the transport delivers. */
async function delivered(
  stdout: Buffer,
  maxLineBytes = 200,
): Promise<{ messages: JSONRPCMessage[]; stderr: string }> {
  const script = `process.stdout.write(Buffer.from(${JSON.stringify(stdout.toString('base64'))}, 'base64'));`;
  const stderr = new StderrRing();
  const transport = new ChildProcessTransport({
    command: process.execPath,
    args: ['-e', script],
    stderr,
    maxLineBytes,
  });
  const messages: JSONRPCMessage[] = [];
  transport.onmessage = (message) => messages.push(message);
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
  });
  await transport.start();
  await closed;
  return { messages, stderr: stderr.tail() };
}

const pad = 'y'.repeat(400);

describe('ChildProcessTransport reading the upstream’s stdout', () => {
  it('fails the request an answer that is not UTF-8 belongs to, instead of delivering it altered', async () => {
    const bad = Buffer.concat([
      Buffer.from('{"result":{"content":[{"type":"text","text":"caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}]},"jsonrpc":"2.0","id":1}\n{"result":{},"jsonrpc":"2.0","id":2}\n'),
    ]);
    const { messages, stderr } = await delivered(bad, 1024);
    expect(messages).toEqual([
      {
        jsonrpc: '2.0',
        id: 1,
        error: expect.objectContaining({
          data: expect.objectContaining({ canonical_code: 'ADAPTER.EXECUTION.FAILED' }),
        }),
      },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
    expect(stderr).toContain('not valid UTF-8');
  });

  it('fails the request an over-long answer belongs to, found at either edge of the line', async () => {
    const lines = [
      `{"result":{"pad":"${pad}"},"jsonrpc":"2.0","id":3}`,
      `{"jsonrpc": "2.0", "id": "four", "result": {"pad": "${pad}"}}`,
      '{"result":{},"jsonrpc":"2.0","id":5}',
    ];
    const { messages } = await delivered(Buffer.from(`${lines.join('\n')}\n`));
    expect(messages.map((message) => [(message as { id?: unknown }).id, 'error' in message])).toEqual([
      [3, true],
      ['four', true],
      [5, false],
    ]);
  });

  it('never answers an over-long request of the upstream’s as if it were a response', async () => {
    const request = `{"method":"sampling/createMessage","params":{"pad":"${pad}"},"jsonrpc":"2.0","id":0}`;
    const { messages, stderr } = await delivered(
      Buffer.from(`${request}\n{"result":{},"jsonrpc":"2.0","id":6}\n`),
    );
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 6, result: {} }]);
    expect(stderr).toContain('longer than 200 bytes');
  });

  it('skips lines that are not JSON or not JSON-RPC, noting them, and reads on', async () => {
    const { messages, stderr } = await delivered(
      Buffer.from('Server started\n{"hello":1}\n\n{"result":{},"jsonrpc":"2.0","id":7}\r\n'),
    );
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
    expect(stderr).toContain('not JSON on stdout');
    expect(stderr).toContain('not JSON-RPC on stdout');
  });
});

describe('the stderr tail', () => {
  it('keeps only the newest text within its limit', () => {
    const ring = new StderrRing(10);
    ring.push('first line\n');
    ring.push('second\n');
    ring.push('third\n');
    expect(ring.tail().length).toBeLessThanOrEqual(10);
    expect(ring.tail()).toMatch(/third\n$/);
    expect(ring.tail(3)).toBe('rd\n');
    const one = new StderrRing(4);
    one.push('a long single line\n');
    expect(one.tail()).toBe('ine\n');
  });

  it('never starts a tail on the second half of a character outside the BMP', () => {
    const ring = new StderrRing();
    ring.push('crashed: 🙂 gone');
    expect(ring.tail(' gone'.length + 1)).toBe(' gone');
    expect(ring.tail(' gone'.length + 2)).toBe('🙂 gone');
  });

  it('reads the last lines that say something, oldest first', () => {
    const excerpt = 'booting\n\nError: no config  \n   \n  at main (server.js:3)\r\n\n';
    expect(lastLines(excerpt, 2)).toEqual(['Error: no config', '  at main (server.js:3)']);
    expect(lastLines(excerpt, 1)).toEqual(['  at main (server.js:3)']);
    expect(lastLines(excerpt, 10)).toEqual(['booting', 'Error: no config', '  at main (server.js:3)']);
    expect(lastLines('', 3)).toEqual([]);
    const ring = new StderrRing();
    ring.push(excerpt);
    expect(ring.lastLines(1)).toEqual(['  at main (server.js:3)']);
  });
});
