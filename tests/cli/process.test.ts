import { describe, expect, it } from 'vitest';
import { errorCode, hasStackTrace, runBin } from '../helpers/cli.ts';

/**
 * bin/mcp-envelope as users run it (it runs the built dist/, so run `npm run build`
 * first): one command per exit code, plus what only a real process shows: the
 * exit status, piped stdin read as a stream, and stdout drained before exit.
 * Everything else about the commands is tested in-process, against the sources.
 */
describe('bin/mcp-envelope in a real process', () => {
  it('exit 0: prints exactly the canonical bytes read from a piped stdin', async () => {
    const run = await runBin(['canonicalize'], { input: '{"b":[1.0,1e21],"a":"é"}' });
    expect(run).toMatchObject({ code: 0, signal: null, stderr: '' });
    expect(run.stdoutBytes.equals(Buffer.from('{"a":"é","b":[1,1e+21]}'))).toBe(true);
  });

  it('exit 0: streams stdin into digest --raw', async () => {
    const run = await runBin(['digest', '--raw', '-'], { input: 'abc' });
    expect(run).toMatchObject({
      code: 0,
      stdout: 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n',
    });
  });

  it('exit 0: writes 10 MB of output in full before exiting', async () => {
    const input = `["${'z'.repeat(10 * 1024 * 1024)}"]`;
    const run = await runBin(['canonicalize'], { input });
    expect(run.code).toBe(0);
    expect(run.stdoutBytes.length).toBe(input.length);
  });

  it('exit 1: a check that fails', async () => {
    const run = await runBin(['detect', '-'], {
      input: '{"ok":true,"schema_version":"2026-05-06","data":{}}',
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('no dialect (near: hosted-v2)');
  });

  it('exit 2: input that cannot be parsed, and a usage error, each one line without a stack trace', async () => {
    for (const [args, input, code] of [
      [['wrap'], '{"a": [1, 2', 'JSON_MALFORMED'],
      [['frobnicate'], '', 'USAGE_ERROR'],
    ] as const) {
      const run = await runBin(args, { input });
      expect(run.code, args.join(' ')).toBe(2);
      expect(errorCode(run)).toBe(code);
      expect(run.stdout).toBe('');
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(hasStackTrace(run.stderr)).toBe(false);
    }
  });
});
