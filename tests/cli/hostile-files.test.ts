import { execFileSync } from 'node:child_process';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_INPUT_BYTES } from '../../src/cli/input.ts';
import { errorCode, hasStackTrace, runCli, type TempDir, tempDir } from '../helpers/cli.ts';

let dir: TempDir;
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

function fifo(name: string): string {
  const path = join(dir.path, name);
  execFileSync('mkfifo', [path]);
  return path;
}

describe('files that are not regular files', () => {
  it('digest --raw refuses a device that never ends (/dev/zero) with INPUT_UNREADABLE', async () => {
    const run = await runCli(['digest', '--raw', '/dev/zero']);
    expect(run.code).toBe(2);
    expect(errorCode(run)).toBe('INPUT_UNREADABLE');
    expect(run.stderr).toContain('character device');
    expect(hasStackTrace(run.stderr)).toBe(false);
  });

  it('digest --raw refuses a named pipe no one writes to, instead of waiting for a writer', async () => {
    const run = await runCli(['digest', '--raw', fifo('digest.fifo')]);
    expect(run.code).toBe(2);
    expect(errorCode(run)).toBe('INPUT_UNREADABLE');
    expect(run.stderr).toContain('named pipe');
  });

  it('verify skips an artifact whose file is a named pipe, and finishes', async () => {
    const artifacts = join(dir.path, 'artifacts');
    execFileSync('mkdir', ['-p', artifacts]);
    execFileSync('mkfifo', [join(artifacts, 'out.txt')]);
    const record = {
      schema_version: 'prov.record.v0.1',
      run_id: 'fifo-run',
      tool: { name: 't', version: '1' },
      inputs: [],
      outputs: [
        {
          schema_version: 'artifact.v0.1',
          artifact_id: 'out',
          media_type: 'text/plain',
          locator: 'out.txt',
          digest: { alg: 'sha256', value: 'a'.repeat(64) },
        },
      ],
      methods: [],
      evidence: [],
      parents: [],
    };
    const file = await dir.file('fifo-record.json', record);
    const run = await runCli(['--json', 'verify', '--artifacts', artifacts, file]);
    const report = JSON.parse(run.stdout) as {
      checks: { check: string; status: string; message?: string }[];
    };
    const check = report.checks.find((entry) => entry.check.startsWith('artifact:outputs[0]'));
    expect(check).toMatchObject({ status: 'skip', message: expect.stringContaining('not a regular file') });
  });
});

describe('input past the size bound', () => {
  it('normalize refuses a 506 MiB file with INPUT_TOO_LARGE naming the limit', async () => {
    // Sparse: the size is there without the bytes being written. Read, it failed as a bare INTERNAL_ERROR.
    const path = join(dir.path, 'huge.json');
    await writeFile(path, '');
    await truncate(path, 506 * 1024 * 1024);
    const run = await runCli(['normalize', path]);
    expect(run.code).toBe(2);
    expect(errorCode(run)).toBe('INPUT_TOO_LARGE');
    expect(run.stderr).toContain(`input limit of 256 MiB (${MAX_INPUT_BYTES} bytes)`);
  });
});

describe('proxy --token', () => {
  it('refuses TOKEN= (no tier after "=") as a usage error naming the flag', async () => {
    const run = await runCli([
      'proxy',
      '--http',
      '127.0.0.1:0',
      '--token',
      'secret-token=',
      '--',
      'node',
      'x.js',
    ]);
    expect(run.code).toBe(2);
    expect(errorCode(run)).toBe('USAGE_ERROR');
    expect(run.stderr).toContain('--token TOKEN=TIER has nothing after "="');
  });
});
