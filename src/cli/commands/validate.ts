import { isJsonObject } from '../../canonical/json-value.ts';
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
};

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
      'validate a document against its JSON Schema (detected from its schema_version unless --as is given)',
    )
    .argument('<file>', 'JSON file, or - for stdin')
    .option('--as <kind>', `one of ${Object.keys(VALIDATE_TARGETS).join(', ')}`)
    .action(
      runs(invocation, async ({ io }, file: string, options: { as?: string }) => {
        const value = await readJsonInput(file, io);
        const target = options.as ?? detectTarget(value);
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
