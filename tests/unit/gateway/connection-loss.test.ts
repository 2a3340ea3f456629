import { describe, expect, it } from 'vitest';
import { connectionVerdict, lossReason } from '../../../src/gateway/upstreams/connection-loss.ts';

/** The errors below are the ones the SDK's Streamable HTTP client reported when its server was killed and restarted. */
describe('connectionVerdict', () => {
  const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
  const unknownSession = Object.assign(new Error('Error POSTing to endpoint: Bad session'), {
    code: 'CLIENT_HTTP_NOT_IMPLEMENTED',
    data: { status: 404, statusText: 'Not Found' },
  });

  it('calls an unreachable server or a forgotten session lost', () => {
    expect(connectionVerdict(refused)).toBe('lost');
    expect(connectionVerdict(unknownSession)).toBe('lost');
  });

  it('suspects a broken stream, which may be only that stream', () => {
    expect(connectionVerdict(new Error('SSE stream disconnected: TypeError: terminated'))).toBe('suspect');
    expect(connectionVerdict(new Error('Failed to reconnect SSE stream: fetch failed'))).toBe('suspect');
  });

  it('leaves other errors alone', () => {
    expect(connectionVerdict(new SyntaxError('Unexpected token'))).toBe('unrelated');
    expect(connectionVerdict(Object.assign(new Error('Error POSTing'), { data: { status: 500 } }))).toBe(
      'unrelated',
    );
    expect(connectionVerdict(new TypeError('x is not a function'))).toBe('unrelated');
    expect(connectionVerdict('fetch failed')).toBe('unrelated');
  });

  it('names the network error code in the reason', () => {
    expect(lossReason(refused)).toBe('fetch failed (ECONNREFUSED)');
    expect(lossReason(unknownSession)).toBe('Error POSTing to endpoint: Bad session');
  });
});
