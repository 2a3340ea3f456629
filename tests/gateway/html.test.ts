import { describe, expect, it } from 'vitest';
import { escapeHtml, renderInfoPage } from '../../src/gateway/http/info-page.ts';

describe('the gateway info page', () => {
  it('escapes every value it shows', () => {
    const html = renderInfoPage({
      title: 'gw <b>',
      mode: 'passthrough',
      endpoint: 'http://127.0.0.1:1/mcp',
      upstreams: [{ name: 'u"1', kind: 'stdio', state: "<'ready'>" }],
      tools: [{ name: '<script>alert(1)</script>', description: 'a & b' }],
      authRequired: true,
    });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('a &amp; b');
    expect(html).toContain('u&quot;1');
    expect(html).toContain('&lt;&#39;ready&#39;&gt;');
    expect(html).toContain('Authorization: Bearer');
  });

  it('names where an upstream is without its command line or its URL beyond the origin', () => {
    const html = renderInfoPage({
      title: 'gw',
      mode: 'passthrough',
      endpoint: 'http://127.0.0.1:1/mcp',
      upstreams: [
        { name: 'local', kind: 'stdio', state: 'ready' },
        { name: 'remote', kind: 'http', url: 'https://user:pa55word@mcp.example.com:8443/v1/mcp?key=k3y' },
      ],
      tools: [],
      authRequired: false,
    });
    expect(html).toContain('<code>local</code>: a local process (stdio) (<strong>ready</strong>)');
    expect(html).toContain('<code>remote</code>: Streamable HTTP at https://mcp.example.com:8443');
    for (const hidden of ['user', 'pa55word', '/v1/mcp', 'k3y']) expect(html).not.toContain(hidden);
  });

  it('escapes the five HTML metacharacters', () => {
    expect(escapeHtml(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });
});
