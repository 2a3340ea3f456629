import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../../src/canonical/canonicalize.ts';
import {
  ADAPTER_EXECUTION_FAILED,
  adapterFailureEntry,
  STDERR_EXCERPT_CHARS,
  toolReportedErrors,
} from '../../../src/envelope/compat-policy.ts';
import {
  applyCompatibilityPolicy,
  assertEnvelopeV01,
  ENVELOPE_V01,
  isEnvelopeV01,
  wrapFailure,
  wrapLegacy,
} from '../../../src/envelope/index.ts';
import { envelopeFromText } from '../../../src/envelope/prov-v01.ts';
import type { EnvelopeError } from '../../../src/errors/index.ts';

const LEGACY: [string, unknown][] = [
  ['a string', 'plain text output'],
  ['an empty string', ''],
  ['an object', { findings: [{ id: 1 }], b: 2, a: 1 }],
  ['an array', [3, 2, 1]],
  ['a number', 42.5],
  ['zero', 0],
  ['true', true],
  ['false', false],
  ['null', null],
  ['a JSON text that is no envelope', '{"schema_version":"other","x":1}'],
];

describe('wrapping legacy payloads', () => {
  it.each(LEGACY)('wraps %s unchanged as result', (_name, payload) => {
    const before = canonicalize(payload);
    const outcome = applyCompatibilityPolicy(payload);
    expect(outcome.action).toBe('wrapped');
    expect(outcome.envelope.schema_version).toBe(ENVELOPE_V01);
    expect(outcome.envelope.result).toBe(payload);
    expect(canonicalize(payload)).toBe(before);
    expect(isEnvelopeV01(outcome.envelope)).toBe(true);
  });

  it('keeps a payload with its own schema_version intact and records it only as a hint', () => {
    const payload = { schema_version: 'scan.report.v3', findings: [], version: '1.0' };
    const snapshot = structuredClone(payload);
    const envelope = wrapLegacy(payload);
    expect(envelope.result).toBe(payload);
    expect(payload).toEqual(snapshot);
    expect(envelope.meta?.schema_hints?.result).toBe('scan.report.v3');
  });

  it('adds meta, warnings and the explicit null provenance only when asked', () => {
    expect(Object.keys(wrapLegacy(1))).toEqual(['schema_version', 'result']);
    const envelope = wrapLegacy(1, {
      meta: { adapter: 'cli', request_id: 'r1' },
      warnings: [{ code: 'W', message: 'w' }],
      explicitNullProvenance: true,
    });
    expect(envelope).toEqual({
      schema_version: ENVELOPE_V01,
      result: 1,
      warnings: [{ code: 'W', message: 'w' }],
      provenance: null,
      meta: { adapter: 'cli', request_id: 'r1' },
    });
    assertEnvelopeV01(envelope);
  });
});

describe('envelopes pass through unchanged', () => {
  const envelope = {
    schema_version: ENVELOPE_V01,
    result: { a: 1 },
    errors: [{ code: 'TOOL.OWN', message: 'own' }],
  };

  it('as a value: the same object comes back', () => {
    const outcome = applyCompatibilityPolicy(envelope);
    expect(outcome.action).toBe('passed-through');
    expect(outcome.envelope).toBe(envelope);
  });

  it('as JSON text: the text is kept byte for byte', () => {
    const text = '{ "schema_version": "mcp.envelope.v0.1",  "result": "x" }\n';
    const outcome = applyCompatibilityPolicy(text);
    expect(outcome).toMatchObject({ action: 'passed-through', text });
    expect(outcome.envelope).toEqual({ schema_version: ENVELOPE_V01, result: 'x' });
  });

  it('wrapping twice gives the same envelope (no double wrap)', () => {
    const once = wrapLegacy({ x: [1, 2] });
    expect(wrapLegacy(once)).toBe(once);
  });
});

describe('invalid envelopes are rejected, never wrapped', () => {
  function rejection(payload: unknown): EnvelopeError {
    try {
      applyCompatibilityPolicy(payload);
    } catch (error) {
      return error as EnvelopeError;
    }
    throw new Error('expected a rejection');
  }

  it('rejects an unknown top-level field with its pointer', () => {
    const error = rejection({ schema_version: ENVELOPE_V01, result: 1, extra: true });
    expect(error.code).toBe('ENVELOPE_INVALID');
    expect(error.details?.pointer).toBe('/extra');
  });

  it('rejects a double-wrapped envelope', () => {
    const error = rejection({
      schema_version: ENVELOPE_V01,
      result: { schema_version: ENVELOPE_V01, result: 1 },
    });
    expect(error.code).toBe('ENVELOPE_INVALID');
    expect(error.details?.pointer).toBe('/result');
  });

  it('rejects a double-wrapped envelope arriving as text', () => {
    const text = JSON.stringify({
      schema_version: ENVELOPE_V01,
      result: { schema_version: ENVELOPE_V01, result: 1 },
    });
    expect(rejection(text).code).toBe('ENVELOPE_INVALID');
    expect(envelopeFromText(text)).toMatchObject({ kind: 'invalid-envelope' });
  });

  it('rejects an envelope missing result', () => {
    expect(rejection({ schema_version: ENVELOPE_V01 }).code).toBe('ENVELOPE_INVALID');
  });
});

describe('failures seen from outside', () => {
  it('an exit code becomes result null plus ADAPTER.EXECUTION.FAILED with exit_code', () => {
    const envelope = wrapFailure({ exitCode: 3, stderr: 'boom\n' });
    expect(envelope.result).toBeNull();
    expect(envelope.errors).toEqual([
      {
        code: ADAPTER_EXECUTION_FAILED,
        message: 'Tool execution failed with exit code 3.',
        details: { exit_code: 3, stderr_excerpt: 'boom' },
      },
    ]);
    assertEnvelopeV01(envelope);
  });

  it('keeps partial output as result', () => {
    expect(wrapFailure({ exitCode: 1, partialOutput: 'half' }).result).toBe('half');
  });

  it('bounds the stderr excerpt, keeping its end', () => {
    const stderr = `${'x'.repeat(10_000)}THE END`;
    const entry = adapterFailureEntry({ exitCode: 1, stderr });
    const excerpt = entry.details?.stderr_excerpt as string;
    expect(excerpt.length).toBeLessThanOrEqual(STDERR_EXCERPT_CHARS + 1);
    expect(excerpt.endsWith('THE END')).toBe(true);
  });

  it('describes exceptions and signals', () => {
    const entry = adapterFailureEntry({ exception: new TypeError('bad thing') });
    expect(entry).toMatchObject({ message: /bad thing/, details: { exception: 'TypeError' } });
    expect(adapterFailureEntry({ exitCode: null, signal: 'SIGKILL' })).toMatchObject({
      message: /SIGKILL/,
      details: { exit_code: null, signal: 'SIGKILL' },
    });
  });

  it("the tool's own error codes win over the adapter's", () => {
    const output = { error: { code: 'SCAN.TIMEOUT', message: 'scan took too long' } };
    const toolErrors = toolReportedErrors(output);
    expect(toolErrors).toEqual([{ code: 'SCAN.TIMEOUT', message: 'scan took too long' }]);
    const envelope = wrapFailure({
      exitCode: 2,
      partialOutput: output,
      ...(toolErrors ? { toolErrors } : {}),
    });
    expect(envelope.errors?.map((entry) => entry.code)).toEqual(['SCAN.TIMEOUT']);
  });

  it('reads the tool error shapes the seeds use', () => {
    expect(toolReportedErrors({ errors: [{ code: 'A', message: 'a' }, 'junk'] })).toEqual([
      { code: 'A', message: 'a' },
    ]);
    expect(toolReportedErrors({ error: { error_code: 'B', error: 'b' } })).toEqual([
      { code: 'B', message: 'b' },
    ]);
    expect(toolReportedErrors({ level: 'ERROR', code: 'C', what: ['x', 'y'] })).toEqual([
      { code: 'C', message: 'x y' },
    ]);
    expect(toolReportedErrors({ ok: true })).toBeUndefined();
    expect(toolReportedErrors('text')).toBeUndefined();
  });

  it('an envelope the tool printed with its own errors passes through', () => {
    const own = { schema_version: ENVELOPE_V01, result: null, errors: [{ code: 'OWN', message: 'own' }] };
    expect(wrapFailure({ exitCode: 1, partialOutput: JSON.stringify(own) })).toEqual(own);
    expect(wrapFailure({ exitCode: 1, partialOutput: own })).toBe(own);
  });
});
