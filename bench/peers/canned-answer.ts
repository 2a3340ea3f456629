/**
 * The floor under every Streamable HTTP bridge, for the gateway benchmark: an
 * HTTP server that answers initialize and each tools/call itself, echoing the
 * text argument, with no upstream behind it. What remains is the client and
 * one HTTP exchange on loopback. Not a product; only the benchmark starts it.
 * Run: node bench/peers/canned-answer.ts PORT
 */
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
if (!Number.isInteger(port)) throw new Error('usage: canned-answer.ts PORT');

interface Message {
  id?: string | number;
  method?: string;
  params?: { protocolVersion?: string; arguments?: { text?: string } };
}

function answer(message: Message): unknown {
  if (message.method === 'initialize') {
    return {
      protocolVersion: message.params?.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: 'canned-answer', version: '1.0.0' },
    };
  }
  if (message.method === 'tools/call') {
    return { content: [{ type: 'text', text: message.params?.arguments?.text ?? '' }] };
  }
  return {};
}

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (req.method !== 'POST') {
      res.writeHead(req.method === 'DELETE' ? 200 : 405);
      res.end();
      return;
    }
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Message;
    if (message.id === undefined) {
      res.writeHead(202);
      res.end();
      return;
    }
    const body = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: answer(message) });
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'mcp-session-id': 'canned',
    });
    res.end(body);
  });
}).listen(port, '127.0.0.1');
