import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type TempDir, tempDir } from '../helpers/cli.ts';

/** Payload numbers leave the CLI exactly as they came in; digests stay RFC 8785. */

let dir: TempDir;
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

const PAYLOAD = '{"id": 12345678901234567890, "x": 1.0}';
const KEPT = '{"id":12345678901234567890,"x":1.0}';

describe('wrap keeps payload numbers as written', () => {
  it('wraps a payload with a big integer and 1.0 (file and stdin)', async () => {
    const file = await dir.file('big.json', PAYLOAD);
    for (const run of [await runCli(['wrap', file]), await runCli(['wrap'], { input: PAYLOAD })]) {
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`"result":${KEPT}`);
    }
  });

  it('in every dialect, and in --json output', async () => {
    const hosted = await runCli(['wrap', '--dialect', 'hosted-v2', '--tool-name', 't'], { input: PAYLOAD });
    expect(hosted.stdout).toContain(`"data":${KEPT}`);
    const scalpel = await runCli(['wrap', '--dialect', 'scalpel-v1', '--request-id', 'r1'], {
      input: PAYLOAD,
    });
    expect(scalpel.stdout).toContain(`"data":${KEPT}`);
    const json = await runCli(['--json', 'wrap'], { input: PAYLOAD });
    expect(json.stdout).toContain('"id": 12345678901234567890');
    expect(json.stdout).toContain('"x": 1.0');
  });

  it('wraps a command’s output (--exec) with its numbers as printed', async () => {
    const run = await runCli([
      'wrap',
      '--exec',
      '--',
      process.execPath,
      '-e',
      `process.stdout.write(${JSON.stringify(PAYLOAD)})`,
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`"result":${KEPT}`);
    const failed = await runCli([
      'wrap',
      '--exec',
      '--',
      process.execPath,
      '-e',
      `process.stdout.write(${JSON.stringify(PAYLOAD)}); process.exit(3)`,
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain(`"result":${KEPT}`);
    expect(failed.stdout).toContain('ADAPTER.EXECUTION.FAILED');
  });

  it('digests a big integer by its digits: the rounded one is another payload, and an edit fails verify', async () => {
    const args = ['wrap', '--capture-provenance', '--provenance-mode', 'full', '--deterministic-ids', 's'];
    const exact = await runCli(args, { input: PAYLOAD });
    const rounded = await runCli(args, { input: '{"id":12345678901234567000,"x":1}' });
    expect(exact.code).toBe(0);
    expect(exact.stdout).toContain(`"result":${KEPT}`);
    const digestOf = (text: string) => JSON.parse(text).provenance.outputs[0].digest.value;
    expect(digestOf(exact.stdout)).not.toBe(digestOf(rounded.stdout));
    const envelope = await dir.file('wrapped.json', exact.stdout);
    const verified = await runCli(['verify', envelope]);
    expect(verified.stdout).toContain('VERIFIED');
    expect(verified.stdout).not.toContain('NOT VERIFIED');
    // One digit changed to the value's nearest double: the same double, other digits, a failed check.
    const edited = await dir.file(
      'edited.json',
      exact.stdout.replace('12345678901234567890', '12345678901234567000'),
    );
    const refused = await runCli(['verify', edited]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('sha256 does not match the content');
  });

  it('keeps generated integers of up to 30 digits verbatim', async () => {
    const integer = fc
      .tuple(
        fc.boolean(),
        fc.constantFrom(...'123456789'),
        fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 29 }),
      )
      .map(([negative, head, tail]) => `${negative ? '-' : ''}${head}${tail}`);
    await fc.assert(
      fc.asyncProperty(fc.array(integer, { minLength: 1, maxLength: 8 }), async (numbers) => {
        const payload = `{"n":[${numbers.join(', ')}],"first":${numbers[0]}}`;
        const run = await runCli(['wrap'], { input: payload });
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`"result":${payload.replaceAll(', ', ',')}`);
      }),
      { numRuns: 12 },
    );
  }, 60_000);
});

describe('convert keeps payload numbers as written', () => {
  const prov = `{"schema_version":"mcp.envelope.v0.1","result":${PAYLOAD}}`;

  it('prov-v0.1 to hosted-v2 keeps them in data', async () => {
    const file = await dir.file('prov.json', prov);
    const run = await runCli(['convert', file, '--to', 'hosted-v2', '--tool', 't']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`{"ok":true,"tool":"t","schema_version":"2026-02-19","data":${KEPT}}\n`);
  });

  it('keeps them through a profile, in normalize, and in a legacy payload', async () => {
    const trimmed = await runCli(['convert', '-', '--to', 'scalpel-v1', '--profile', 'standard'], {
      input: `{"schema_version":"mcp.envelope.v0.1","result":{"id":12345678901234567890,"x":1.0,"empty":[]}}`,
    });
    expect(trimmed.code).toBe(0);
    expect(trimmed.stdout).toContain(`"data":${KEPT}`);
    const normalized = await runCli(['normalize', '-'], { input: prov });
    expect(normalized.stdout).toContain('"id": 12345678901234567890');
    const legacy = await runCli(['convert', '-', '--to', 'prov-v0.1'], { input: PAYLOAD });
    expect(legacy.stdout).toBe(`{"schema_version":"mcp.envelope.v0.1","result":${KEPT}}\n`);
  });

  it('passes a pretty-printed envelope already in the target dialect through unchanged', async () => {
    const pretty =
      '{\n  "ok": true,\n  "tool": "t",\n  "schema_version": "2026-02-19",\n  "data": {\n    "id": 12345678901234567890,\n    "x": 1.0\n  }\n}\n';
    const file = await dir.file('hosted.json', pretty);
    const run = await runCli(['convert', file, '--to', 'hosted-v2']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(pretty);
    const provPretty = `${JSON.stringify(JSON.parse(prov), null, 4)}\n`;
    const same = await runCli(['convert', '-', '--to', 'prov-v0.1'], { input: provPretty });
    expect(same.stdout).toBe(provPretty);
  });
});

describe('digests and canonical forms stay RFC 8785', () => {
  it('canonicalizes a big integer as its double and 1.0 as 1', async () => {
    const run = await runCli(['canonicalize'], { input: PAYLOAD });
    expect(run).toMatchObject({ code: 0, stdout: '{"id":12345678901234567000,"x":1}' });
  });
});
