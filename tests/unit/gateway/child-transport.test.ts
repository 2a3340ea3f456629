import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ChildProcessTransport,
  causeLines,
  lastLines,
  StderrRing,
  upstreamEnvironment,
} from '../../../src/gateway/upstreams/child-transport.ts';
import { deliveredBy } from '../../support/child-script.ts';

/** Runs a child that writes the given stdout bytes and exits; collects what the transport delivers. */
async function delivered(
  stdout: Buffer,
  maxLineBytes = 200,
): Promise<{ messages: JSONRPCMessage[]; stderr: string }> {
  const script = `process.stdout.write(Buffer.from(${JSON.stringify(stdout.toString('base64'))}, 'base64'));`;
  return deliveredBy(script, { maxLineBytes });
}

const pad = 'y'.repeat(400);

describe('ChildProcessTransport reading the upstream’s stdout', () => {
  it('fails the request an answer that is not UTF-8 belongs to, instead of delivering it altered', async () => {
    const bad = Buffer.concat([
      Buffer.from('{"result":{"content":[{"type":"text","text":"caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}]},"jsonrpc":"2.0","id":1}\n{"result":{},"jsonrpc":"2.0","id":2}\n'),
    ]);
    const { messages, stderr } = await delivered(bad, 1024);
    expect(messages).toEqual([
      {
        jsonrpc: '2.0',
        id: 1,
        error: expect.objectContaining({
          data: expect.objectContaining({ canonical_code: 'ADAPTER.EXECUTION.FAILED' }),
        }),
      },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
    expect(stderr).toContain('not valid UTF-8');
  });

  it('fails the request an over-long answer belongs to, found at either edge of the line', async () => {
    const lines = [
      `{"result":{"pad":"${pad}"},"jsonrpc":"2.0","id":3}`,
      `{"jsonrpc": "2.0", "id": "four", "result": {"pad": "${pad}"}}`,
      '{"result":{},"jsonrpc":"2.0","id":5}',
    ];
    const { messages } = await delivered(Buffer.from(`${lines.join('\n')}\n`));
    expect(messages.map((message) => [(message as { id?: unknown }).id, 'error' in message])).toEqual([
      [3, true],
      ['four', true],
      [5, false],
    ]);
  });

  it('never answers an over-long request of the upstream’s as if it were a response', async () => {
    const request = `{"method":"sampling/createMessage","params":{"pad":"${pad}"},"jsonrpc":"2.0","id":0}`;
    const { messages, stderr } = await delivered(
      Buffer.from(`${request}\n{"result":{},"jsonrpc":"2.0","id":6}\n`),
    );
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 6, result: {} }]);
    expect(stderr).toContain('longer than 200 bytes');
  });

  it('skips lines that are not JSON or not JSON-RPC, noting them, and reads on', async () => {
    const { messages, stderr } = await delivered(
      Buffer.from('Server started\n{"hello":1}\n\n{"result":{},"jsonrpc":"2.0","id":7}\r\n'),
    );
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
    expect(stderr).toContain('not JSON on stdout');
    expect(stderr).toContain('not JSON-RPC on stdout');
  });
});

describe('the stderr tail', () => {
  it('keeps only the newest text within its limit', () => {
    const ring = new StderrRing(10);
    ring.push('first line\n');
    ring.push('second\n');
    ring.push('third\n');
    expect(ring.tail().length).toBeLessThanOrEqual(10);
    expect(ring.tail()).toMatch(/third\n$/);
    expect(ring.tail(3)).toBe('rd\n');
    const one = new StderrRing(4);
    one.push('a long single line\n');
    expect(one.tail()).toBe('ine\n');
  });

  it('never starts a tail on the second half of a character outside the BMP', () => {
    const ring = new StderrRing();
    ring.push('crashed: 🙂 gone');
    expect(ring.tail(' gone'.length + 1)).toBe(' gone');
    expect(ring.tail(' gone'.length + 2)).toBe('🙂 gone');
  });

  it('reads the last lines that say something, oldest first', () => {
    const excerpt = 'booting\n\nError: no config  \n   \n  at main (server.js:3)\r\n\n';
    expect(lastLines(excerpt, 2)).toEqual(['Error: no config', '  at main (server.js:3)']);
    expect(lastLines(excerpt, 1)).toEqual(['  at main (server.js:3)']);
    expect(lastLines(excerpt, 10)).toEqual(['booting', 'Error: no config', '  at main (server.js:3)']);
    expect(lastLines('', 3)).toEqual([]);
    const ring = new StderrRing();
    ring.push(excerpt);
    expect(ring.lastLines(1)).toEqual(['  at main (server.js:3)']);
  });

  it('reads the lines that name the cause first, then the last ones, in the order written', () => {
    const python = [
      'Traceback (most recent call last):',
      '  File "server.py", line 1, in <module>',
      '    import missing',
      "ModuleNotFoundError: No module named 'missing'",
      'exiting',
    ].join('\n');
    expect(causeLines(python, 1)).toEqual(["ModuleNotFoundError: No module named 'missing'"]);
    expect(causeLines(python, 2)).toEqual(["ModuleNotFoundError: No module named 'missing'", 'exiting']);
    // Nothing names a cause: the last lines. A stack frame never counts as a cause, whatever it names.
    expect(causeLines('booting\n    at handleError (server.js:3)\n', 1)).toEqual([
      '    at handleError (server.js:3)',
    ]);
    expect(causeLines('booting\nlistening\n', 5)).toEqual(['booting', 'listening']);
    expect(causeLines(`Error: ${'x'.repeat(400)}`, 1)[0]).toHaveLength(301);
  });
});

describe('the environment an upstream gets', () => {
  it('holds the safe base and the configured variables, never the gateway’s own', () => {
    const parent = {
      PATH: '/usr/bin',
      HOME: '/home/op',
      LANG: 'C.UTF-8',
      LC_TIME: 'en_GB.UTF-8',
      TMPDIR: '/tmp',
      MCP_ENVELOPE_PRO_TOKEN: 'secret-token-value',
      REMOTE_MCP_AUTHORIZATION: 'Bearer secret',
      NODE_OPTIONS: '--inspect',
      BASH_FUNC_x: '() { :; }',
      SHELL: '() { :; }',
    };
    expect(upstreamEnvironment({ API_KEY: 'configured', HOME: '/srv' }, parent, 'linux')).toEqual({
      PATH: '/usr/bin',
      HOME: '/srv',
      LANG: 'C.UTF-8',
      LC_TIME: 'en_GB.UTF-8',
      TMPDIR: '/tmp',
      API_KEY: 'configured',
    });
  });

  it('reads Windows names whatever their case', () => {
    const parent = { Path: 'C:\\Windows', SystemRoot: 'C:\\Windows', ComSpec: 'cmd.exe', SECRET: 'x' };
    expect(upstreamEnvironment({}, parent, 'win32')).toEqual({
      Path: 'C:\\Windows',
      SystemRoot: 'C:\\Windows',
      ComSpec: 'cmd.exe',
    });
  });

  it('is what a real child sees: a token in the gateway’s environment is not there', async () => {
    const saved = { ...process.env };
    process.env.MCP_ENVELOPE_TEST_TOKEN = 'do-not-leak-0123456789';
    process.env.SOME_SERVICE_TOKEN = 'do-not-leak-either';
    try {
      const script = `process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'env', params: process.env }) + '\\n');`;
      const transport = new ChildProcessTransport({
        command: process.execPath,
        args: ['-e', script],
        env: { CONFIGURED: 'yes' },
        stderr: new StderrRing(),
      });
      const seen = new Promise<JSONRPCMessage>((resolve) => {
        transport.onmessage = resolve;
      });
      await transport.start();
      const env = ((await seen) as { params: Record<string, string> }).params;
      await transport.close();
      expect(env.CONFIGURED).toBe('yes');
      expect(env.PATH).toBe(process.env.PATH);
      expect(env).not.toHaveProperty('MCP_ENVELOPE_TEST_TOKEN');
      expect(env).not.toHaveProperty('SOME_SERVICE_TOKEN');
    } finally {
      process.env = saved;
    }
  });

  it('keeps the TLS trust settings: a real child trusts the CAs the operator named', async () => {
    const saved = { ...process.env };
    const trust = {
      NODE_EXTRA_CA_CERTS: '/etc/ssl/corporate/ca.pem',
      SSL_CERT_FILE: '/etc/ssl/corporate/bundle.pem',
      SSL_CERT_DIR: '/etc/ssl/corporate/certs',
    };
    Object.assign(process.env, trust);
    try {
      const script = `process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'env', params: process.env }) + '\\n');`;
      const transport = new ChildProcessTransport({
        command: process.execPath,
        args: ['-e', script],
        stderr: new StderrRing(),
      });
      const seen = new Promise<JSONRPCMessage>((resolve) => {
        transport.onmessage = resolve;
      });
      await transport.start();
      const env = ((await seen) as { params: Record<string, string> }).params;
      await transport.close();
      expect(env).toMatchObject(trust);
    } finally {
      process.env = saved;
    }
    // Windows spells them the same; its names are read whatever their case.
    expect(upstreamEnvironment({}, { Path: 'C:\\Windows', ssl_cert_file: 'C:\\ca.pem' }, 'win32')).toEqual({
      Path: 'C:\\Windows',
      ssl_cert_file: 'C:\\ca.pem',
    });
  });
});

const PROCESSES = fileURLToPath(new URL('../../fixtures/servers/processes.ts', import.meta.url));
const started: number[] = [];

afterEach(() => {
  // Whatever a failed test left behind.
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
});

/** Gone, or a zombie no one will reap (this container's init does not): either way, not running. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

/** The processes fixture behind `sh -c`, as a launcher script runs a server: sh stays its parent. */
async function wrapped(...flags: string[]) {
  const transport = new ChildProcessTransport({
    command: '/bin/sh',
    args: ['-c', '"$@"; echo wrapper done >&2', 'sh', process.execPath, PROCESSES, ...flags],
    stderr: new StderrRing(),
  });
  const answers = new Map<unknown, (message: JSONRPCMessage) => void>();
  transport.onmessage = (message) => answers.get((message as { id?: unknown }).id)?.(message);
  await transport.start();
  const answer = new Promise<JSONRPCMessage>((resolve) => answers.set(1, resolve));
  await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'pids' } });
  const { result } = (await answer) as unknown as { result: { content: { text: string }[] } };
  const pids = JSON.parse(result.content[0]?.text ?? '{}') as { pid: number; grandchild?: number };
  started.push(pids.pid, ...(pids.grandchild ? [pids.grandchild] : []));
  return { transport, pids };
}

describe.skipIf(process.platform === 'win32')('an upstream’s processes', () => {
  it('end together on close: the wrapper, the server and what the server started', async () => {
    const { transport, pids } = await wrapped('--grandchild');
    expect(running(pids.grandchild ?? 0)).toBe(true);
    await transport.close();
    expect(running(pids.pid)).toBe(false);
    expect(running(pids.grandchild ?? 0)).toBe(false);
  });

  it('are killed after the grace period when the server ignores SIGTERM and the end of stdin', async () => {
    const { transport, pids } = await wrapped('--stubborn');
    await transport.close();
    expect(running(pids.pid)).toBe(false);
    expect(transport.exit).toBeDefined();
  }, 15_000);
});
