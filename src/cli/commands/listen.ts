import { EnvelopeError } from '../../errors/index.ts';

/** `HOST:PORT`, `[::1]:PORT` or a bare `PORT` (on 127.0.0.1). */
export function parseListen(value: string): { host: string; port: number } {
  const at = value.lastIndexOf(':');
  const host = at > 0 ? value.slice(0, at).replace(/^\[(.*)\]$/, '$1') : '127.0.0.1';
  const port = Number(at >= 0 ? value.slice(at + 1) : value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new EnvelopeError('USAGE_ERROR', `--http wants HOST:PORT, got ${value}`);
  }
  return { host, port };
}
