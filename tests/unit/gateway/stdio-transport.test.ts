import { EventEmitter, once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { LineServerTransport } from '../../../src/gateway/transports/stdio/line-server-transport.ts';

/** A transport on a pair of real streams, collecting what it delivers and what it answers. */
async function opened(maxLineBytes: number) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const transport = new LineServerTransport({ stdin, stdout, maxLineBytes });
  const delivered: JSONRPCMessage[] = [];
  const answered: Record<string, unknown>[] = [];
  const events = new EventEmitter();
  let pending = '';
  stdout.setEncoding('utf8');
  stdout.on('data', (text: string) => {
    pending += text;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const message = JSON.parse(line) as Record<string, unknown>;
      if (message.id === MARKER.id) events.emit('marker');
      else answered.push(message);
    }
  });
  transport.onmessage = (message) => {
    delivered.push(message);
    events.emit('delivered', message);
  };
  await transport.start();
  /**
   * Resolves once the request with `id` has been delivered and everything the
   * transport wrote before that has been read back. Lines are handled in order,
   * so the delivery means every earlier line was; a marker sent next comes out
   * on stdout behind every earlier answer.
   */
  const handled = async (id: number) => {
    const isIt = (message: JSONRPCMessage) => (message as { id?: unknown }).id === id;
    if (!delivered.some(isIt)) {
      await new Promise<void>((resolve) => {
        const check = (message: JSONRPCMessage) => {
          if (!isIt(message)) return;
          events.off('delivered', check);
          resolve();
        };
        events.on('delivered', check);
      });
    }
    const back = once(events, 'marker');
    await transport.send(MARKER);
    await back;
  };
  return { stdin, transport, delivered, answered, handled };
}

/** Sent by the test itself after the lines under test, to know when their answers are all out. */
const MARKER = { jsonrpc: '2.0' as const, id: 'marker', result: {} };

const ping = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}`;

describe('LineServerTransport', () => {
  it('delivers lines split across chunks and several lines in one chunk, CRLF included', async () => {
    const { stdin, delivered, answered, handled } = await opened(1024);
    const text = `${ping(1)}\r\n${ping(2)}\n${ping(3)}\n`;
    stdin.write(text.slice(0, 10));
    stdin.write(text.slice(10, 50));
    stdin.write(text.slice(50));
    await handled(3);
    expect(delivered.map((message) => (message as { id: number }).id)).toEqual([1, 2, 3]);
    expect(answered).toEqual([]);
  });

  it('answers a line over the limit with INPUT_TOO_LARGE under the id its opening names, then reads on', async () => {
    const { stdin, delivered, answered, handled } = await opened(200);
    const long = `{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"pad":"${'x'.repeat(500)}"}}`;
    // In pieces, so the limit is passed before the newline arrives.
    for (let at = 0; at < long.length; at += 64) stdin.write(long.slice(at, at + 64));
    stdin.write(`\n${ping(2)}\n`);
    await handled(2);
    expect(answered).toEqual([
      {
        jsonrpc: '2.0',
        id: 'big-1',
        error: expect.objectContaining({
          data: expect.objectContaining({ canonical_code: 'INPUT_TOO_LARGE' }),
        }),
      },
    ]);
    expect(delivered).toEqual([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
  });

  it('answers an over-long line that arrives in one chunk under the id that closes it, or null', async () => {
    const { stdin, delivered, answered, handled } = await opened(100);
    const pad = 'y'.repeat(200);
    // The SDK writes the id last; a nested "id" is never taken for the message's own.
    stdin.write(`{"method":"x","params":{"id":5,"pad":"${pad}"},"id":9}\n`);
    stdin.write(`{"method":"x","params":{"pad":"${pad}","id":5}}\n`);
    stdin.write(`${ping(3)}\n`);
    await handled(3);
    expect(answered).toMatchObject([
      { id: 9, error: { data: { canonical_code: 'INPUT_TOO_LARGE' } } },
      { id: null, error: { data: { canonical_code: 'INPUT_TOO_LARGE' } } },
    ]);
    expect(delivered).toEqual([{ jsonrpc: '2.0', id: 3, method: 'ping' }]);
  });

  it('answers a message nested past the canonical limit with JSON_TOO_DEEP under its id', async () => {
    const { stdin, delivered, answered, handled } = await opened(1024 * 1024);
    const deep = `${'['.repeat(1200)}${']'.repeat(1200)}`;
    stdin.write(
      `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{"d":${deep}}}}\n${ping(9)}\n`,
    );
    await handled(9);
    expect(answered).toMatchObject([
      { id: 8, error: { code: -32602, data: { canonical_code: 'JSON_TOO_DEEP' } } },
    ]);
    expect(delivered).toEqual([{ jsonrpc: '2.0', id: 9, method: 'ping' }]);
  });

  it('answers a line that is not UTF-8 with a parse error instead of reading it with replacement characters', async () => {
    const { stdin, delivered, answered, handled } = await opened(1024);
    const bad = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}}\n'),
    ]);
    stdin.write(bad);
    stdin.write(`${ping(6)}\n`);
    await handled(6);
    expect(answered).toMatchObject([
      { id: null, error: { code: -32700, data: { canonical_code: 'INPUT_INVALID_UTF8' } } },
    ]);
    expect(delivered).toEqual([{ jsonrpc: '2.0', id: 6, method: 'ping' }]);
  });

  it('skips blank lines without answering them', async () => {
    const { stdin, delivered, answered, handled } = await opened(100);
    stdin.write(`\n  \n${ping(4)}\n`);
    await handled(4);
    expect(answered).toEqual([]);
    expect(delivered).toHaveLength(1);
  });

  it('closes once its input ends', async () => {
    const { stdin, transport } = await opened(100);
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
    });
    stdin.end();
    await closed;
    await expect(transport.send({ jsonrpc: '2.0', id: 1, result: {} })).rejects.toThrow(/closed/);
  });
});
