/**
 * A 2025-era Streamable HTTP session opened with raw POSTs, so any bytes can
 * be sent as a body and every JSON-RPC message of each reply is seen, whether
 * it came as JSON or as an SSE stream.
 */

import { BIN, NODE, type Running, startListening } from '../gateway/processes.ts';

export const RAW_SESSION_VERSION = '2025-06-18';

export interface RawAnswer {
  id?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
  method?: string;
}

export class RawSession {
  private session = '';

  readonly url: string;
  readonly timeoutMs: number;

  constructor(url: string, timeoutMs = 15_000) {
    this.url = url;
    this.timeoutMs = timeoutMs;
  }

  /** Initializes the session; throws unless the gateway opened it. */
  async open(): Promise<void> {
    const opened = await this.post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: RAW_SESSION_VERSION,
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    );
    if (opened.status !== 200) throw new Error(`initialize answered ${opened.status}`);
    await this.post('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  }

  /** The headers of a POST in this session, for tests that read a reply as it streams. */
  headers(): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': RAW_SESSION_VERSION,
      ...(this.session === '' ? {} : { 'mcp-session-id': this.session }),
    };
  }

  /** POSTs one body; the status and the JSON-RPC messages of the reply. */
  async post(body: string | Uint8Array): Promise<{ status: number; answers: RawAnswer[]; text: string }> {
    const reply = await fetch(this.url, {
      method: 'POST',
      headers: this.headers(),
      body,
      // A reply that never comes fails the caller, naming the body, instead of its test's timeout.
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    this.session ||= reply.headers.get('mcp-session-id') ?? '';
    const text = await reply.text();
    const type = reply.headers.get('content-type') ?? '';
    let chunks: string[] = [];
    if (type.includes('text/event-stream'))
      chunks = text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .filter((data) => data !== '');
    else if (text.trim() !== '') chunks = [text];
    const answers = chunks.flatMap((chunk) => {
      const value = JSON.parse(chunk) as RawAnswer | RawAnswer[];
      return Array.isArray(value) ? value : [value];
    });
    return { status: reply.status, answers, text };
  }

  /** A tools/call POST: the answers to `id` among the reply's messages (notifications left out). */
  async call(id: string, name: string, args: Record<string, unknown> = {}) {
    const reply = await this.post(
      JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
    );
    return {
      ...reply,
      mine: reply.answers.filter((answer) => answer.method === undefined && answer.id === id),
    };
  }
}

/**
 * `proxy --http` in front of `upstream` with `flags`, and a raw session opened
 * on it; `replyMs` bounds each reply the session waits for.
 */
export async function proxiedSession(
  upstream: string,
  flags: readonly string[],
  replyMs?: number,
): Promise<{ proxy: Running; session: RawSession }> {
  const proxy = await startListening([BIN, 'proxy', '--http', '127.0.0.1:0', ...flags, '--', NODE, upstream]);
  const session = new RawSession(proxy.url, replyMs);
  await session.open();
  return { proxy, session };
}
