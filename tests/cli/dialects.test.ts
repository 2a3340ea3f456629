import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { DIALECT_FIXTURES } from '../support/dialect-fixtures.ts';

const work = mkdtempSync(join(tmpdir(), 'mcp-envelope-dialects-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const run = (args: string[], stdin?: string) => runCli(args, { input: stdin ?? '' });

const fixture = (name: string): string => join(DIALECT_FIXTURES, name);

function temp(name: string, content: string): string {
  const path = join(work, name);
  writeFileSync(path, content);
  return path;
}

describe('mcp-envelope detect / normalize / convert / validate --as / wrap --dialect', () => {
  it('detects a dialect (exit 0) and explains a near miss (exit 1)', async () => {
    const found = await run(['detect', fixture('scalpel-v1.ok.json'), '--json']);
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout)).toMatchObject({ dialect: 'scalpel-v1', near: [] });
    const dated = await run(
      ['detect', '-'],
      '{"ok":true,"tool":"t","schema_version":"2026-05-06","data":{}}',
    );
    expect(dated).toMatchObject({ code: 0, stdout: 'hosted-v2 2026-05-06\n' });
    const near = await run(['detect', '-'], '{"ok":true,"schema_version":"2026-05-06","data":{}}');
    expect(near.code).toBe(1);
    expect(near.stdout).toContain('no dialect (near: hosted-v2)');
    expect(near.stdout).toContain('/ is missing required member "tool"');
  });

  it('detects text that is not JSON as legacy text', async () => {
    const result = await run(['detect', temp('words.txt', 'just some words {')]);
    expect(result).toMatchObject({ code: 0, stdout: 'legacy (text)\n' });
  });

  it('normalizes any dialect into the model', async () => {
    const result = await run(['normalize', fixture('scalpel-v1.error.json')]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      from: 'scalpel-v1',
      model: { ok: false, tool: 'extract_code', error: { code: 'NOT_FOUND', retriable: false } },
    });
  });

  it('converts, reporting losses on stderr; --strict refuses with CONVERSION_LOSSY and exit 1', async () => {
    const loose = await run(['convert', fixture('scalpel-v1.error.json'), '--to', 'hosted-v2']);
    expect(loose.code).toBe(0);
    expect(JSON.parse(loose.stdout)).toMatchObject({
      ok: false,
      tool: 'extract_code',
      schema_version: '2026-02-19',
      error: { code: 'NOT_FOUND', retriable: false },
    });
    expect(loose.stderr).toContain('loss: /meta/tier');
    const strict = await run(['convert', fixture('scalpel-v1.error.json'), '--to', 'hosted-v2', '--strict']);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toMatch(/^error\[CONVERSION_LOSSY\]/);
    const lossless = await run([
      'convert',
      fixture('hosted-v2.ok.json'),
      '--to',
      'scalpel-v1',
      '--strict',
      '--json',
    ]);
    expect(lossless.code).toBe(0);
    expect(JSON.parse(lossless.stdout)).toMatchObject({ from: 'hosted-v2', to: 'scalpel-v1', losses: [] });
  });

  it('refuses a request envelope and an unknown dialect with exit 2', async () => {
    const request = await run(['convert', fixture('jsonrpc-request.json'), '--to', 'legacy']);
    expect(request.code).toBe(2);
    expect(request.stderr).toContain('error[NOT_A_RESULT]');
    const unknown = await run(['convert', fixture('legacy.text.json'), '--to', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      'error[USAGE_ERROR]: --to must be one of prov-v0.1, scalpel-v1, hosted-v2, a11y-v0.1, legacy, got nope\n',
    );
  });

  it('offers jsonrpc-request only where a request is meant: not as a result dialect', async () => {
    for (const args of [
      ['convert', fixture('legacy.text.json'), '--to', 'jsonrpc-request'],
      ['wrap', '--dialect', 'jsonrpc-request', fixture('legacy.text.json')],
    ]) {
      const refused = await run(args);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toMatch(/^error\[USAGE_ERROR\]: --(to|dialect) wants a result dialect \(/);
      expect(refused.stderr).toContain('jsonrpc-request is a request form, not a result');
    }
    for (const args of [
      ['convert', '--to', 'nope'],
      ['wrap', '--dialect', 'nope'],
    ]) {
      const unknown = await run(args, '{}');
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).not.toContain('jsonrpc-request');
    }
    for (const command of ['convert', 'wrap']) {
      expect((await run([command, '--help'])).stdout).not.toContain('jsonrpc-request');
    }
  });

  it('validates against a dialect with --as', async () => {
    const valid = await run(['validate', fixture('a11y-v0.1.ok.json'), '--as', 'a11y-v0.1']);
    expect(valid).toMatchObject({ code: 0, stdout: 'valid a11y.envelope.v0.1\n' });
    const invalid = await run(['validate', fixture('hosted-v2.ok.json'), '--as', 'scalpel-v1', '--json']);
    expect(invalid.code).toBe(1);
    expect(JSON.parse(invalid.stdout)).toMatchObject({ valid: false, as: 'scalpel-v1' });
    const request = await run(['validate', fixture('jsonrpc-request.json'), '--as', 'jsonrpc-request']);
    expect(request.code).toBe(0);
    const detected = await run(['validate', fixture('scalpel-v1.ok.json')]);
    expect(detected).toMatchObject({ code: 0, stdout: 'valid scalpel.envelope.v1\n' });
  });

  it('wraps a legacy payload in the chosen dialect, and passes an envelope of that dialect through unchanged', async () => {
    const wrapped = await run(
      ['wrap', '--dialect', 'scalpel-v1', '--tool-name', 'security_scan', '--request-id', 'r-1', '-'],
      '{"findings":[]}',
    );
    expect(wrapped.code).toBe(0);
    expect(JSON.parse(wrapped.stdout)).toMatchObject({
      tool_id: 'security_scan',
      request_id: 'r-1',
      error: null,
      data: { findings: [] },
    });
    const same = await run(['wrap', '--dialect', 'hosted-v2', fixture('hosted-v2.ok.json')]);
    expect(same.code).toBe(0);
    expect(same.stdout).toBe(
      '{\n  "ok": true,\n  "tool": "fill_template",\n  "schema_version": "2026-02-19",\n  "data": {}\n}\n',
    );
    const text = await run(
      ['wrap', '--text', '--dialect', 'hosted-v2', '--tool-name', 'echo', '-'],
      '{"a":1}',
    );
    expect(JSON.parse(text.stdout)).toEqual({
      ok: true,
      tool: 'echo',
      schema_version: '2026-02-19',
      data: '{"a":1}',
    });
    const converted = await run(['wrap', fixture('hosted-v2.ok.json')]);
    expect(JSON.parse(converted.stdout)).toEqual({ schema_version: 'mcp.envelope.v0.1', result: {} });
  });

  it('trims the payload to a profile, with a profile configuration file', async () => {
    const result = temp(
      'scan.json',
      JSON.stringify({
        risk: 'high',
        findings: [],
        notes: null,
        debug: { cache_hit: false },
        truncated: false,
      }),
    );
    const standard = await run(['convert', result, '--to', 'legacy', '--profile', 'standard']);
    expect(JSON.parse(standard.stdout)).toEqual({
      risk: 'high',
      debug: { cache_hit: false },
      truncated: false,
    });
    const config = temp('profile.json', JSON.stringify({ defaults: { cache_hit: false, truncated: false } }));
    const minimal = await run([
      'convert',
      result,
      '--to',
      'legacy',
      '--profile',
      'minimal',
      '--profile-config',
      config,
    ]);
    expect(JSON.parse(minimal.stdout)).toEqual({ risk: 'high' });
    const bad = await run([
      'normalize',
      result,
      '--profile',
      'minimal',
      '--profile-config',
      temp('bad.json', '{"x":1}'),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('error[USAGE_ERROR]');
  });

  it('wraps a near miss of another dialect intact, with a warning, and refuses an invalid prov-v0.1 claim', async () => {
    const near = { mcp: { envelope: 'x' }, result: { kept: [1, 2] } };
    const scalpel = await run(['wrap', '--dialect', 'scalpel-v1', '-'], JSON.stringify(near));
    expect(scalpel.code).toBe(0);
    expect(scalpel.stderr).toContain('warning[ADAPTER.ENVELOPE.NEAR_MISS]');
    expect(JSON.parse(scalpel.stdout)).toMatchObject({ error: null, data: near });
    const prov = await run(['wrap', '-'], JSON.stringify(near));
    expect(prov.code).toBe(0);
    expect(JSON.parse(prov.stdout)).toMatchObject({
      result: near,
      warnings: [{ code: 'ADAPTER.ENVELOPE.NEAR_MISS', details: { dialect: 'a11y-v0.1' } }],
    });
    // Wrapping a broken mcp.envelope.v0.1 would nest envelopes: refused.
    const claim = await run(
      ['wrap', '-'],
      JSON.stringify({ schema_version: 'mcp.envelope.v0.1', result: 1, x: 2 }),
    );
    expect(claim.code).toBe(1);
    expect(claim.stderr).toContain('error[ENVELOPE_INVALID]');
  });
});

describe('convert and wrap agree on their flags', () => {
  it('convert takes --tool-name as wrap does, and still --tool', async () => {
    const input = JSON.stringify({ schema_version: 'mcp.envelope.v0.1', result: { n: 1 } });
    for (const flag of ['--tool-name', '--tool']) {
      const result = await run(['convert', '-', '--to', 'hosted-v2', flag, 'named'], input);
      expect(result.code, flag).toBe(0);
      expect(JSON.parse(result.stdout), flag).toMatchObject({ tool: 'named', data: { n: 1 } });
    }
  });
});

describe('detect, normalize and convert given a whole CallToolResult', () => {
  const scalpel = readFileSync(fixture('scalpel-v1.error.json'), 'utf8');
  // A number past double precision, written out, so the test can see it kept as written.
  const hostedText =
    '{"ok":true,"tool":"count","schema_version":"2026-05-06","data":{"n":12345678901234567890}}';
  const structured = `{"content":[{"type":"text","text":${JSON.stringify(hostedText)}}],"structuredContent":${hostedText},"isError":false}`;
  const textOnly = JSON.stringify({ content: [{ type: 'text', text: scalpel }], isError: true, _meta: {} });

  it('detect names the dialect of the envelope inside, and says where it was found', async () => {
    const found = await run(['detect', '-'], structured);
    expect(found).toMatchObject({
      code: 0,
      stdout: "hosted-v2 2026-05-06 (read from a CallToolResult's structuredContent)\n",
    });
    const json = await run(['detect', '-', '--json'], textOnly);
    expect(JSON.parse(json.stdout)).toMatchObject({
      dialect: 'scalpel-v1',
      call_tool_result: 'content[0].text',
    });
  });

  it('normalize decodes the envelope inside', async () => {
    const result = await run(['normalize', '-'], textOnly);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      from: 'scalpel-v1',
      call_tool_result: 'content[0].text',
      model: { ok: false, tool: 'extract_code', error: { code: 'NOT_FOUND' } },
    });
  });

  it('convert converts the envelope inside, its numbers as written, and notes where it was found', async () => {
    const converted = await run(['convert', '-', '--to', 'prov-v0.1'], structured);
    expect(converted.code, converted.stderr).toBe(0);
    expect(converted.stderr).toContain("note: read from a CallToolResult's structuredContent");
    expect(converted.stdout).toContain('"result":{"n":12345678901234567890}');
    expect(JSON.parse(converted.stdout)).toMatchObject({ schema_version: 'mcp.envelope.v0.1' });
    // Already in the target dialect: the envelope as the tool wrote it, not the CallToolResult around it.
    const same = await run(['convert', '-', '--to', 'hosted-v2'], structured);
    expect(same.stdout).toBe(`${hostedText}\n`);
  });

  it('reads an object with members a CallToolResult does not have as a payload, as before', async () => {
    const payload = JSON.stringify({ content: [{ type: 'text', text: scalpel }], total: 1 });
    const detected = await run(['detect', '-', '--json'], payload);
    expect(JSON.parse(detected.stdout)).toMatchObject({ dialect: 'legacy' });
    expect(JSON.parse(detected.stdout)).not.toHaveProperty('call_tool_result');
  });
});
