import { isJsonObject } from '../../canonical/json-value.ts';
import { detectDialect } from '../../envelope/detect.ts';
import { DIALECT_IDS, type DialectId } from '../../envelope/dialect.ts';
import { codecFor, isDialectId } from '../../envelope/dialects/index.ts';
import { envelopeV01Issues } from '../../envelope/prov-v01.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { defaultRegistry, SCHEMA_IDS, type SchemaIssue } from '../../schemas/index.ts';
import { type Registrar, runs } from '../command.ts';
import { readJsonInput } from '../input.ts';
import { EXIT } from '../output.ts';

/** What `--as` accepts, and the schema behind each name. */
export const VALIDATE_TARGETS: Record<string, string> = {
  envelope: SCHEMA_IDS.envelope,
  record: SCHEMA_IDS.record,
  artifact: SCHEMA_IDS.artifact,
  'artifact-ref': SCHEMA_IDS.artifactRef,
  evidence: SCHEMA_IDS.evidence,
  request: SCHEMA_IDS.request,
  manifest: SCHEMA_IDS.manifest,
  methods: SCHEMA_IDS.methods,
  ...Object.fromEntries(DIALECT_IDS.map((id) => [id, codecFor(id).schemaId])),
};

/**
 * Issues of a value as an envelope of `dialect`: the dialect's own detection
 * (schema, near misses) plus the no-double-wrap rule, each as pointer + message.
 */
function dialectIssues(dialect: DialectId, value: unknown): SchemaIssue[] {
  const detection = codecFor(dialect).detect(value);
  const reasons = detection.match ? [] : detection.reasons;
  if (detection.match && dialect !== 'legacy') {
    const report = detectDialect(value);
    if (report.dialect !== dialect) reasons.push(...report.reasons);
  }
  return reasons.map((reason) => {
    const space = reason.indexOf(' ');
    const pointer = reason.startsWith('/') && space > 0 ? reason.slice(0, space) : '';
    const message = pointer === '' ? reason : reason.slice(space + 1);
    return {
      pointer: pointer === '/' ? '' : pointer,
      message,
      keyword: 'dialect',
      schemaPath: '',
      params: {},
    };
  });
}

/** Picks the target from the document's own version marker. */
function detectTarget(value: unknown): string | undefined {
  if (!isJsonObject(value)) return undefined;
  const byVersion: Record<string, string> = {
    'mcp.envelope.v0.1': 'envelope',
    'prov.record.v0.1': 'record',
    'artifact.v0.1': 'artifact',
    'artifact.ref.v0.1': 'artifact-ref',
    'evidence.v0.1': 'evidence',
    'mcp.request.v0.1': 'request',
    'methods-catalog@v0.1': 'methods',
  };
  if (typeof value.schema_version === 'string' && byVersion[value.schema_version])
    return byVersion[value.schema_version];
  if (value.schema === 'prov-capabilities@v0.1') return 'manifest';
  return undefined;
}

export const registerValidate: Registrar = (program, invocation) => {
  program
    .command('validate')
    .description(
      'validate a document against its JSON Schema (detected from its schema_version or envelope dialect unless --as is given)',
    )
    .argument('<file>', 'JSON file, or - for stdin')
    .option('--as <kind>', `one of ${Object.keys(VALIDATE_TARGETS).join(', ')}`)
    .action(
      runs(invocation, async ({ io }, file: string, options: { as?: string }) => {
        const value = await readJsonInput(file, io);
        const detected = detectDialect(value).dialect;
        const byDialect = detected === null || detected === 'legacy' ? undefined : detected;
        const target = options.as ?? detectTarget(value) ?? byDialect;
        if (target === undefined) {
          throw new EnvelopeError(
            'USAGE_ERROR',
            `Cannot tell what ${file} is from its schema_version; pass --as (${Object.keys(VALIDATE_TARGETS).join(', ')})`,
          );
        }
        const schemaId = VALIDATE_TARGETS[target];
        if (schemaId === undefined) {
          throw new EnvelopeError(
            'USAGE_ERROR',
            `Unknown --as ${target} (expected ${Object.keys(VALIDATE_TARGETS).join(', ')})`,
          );
        }
        const issues: SchemaIssue[] =
          target === 'envelope'
            ? envelopeV01Issues(value)
            : isDialectId(target)
              ? dialectIssues(target, value)
              : [...defaultRegistry().validate(schemaId, value).issues];
        const valid = issues.length === 0;
        const human = valid
          ? `valid ${schemaId}`
          : [
              `invalid ${schemaId}:`,
              ...issues.map((issue) => `  ${issue.pointer || '/'} ${issue.message}`),
            ].join('\n');
        return {
          exitCode: valid ? EXIT.ok : EXIT.checkFailed,
          human,
          json: {
            valid,
            as: target,
            schema: schemaId,
            issues: issues.map(({ pointer, message, keyword }) => ({ pointer, message, keyword })),
          },
        };
      }),
    );
};
