import { EnvelopeError } from '../../errors/index.ts';
import { sendError } from './reply.ts';
import type { RequestScope } from './scope.ts';

/**
 * `GET /metrics`: the gateway's metrics in the Prometheus text format, for a
 * scraper. The route table puts it behind the bearer-token guard, as the MCP
 * path, so a gateway that requires tokens never shows its traffic to anyone
 * without one.
 */

export const METRICS_PATH = '/metrics';

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export async function sendMetrics(scope: RequestScope, collect: () => Promise<string>): Promise<void> {
  const { req, res } = scope;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendError(res, new EnvelopeError('METHOD_NOT_ALLOWED', `Use GET ${METRICS_PATH}`), { allow: 'GET' });
    return;
  }
  const text = await collect();
  res.writeHead(200, {
    'content-type': CONTENT_TYPE,
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}
