import { realpathSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode, runCli, type TempDir, tempDir } from '../helpers/cli.ts';

let dir: TempDir;
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

const ENVELOPE = { schema_version: 'mcp.envelope.v0.1', result: { findings: [] }, meta: { adapter: 'x' } };

describe('wrap', () => {
  it('wraps a legacy JSON file unchanged as result', async () => {
    const file = await dir.file('legacy.json', { schema_version: 'scan.v3', items: [1, 2] });
    const run = await runCli(['wrap', file]);
    expect(run.code).toBe(0);
    const envelope = JSON.parse(run.stdout);
    expect(envelope).toMatchObject({
      schema_version: 'mcp.envelope.v0.1',
      result: { schema_version: 'scan.v3', items: [1, 2] },
    });
  });

  it('wraps stdin, and with --text keeps it as a string', async () => {
    const json = await runCli(['wrap'], { input: '[1,2]' });
    expect(JSON.parse(json.stdout).result).toEqual([1, 2]);
    const text = await runCli(['wrap', '--text', '-'], { input: 'not json at all\n' });
    expect(text.code).toBe(0);
    expect(JSON.parse(text.stdout).result).toBe('not json at all\n');
  });

  it('passes an envelope through byte for byte, also given as text', async () => {
    const source = `${JSON.stringify(ENVELOPE, null, 3)}\n`;
    const run = await runCli(['wrap', '-'], { input: source });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(ENVELOPE);
    const asText = await runCli(['wrap', '--text', '-'], { input: source });
    expect(JSON.parse(asText.stdout)).toEqual(ENVELOPE);
  });

  it('rejects a double-wrapped envelope and an unknown top-level field with exit 1', async () => {
    const double = await runCli(['wrap'], {
      input: JSON.stringify({ schema_version: 'mcp.envelope.v0.1', result: ENVELOPE }),
    });
    expect(double.code).toBe(1);
    expect(errorCode(double)).toBe('ENVELOPE_INVALID');
    const extra = await runCli(['wrap'], { input: JSON.stringify({ ...ENVELOPE, surprise: 1 }) });
    expect(extra.code).toBe(1);
    expect(extra.stderr).toContain('/surprise');
  });

  it('--exec with a failing command gives ADAPTER.EXECUTION.FAILED with its exit code and stderr', async () => {
    const run = await runCli([
      'wrap',
      '--exec',
      '--',
      process.execPath,
      '-e',
      'console.log("partial");console.error("went wrong");process.exit(7)',
    ]);
    expect(run.code).toBe(1);
    const envelope = JSON.parse(run.stdout);
    expect(envelope.result).toBe('partial\n');
    expect(envelope.errors).toEqual([
      expect.objectContaining({
        code: 'ADAPTER.EXECUTION.FAILED',
        details: expect.objectContaining({ exit_code: 7, stderr_excerpt: 'went wrong' }),
      }),
    ]);
  });

  it('--exec with a succeeding command wraps its JSON output', async () => {
    const run = await runCli([
      'wrap',
      '--exec',
      '--',
      process.execPath,
      '-e',
      'console.log(JSON.stringify({ok:1}))',
    ]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).result).toEqual({ ok: 1 });
  });

  it("--exec runs the command in the CLI's folder and environment", async () => {
    const script = 'console.log(JSON.stringify({cwd: process.cwd(), value: process.env.WRAP_TEST_VALUE}))';
    const run = await runCli(['wrap', '--exec', '--', process.execPath, '-e', script], {
      cwd: dir.path,
      env: { WRAP_TEST_VALUE: 'from-io' },
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).result).toEqual({ cwd: realpathSync(dir.path), value: 'from-io' });
  });

  it("--exec keeps the tool's own error codes", async () => {
    const script = 'console.log(JSON.stringify({error:{code:"SCAN.FAILED",message:"no"}}));process.exit(1)';
    const run = await runCli(['wrap', '--exec', '--', process.execPath, '-e', script]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).errors.map((entry: { code: string }) => entry.code)).toEqual([
      'SCAN.FAILED',
    ]);
  });

  it('--exec of a command that does not exist is an enveloped failure, not a crash', async () => {
    const run = await runCli(['wrap', '--exec', '--', '/nonexistent/command-xyz']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      result: null,
      errors: [{ code: 'ADAPTER.EXECUTION.FAILED' }],
    });
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('--exec runs the command through the pipeline: a scalar stays its text, any dialect, the same warnings', async () => {
    const big = await runCli([
      'wrap',
      '--exec',
      '--',
      process.execPath,
      '-e',
      'console.log("18446744073709551616")',
    ]);
    expect(big.code).toBe(0);
    // As a number a reader would get 18446744073709552000; the tool's text is kept.
    expect(JSON.parse(big.stdout).result).toBe('18446744073709551616\n');
    const hosted = await runCli([
      'wrap',
      '--exec',
      '--dialect',
      'hosted-v2',
      '--tool-name',
      'count',
      '--',
      process.execPath,
      '-e',
      'console.log(JSON.stringify({n:1})); console.error("note")',
    ]);
    expect(hosted.code).toBe(0);
    expect(JSON.parse(hosted.stdout)).toMatchObject({ ok: true, tool: 'count', data: { n: 1 } });
    expect(hosted.stderr).toContain('loss: /warnings');
  });

  it('refuses --timeout without --exec, which it would not apply to', async () => {
    const run = await runCli(['wrap', '--timeout', '100', '-'], { input: '{"a":1}' });
    expect(run.code).toBe(2);
    expect(errorCode(run)).toBe('USAGE_ERROR');
  });

  it('--exec --timeout kills a hanging command', async () => {
    const run = await runCli([
      'wrap',
      '--exec',
      '--timeout',
      '300',
      '--',
      process.execPath,
      '-e',
      'setInterval(()=>{},1000)',
    ]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).errors[0]).toMatchObject({
      code: 'ADAPTER.EXECUTION.FAILED',
      details: { exit_code: null, signal: 'SIGKILL' },
    });
  });

  it('attaches a deterministic provenance record that verifies', async () => {
    const args = [
      'wrap',
      '--capture-provenance',
      '--provenance-mode',
      'full',
      '--deterministic-ids',
      'seed',
      '--tool-name',
      'demo',
    ];
    const one = await runCli(args, { input: '{"x":1}' });
    const two = await runCli(args, { input: '{"x":1}' });
    expect(one.code).toBe(0);
    expect(one.stdout).toBe(two.stdout);
    const envelope = JSON.parse(one.stdout);
    expect(envelope.provenance.schema_version).toBe('prov.record.v0.1');
    const file = await dir.file('wrapped.json', one.stdout);
    const verify = await runCli(['--json', 'verify', file]);
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout).ok).toBe(true);
  });
});

describe('validate', () => {
  const samples: Record<string, object> = {
    envelope: ENVELOPE,
    record: {
      schema_version: 'prov.record.v0.1',
      run_id: 'r1',
      tool: { name: 't', version: '1' },
      inputs: [],
      outputs: [],
      methods: [],
      evidence: [],
      parents: [],
    },
    artifact: { schema_version: 'artifact.v0.1', artifact_id: 'a', media_type: 'text/plain' },
    evidence: { schema_version: 'evidence.v0.1', field: 'f', source: 'artifact:a#json:/x' },
  };

  for (const [kind, value] of Object.entries(samples)) {
    it(`--as ${kind} accepts a valid document and rejects a broken one`, async () => {
      const good = await dir.file(`${kind}.json`, value);
      const ok = await runCli(['--json', 'validate', '--as', kind, good]);
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ valid: true });
      const broken = await dir.file(`${kind}-bad.json`, { ...value, unexpected_member: 1 });
      const bad = await runCli(['--json', 'validate', '--as', kind, broken]);
      expect(bad.code).toBe(1);
      const report = JSON.parse(bad.stdout);
      expect(report.valid).toBe(false);
      expect(report.issues.map((issue: { pointer: string }) => issue.pointer)).toContain(
        '/unexpected_member',
      );
    });
  }

  it('--as manifest, methods, request and artifact-ref use their schemas', async () => {
    for (const kind of ['manifest', 'methods', 'request', 'artifact-ref']) {
      const run = await runCli(['--json', 'validate', '--as', kind, '-'], { input: '{}' });
      expect(run.code, kind).toBe(1);
      expect(JSON.parse(run.stdout).valid).toBe(false);
    }
    const manifest = await runCli(['validate', '--as', 'manifest', 'prov-capabilities.json']);
    expect(manifest.code).toBe(0);
  });

  it('detects the kind from schema_version, and refuses an unknown --as', async () => {
    expect((await runCli(['validate', '-'], { input: JSON.stringify(ENVELOPE) })).code).toBe(0);
    const unknown = await runCli(['validate', '--as', 'nonsense', '-'], { input: '{}' });
    expect(unknown.code).toBe(2);
    expect(errorCode(unknown)).toBeTruthy();
  });
});
