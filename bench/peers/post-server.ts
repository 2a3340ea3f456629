/**
 * The HTTP front the benchmark's peers share: collects each POST body and
 * hands it on; DELETE (a client ending its session) gets 200, anything else
 * 405. Not a product; only the benchmark's peers use it.
 */
import { createServer, type ServerResponse } from 'node:http';

export function servePosts(port: number, onPost: (body: string, res: ServerResponse) => void): void {
  createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(req.method === 'DELETE' ? 200 : 405);
        res.end();
        return;
      }
      onPost(Buffer.concat(chunks).toString('utf8'), res);
    });
  }).listen(port, '127.0.0.1');
}
