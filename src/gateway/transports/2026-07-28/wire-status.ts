import type { McpHttpHandler } from '@modelcontextprotocol/server';

/**
 * The HTTP status the 2026-07-28 wire gives a JSON-RPC error answered alone:
 * 404 for a method nobody serves, 400 for a request the server refuses as
 * malformed for this revision (headers that disagree with the body, a
 * capability the client did not declare). The SDK gives these only to errors
 * of its own dispatch; the gateway's relay answers every method (it forwards
 * what it does not know to an upstream), so an upstream's -32601 or -32020
 * arrives as a handler's error, which the SDK sends with 200.
 */
const STATUS_BY_CODE: Readonly<Record<number, number>> = {
  [-32601]: 404,
  [-32020]: 400,
  [-32021]: 400,
};

/** A JSON reply no longer than this is read to find its status; a longer one is a result, sent as it is. */
const INSPECTED_BYTES = 64 * 1024;

/** The SDK's handler, with each single JSON-RPC error reply sent under the status the revision gives it. */
export function withWireStatus(handler: McpHttpHandler): Pick<McpHttpHandler, 'fetch'> {
  return {
    fetch: async (request, options) => {
      const response = await handler.fetch(request, options);
      if (response.status !== 200 || !response.body) return response;
      if (!response.headers.get('content-type')?.startsWith('application/json')) return response;
      const reader = response.body.getReader();
      const head: Uint8Array[] = [];
      let size = 0;
      while (size <= INSPECTED_BYTES) {
        const { done, value } = await reader.read();
        if (done) {
          const text = Buffer.concat(head).toString('utf8');
          return new Response(text, { status: statusOf(text) ?? 200, headers: response.headers });
        }
        head.push(value);
        size += value.byteLength;
      }
      // A long reply is a result: what was read goes first, the rest as it comes.
      const rest = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of head) controller.enqueue(chunk);
        },
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return new Response(rest, { status: 200, headers: response.headers });
    },
  };
}

function statusOf(text: string): number | undefined {
  try {
    const message = JSON.parse(text) as { error?: { code?: unknown } } | unknown[] | null;
    if (message === null || Array.isArray(message)) return undefined;
    const code = message.error?.code;
    return typeof code === 'number' ? STATUS_BY_CODE[code] : undefined;
  } catch {
    return undefined;
  }
}
