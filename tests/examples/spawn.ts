import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/client/stdio';

export const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

export interface Connected {
  client: Client;
  transport: StdioClientTransport;
  /** Everything the server wrote to stderr so far. */
  stderr: () => string;
}

/** Starts an example server as a child process and connects the official SDK client to it. */
export async function connectExample(params: StdioServerParameters): Promise<Connected> {
  const transport = new StdioClientTransport({ ...params, cwd: EXAMPLES, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const client = new Client({ name: 'examples-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

export function nodeExample(file: string): StdioServerParameters {
  return { command: process.execPath, args: [`${EXAMPLES}${file}`] };
}

/** The text of the first content block of a tool result. */
export function firstText(result: { content?: unknown }): string {
  const content = result.content as Array<{ type: string; text?: string }> | undefined;
  const first = content?.[0];
  if (first?.type !== 'text' || typeof first.text !== 'string') throw new Error('first block is not text');
  return first.text;
}
