import type { ClientCapabilities, Transport } from '@modelcontextprotocol/client';
import { Client, StreamableHTTPClientTransport, withInputRequired } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BIN, FIXTURE, NODE, ROOT, type Running, startProxyHttp } from './processes.ts';

/** Helpers for the gateway tests of 2026-07-28 (stateless-era) clients. */

/** A client pinned to 2026-07-28, declaring the given capabilities. */
export function statelessEraClient(capabilities: ClientCapabilities = {}): Client {
  return new Client(
    { name: 'modern-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities },
  );
}

/** Where a test's clients connect: a gateway process over HTTP, or one gateway process per client over stdio. */
export interface Target {
  name: 'HTTP' | 'stdio';
  start(): Promise<void>;
  /** Connects the client; returns its transport's count of requests sent per method. */
  connect(client: Client, token?: string): Promise<(method: string) => number>;
  stop(): Promise<void>;
}

export function httpTarget(flags: readonly string[] = []): Target {
  let proxy: Running | undefined;
  return {
    name: 'HTTP',
    async start() {
      proxy = await startProxyHttp(flags);
    },
    connect(client, token) {
      if (!proxy) throw new Error('the gateway is not started');
      const headers = token ? { authorization: `Bearer ${token}` } : undefined;
      return connectCounting(
        client,
        new StreamableHTTPClientTransport(
          new URL(proxy.url),
          headers ? { requestInit: { headers } } : undefined,
        ),
      );
    },
    async stop() {
      await proxy?.stop();
    },
  };
}

export function stdioTarget(flags: readonly string[] = []): Target {
  return {
    name: 'stdio',
    async start() {},
    connect(client) {
      return connectCounting(
        client,
        new StdioClientTransport({
          command: NODE,
          args: [BIN, 'proxy', ...flags, '--', NODE, FIXTURE],
          cwd: ROOT,
        }),
      );
    },
    async stop() {},
  };
}

/** Counts the requests the client puts on the wire, per method: one round of input is one retry. */
async function connectCounting(client: Client, transport: Transport): Promise<(method: string) => number> {
  const sent = new Map<string, number>();
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const method = (message as { method?: unknown; id?: unknown }).method;
    if (typeof method === 'string' && 'id' in message) sent.set(method, (sent.get(method) ?? 0) + 1);
    return send(message, options);
  };
  await client.connect(transport);
  return (method) => sent.get(method) ?? 0;
}

const ANY = {
  '~standard': { version: 1 as const, vendor: 'tests', validate: (value: unknown) => ({ value }) },
};

export interface InputRequired {
  resultType?: string;
  inputRequests?: Record<string, { method: string; params?: Record<string, unknown> }>;
  requestState?: string;
  content?: { text?: string }[];
}

/** One leg of a tools/call with rounds handled by the test itself. */
export async function callLeg(client: Client, params: Record<string, unknown>): Promise<InputRequired> {
  return (await client.request({ method: 'tools/call', params }, withInputRequired(ANY), {
    allowInputRequired: true,
  })) as InputRequired;
}

export function textOf(result: { content?: unknown }): string {
  return (result.content as { text?: string }[] | undefined)?.[0]?.text ?? '';
}

export const SAMPLED = {
  role: 'assistant' as const,
  model: 'test-model',
  content: { type: 'text' as const, text: 'sampled' },
};
