/**
 * Time to a stdio connection's first answer: an SDK client spawns the
 * upstream directly, or `mcp-envelope proxy` in front of it, connects and
 * lists tools. Through the gateway the upstream starts twice: once ahead (the
 * operator's view, the gateway's own start), once told who the client is when
 * its first message arrives; the ratio is what that costs a client.
 * Run: node bench/stdio-start.bench.ts
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { quantile } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const NODE = process.execPath;
const UPSTREAM = fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url));
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));
const ROUNDS = 10;

/** Milliseconds from spawning to the first tools/list answer, one fresh process tree per round. */
async function firstAnswer(args: string[]): Promise<number[]> {
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const client = new Client({ name: 'bench', version: '1.0.0' });
    const started = performance.now();
    await client.connect(new StdioClientTransport({ command: NODE, args, cwd: root, stderr: 'ignore' }));
    await client.listTools();
    times.push(performance.now() - started);
    await client.close();
  }
  return times.sort((a, b) => a - b);
}

const direct = await firstAnswer([UPSTREAM]);
const gateway = await firstAnswer([GATEWAY, 'proxy', '--', NODE, UPSTREAM]);
const median = (times: number[]) => quantile(times, 0.5);
process.stdout.write(
  `first answer over stdio, median of ${ROUNDS}: direct ${median(direct).toFixed(0)} ms, ` +
    `through the gateway ${median(gateway).toFixed(0)} ms (${(median(gateway) / median(direct)).toFixed(2)}x)\n`,
);
