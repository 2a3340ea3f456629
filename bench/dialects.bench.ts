/**
 * Dialect layer cost and profile savings.
 * 1. detect + decode + encode of a 1 KB result in each dialect, next to the
 *    peer JSON.parse + JSON.stringify of the same envelope text, as a ratio
 *    (target: within 3x).
 * 2. Bytes (and estimated tokens) saved per response profile on realistic
 *    results. Token estimator: ceil(UTF-8 bytes / 4), the usual rule of thumb
 *    for JSON under byte-pair tokenizers; no tokenizer is loaded.
 * 3. parseJsonLossless (numbers kept as written) and parseJson (strict) against
 *    JSON.parse on a 1 KB result, without and with numbers a double would
 *    alter, as a ratio.
 */
import { parseJson, parseJsonLossless } from '../src/canonical/json-text.ts';
import { detectDialect } from '../src/envelope/detect.ts';
import type { NormalizedResult, ResultDialectId } from '../src/envelope/index.ts';
import { codecFor } from '../src/envelope/index.ts';
import { applyProfile, PROFILES, type ProfileConfig } from '../src/envelope/profiles.ts';

const DIALECTS: ResultDialectId[] = ['prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'];
const ROUNDS = 7;
const ITERATIONS = 20_000;

function finding(index: number) {
  return {
    id: `F-${index}`,
    rule: 'python.sql-injection',
    severity: index % 3 === 0 ? 'high' : 'medium',
    file: `src/app/module_${index}.py`,
    line: 10 + index,
    message: 'User input reaches a SQL query without parameters.',
    fix: null,
    tags: [],
  };
}

/** About 1 KB of JSON: a typical scan result. */
const payload1k = {
  success: true,
  risk_level: 'high',
  findings: [0, 1, 2, 3].map(finding),
  scanned: { files: 12, lines: 5400, languages: ['python'] },
  stats: { files: 12 },
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Median nanoseconds per operation over ROUNDS rounds of ITERATIONS calls. */
function measure(operation: () => unknown): number {
  for (let i = 0; i < ITERATIONS; i += 1) operation();
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i += 1) operation();
    rounds.push(Number(process.hrtime.bigint() - started) / ITERATIONS);
  }
  return median(rounds);
}

const model: NormalizedResult = {
  ok: true,
  tool: 'security_scan',
  data: payload1k,
  meta: { request_id: 'req_8b3e5f6c0a2f4ed4', duration_ms: 27 },
};

console.log('dialects: detect+decode+encode of a 1 KB result vs JSON.parse+JSON.stringify of the same text');
console.log('dialect      bytes  ours µs  peer µs  ratio  | with parse+stringify: µs  ratio');
for (const dialect of DIALECTS) {
  const codec = codecFor(dialect);
  const envelope = codec.encode(model, { requestId: 'req_8b3e5f6c0a2f4ed4' }).value;
  const text = JSON.stringify(envelope);
  const ours = measure(() => {
    const report = detectDialect(envelope);
    return codecFor(report.dialect as ResultDialectId).encode(
      codecFor(report.dialect as ResultDialectId).decode(report.value),
    );
  });
  const peer = measure(() => JSON.stringify(JSON.parse(text)));
  const full = measure(() => {
    const value = JSON.parse(text);
    const report = detectDialect(value);
    const target = codecFor(report.dialect as ResultDialectId);
    return JSON.stringify(target.encode(target.decode(report.value)).value);
  });
  console.log(
    `${dialect.padEnd(11)} ${String(Buffer.byteLength(text)).padStart(6)} ${(ours / 1000).toFixed(2).padStart(8)} ${(peer / 1000).toFixed(2).padStart(8)} ${(ours / peer).toFixed(2).padStart(5)}x | ${(full / 1000).toFixed(2).padStart(24)} ${(full / peer).toFixed(2).padStart(5)}x`,
  );
}

/** Realistic results with the nulls, empty lists and defaults tools really send. */
const realistic: { name: string; model: NormalizedResult; config: ProfileConfig }[] = [
  {
    name: 'security_scan (40 findings)',
    model: {
      ok: true,
      tool: 'security_scan',
      data: {
        success: true,
        risk_level: 'high',
        findings: Array.from({ length: 40 }, (_, i) => ({
          ...finding(i),
          cwe: i % 2 ? null : 'CWE-89',
          suppressed: false,
          related: [],
          metadata: {},
        })),
        errors: [],
        warnings: [],
        truncated: false,
        debug: { parser: 'tree-sitter', cache_hit: false, timings: {} },
      },
    },
    config: {
      defaults: { suppressed: false, truncated: false, cache_hit: false },
      includeOnly: { security_scan: ['risk_level', 'findings'] },
    },
  },
  {
    name: 'list_templates (25 templates)',
    model: {
      ok: true,
      tool: 'list_templates',
      data: {
        templates: Array.from({ length: 25 }, (_, i) => ({
          template_id: `tpl_${i}`,
          name: `Template ${i}`,
          description: null,
          field_count: 8,
          fields: Array.from({ length: 8 }, (_, f) => ({
            name: `field_${f}`,
            required: false,
            default: null,
            options: [],
          })),
          tags: [],
        })),
        next_cursor: null,
      },
    },
    config: { defaults: { required: false }, includeOnly: { list_templates: ['templates'] } },
  },
];

console.log('\nprofiles: bytes of the scalpel-v1 envelope per profile (tokens ≈ ceil(bytes / 4))');
console.log('result                          profile    bytes  tokens  saved vs debug');
for (const { name, model: result, config } of realistic) {
  const debugBytes = Buffer.byteLength(JSON.stringify(codecFor('scalpel-v1').encode(result).value));
  for (const profile of [...PROFILES].reverse()) {
    const bytes = Buffer.byteLength(
      JSON.stringify(codecFor('scalpel-v1').encode(applyProfile(result, profile, config)).value),
    );
    const saved = debugBytes - bytes;
    console.log(
      `${name.padEnd(31)} ${profile.padEnd(8)} ${String(bytes).padStart(7)} ${String(Math.ceil(bytes / 4)).padStart(7)}  ${saved} B / ~${Math.ceil(saved / 4)} tokens (${((saved / debugBytes) * 100).toFixed(1)}%)`,
    );
  }
}

/** The 1 KB payload as text; the second one with ids, scores and sizes a double would alter. */
const plainText = JSON.stringify(payload1k);
const bigText = plainText
  .replace(/"line":\d+/g, '"line":12345678901234567890')
  .replace(/"files":12/g, '"files":12.0')
  .replace('"lines":5400', '"lines":5.4e3');
if (JSON.stringify(parseJsonLossless(bigText).lossless) !== bigText)
  throw new Error('lossless parse altered the text');
const fast = parseJsonLossless(plainText);
if (fast.lossless !== fast.value) throw new Error('the fast path was not taken');

console.log('\nlossless parse of a 1 KB result vs JSON.parse of the same text');
console.log(
  'text                          bytes  JSON.parse µs  parseJson µs  ratio  parseJsonLossless µs  ratio',
);
for (const [name, text] of [
  ['no number to keep', plainText],
  ['big lines, 12.0, 5.4e3 kept', bigText],
] as const) {
  const peer = measure(() => JSON.parse(text));
  const strict = measure(() => parseJson(text));
  const lossless = measure(() => parseJsonLossless(text));
  console.log(
    `${name.padEnd(29)} ${String(Buffer.byteLength(text)).padStart(5)} ${(peer / 1000).toFixed(2).padStart(14)} ${(strict / 1000).toFixed(2).padStart(13)} ${(strict / peer).toFixed(2).padStart(5)}x ${(lossless / 1000).toFixed(2).padStart(21)} ${(lossless / peer).toFixed(2).padStart(5)}x`,
  );
}
