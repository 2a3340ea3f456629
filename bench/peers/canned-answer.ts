/**
 * The floor under every Streamable HTTP bridge, for the gateway benchmark: an
 * HTTP server that answers initialize and each tools/call itself, echoing the
 * text argument, with no upstream behind it. What remains is the client and
 * one HTTP exchange on loopback. Not a product; only the benchmark starts it.
 * Run: node bench/peers/canned-answer.ts PORT
 */
import { servePosts } from './post-server.ts';

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

servePosts(port, (body, res) => {
  const message = JSON.parse(body) as Message;
  if (message.id === undefined) {
    res.writeHead(202);
    res.end();
    return;
  }
  const reply = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: answer(message) });
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(reply)),
    'mcp-session-id': 'canned',
  });
  res.end(reply);
});
