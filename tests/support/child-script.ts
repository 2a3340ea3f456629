import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import {
  ChildProcessTransport,
  type ChildTransportOptions,
  StderrRing,
} from '../../src/gateway/upstreams/child-transport.ts';

/**
 * Runs `node -e script` behind a ChildProcessTransport until it exits, and
 * collects the messages the transport delivered and the tail of its stderr.
 */
export async function deliveredBy(
  script: string,
  options: Omit<ChildTransportOptions, 'command' | 'args' | 'stderr'> = {},
): Promise<{ messages: JSONRPCMessage[]; stderr: string }> {
  const stderr = new StderrRing();
  const transport = new ChildProcessTransport({
    ...options,
    command: process.execPath,
    args: ['-e', script],
    stderr,
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
