import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawSession } from '../support/raw-http-session.ts';
import { type Running, startProxyHttp } from './processes.ts';

/**
 * A reply its client never reads stays in the gateway's memory: it must count
 * against the answer budget (192 MiB per process) until it has left, so that
 * clients asking for large answers and reading none of them cannot grow the
 * gateway without bound. Past the budget, a call is answered RESOURCE_EXHAUSTED.
 */

const ANSWER_BYTES = 30 * 1024 * 1024;

let gateway: Running;
let session: RawSession;
const sockets: Socket[] = [];

beforeAll(async () => {
  gateway = await startProxyHttp();
  session = new RawSession(gateway.url, 60_000);
  await session.open();
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await gateway?.stop();
});

type Era = '2025-11-25' | '2026-07-28';

/** A stateless 2026-07-28 request carries what a session would have said in its own headers and `_meta`. */
const STATELESS_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** POSTs a call for a large answer on a raw connection and reads only the reply's first bytes. */
function unreadCall(id: number, era: Era): Promise<string> {
  const url = new URL(gateway.url);
  const stateless = era === '2026-07-28';
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name: 'blob',
      arguments: { bytes: ANSWER_BYTES },
      ...(stateless ? { _meta: STATELESS_META } : {}),
    },
  });
  const headers = Object.entries({
    ...(stateless
      ? {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'blob',
        }
      : session.headers()),
    host: url.host,
    'content-length': String(body.length),
  })
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () =>
      socket.write(`POST ${url.pathname} HTTP/1.1\r\n${headers}\r\n\r\n${body}`),
    );
    sockets.push(socket);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      resolve(chunk.toString('latin1'));
    });
    socket.once('error', reject);
  });
}

describe.each<Era>(['2025-11-25', '2026-07-28'])('replies nobody reads (%s)', (era) => {
  it('count against the answer budget until they leave: past it, a call is RESOURCE_EXHAUSTED', async () => {
    let refused: string | undefined;
    // 30 MiB each against a 192 MiB budget: well within twenty, one is refused.
    for (let id = 10; id < 30 && refused === undefined; id++) {
      const head = await unreadCall(id, era);
      if (head.includes('RESOURCE_EXHAUSTED')) refused = head;
    }
    expect(refused).toBeDefined();
    // The gateway still answers small calls.
    const small = await session.post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 99,
        method: 'tools/call',
        params: { name: 'blob', arguments: { bytes: 10 } },
      }),
    );
    expect(JSON.stringify(small.answers)).toContain('xxxxxxxxxx');
    // Once the readers go away, their replies leave the budget and large answers are served again.
    for (const socket of sockets.splice(0)) socket.destroy();
    let served = false;
    for (let attempt = 0; attempt < 50 && !served; attempt++) {
      const again = await session.post(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 100 + attempt,
          method: 'tools/call',
          params: { name: 'blob', arguments: { bytes: ANSWER_BYTES } },
        }),
      );
      served = !JSON.stringify(again.answers).includes('RESOURCE_EXHAUSTED');
    }
    expect(served).toBe(true);
  }, 120_000);
});
