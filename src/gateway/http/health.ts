import { EnvelopeError } from '../../errors/index.ts';
import type { UpstreamStatusBoard } from '../operations/upstream-status.ts';
import { sendError, sendJson } from './reply.ts';
import type { RequestScope } from './scope.ts';

/**
 * `GET /healthz`: anyone may ask, token or not, and gets states only. Why an
 * upstream is down, what it wrote and how busy the gateway is stay on the
 * operator's side (the banner, the info page's states).
 */
export function sendHealth(scope: RequestScope, board: UpstreamStatusBoard | undefined): void {
  const { req, res } = scope;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendError(res, new EnvelopeError('METHOD_NOT_ALLOWED', 'Use GET /healthz'), { allow: 'GET' });
    return;
  }
  const defects = board?.schemaDefectSummary();
  const pins = board?.pinSummary();
  sendJson(res, 200, {
    status: board?.summary() ?? 'ok',
    ...(board
      ? { upstreams: Object.fromEntries(board.all().map(({ name, status }) => [name, status.state])) }
      : {}),
    // Listed tools whose schemas cannot be compiled, by name only (the info page lists tools too).
    ...(defects && Object.keys(defects).length > 0 ? { schema_defects: defects } : {}),
    // Definitions found to differ from their pins, and calls refused for it (names are in the operator's log).
    ...(pins && Object.keys(pins).length > 0 ? { pin_changes: pins } : {}),
  });
}
