import { describe, expect, it } from 'vitest';
import { upstreamName } from '../../src/cli/commands/proxy.ts';

describe('the name proxy gives its upstream', () => {
  it('is the program an interpreter runs, else the command', () => {
    expect(upstreamName('node', ['examples/legacy-server.ts'])).toBe('legacy-server');
    expect(upstreamName('/usr/bin/python3', ['-u', 'server.py'])).toBe('server');
    expect(upstreamName('python3', ['-m', 'my_pkg.server'])).toBe('my_pkg.server');
    expect(upstreamName('/opt/tools/weather-mcp', ['--stdio'])).toBe('weather-mcp');
    expect(upstreamName('node', [])).toBe('node');
    expect(upstreamName('../..', [])).toBe('upstream');
  });
});
