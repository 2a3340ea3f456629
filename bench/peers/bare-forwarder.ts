/**
 * The floor of any Streamable HTTP bridge to a stdio server, for the gateway
 * benchmark: each POST body goes to the child's stdin as one line, and the
 * child's answer with the same id goes back as one JSON reply. No MCP
 * handling, validation, sessions or streams: nothing a real bridge could do
 * with less work. With `stdio` instead of a port it pipes its own stdin and
 * stdout to the child's: the floor of one more stdio hop. Not a product; only
 * the benchmark starts it.
 * Run: node bench/peers/bare-forwarder.ts PORT|stdio -- COMMAND [ARGS...]
 */
import { spawn } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { servePosts } from './post-server.ts';

const [portText, separator, command, ...args] = process.argv.slice(2);
if (separator !== '--' || !command)
  throw new Error('usage: bare-forwarder.ts PORT|stdio -- COMMAND [ARGS...]');

const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
child.once('exit', () => process.exit(1));
if (portText === 'stdio') {
  process.stdin.pipe(child.stdin);
  child.stdout.pipe(process.stdout);
} else {
  serveHttp(Number(portText));
}

function serveHttp(port: number): void {
  const waiting = new Map<unknown, ServerResponse>();
  let buffered = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text: string) => {
    buffered += text;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      const id = (JSON.parse(line) as { id?: unknown }).id;
      const res = waiting.get(id);
      if (!res) continue;
      waiting.delete(id);
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(line)),
        'mcp-session-id': 'bare',
      });
      res.end(line);
    }
  });

  servePosts(port, (body, res) => {
    const id = (JSON.parse(body) as { id?: unknown }).id;
    if (id === undefined) {
      res.writeHead(202);
      res.end();
    } else {
      waiting.set(id, res);
    }
    child.stdin.write(`${body}\n`);
  });
}
