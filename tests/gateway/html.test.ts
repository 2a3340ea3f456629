import { describe, expect, it } from 'vitest';
import { escapeHtml, renderInfoPage } from '../../src/gateway/http/info-page.ts';

describe('the gateway info page', () => {
  it('escapes every value it shows', () => {
    const html = renderInfoPage({
      title: 'gw <b>',
      mode: 'passthrough',
      endpoint: 'http://127.0.0.1:1/mcp',
      upstreams: [{ name: 'u"1', target: "node '<x>'" }],
      tools: [{ name: '<script>alert(1)</script>', description: 'a & b' }],
      authRequired: true,
    });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('a &amp; b');
    expect(html).toContain('u&quot;1');
    expect(html).toContain('node &#39;&lt;x&gt;&#39;');
    expect(html).toContain('Authorization: Bearer');
  });

  it('escapes the five HTML metacharacters', () => {
    expect(escapeHtml(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });
});
