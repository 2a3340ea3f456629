import { isJsonObject } from '../../canonical/json-value.ts';
import { claimsEnvelopeV01 } from '../../envelope/prov-v01.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { checkMethodIds, METHOD_CATALOG } from '../../provenance/catalog.ts';
import { checkContracts } from '../../provenance/contracts.ts';
import type { ProvRecord } from '../../provenance/record.ts';
import { defaultRegistry, SCHEMA_IDS } from '../../schemas/index.ts';
import { type Registrar, runs } from '../command.ts';
import { readJsonInputExact } from '../input.ts';
import { EXIT } from '../output.ts';

export const registerListMethods: Registrar = (program, invocation) => {
  program
    .command('list-methods')
    .description('list the method catalog (ids, status, summaries) and its namespaces')
    .action(
      runs(invocation, async () => {
        const lines = [`prov-spec ${METHOD_CATALOG.spec_version}: ${METHOD_CATALOG.methods.length} methods`];
        for (const method of METHOD_CATALOG.methods) {
          const replaced = method.superseded_by ? ` (superseded by ${method.superseded_by})` : '';
          lines.push(`  [${method.status.padEnd(12)}] ${method.id}${replaced}`);
          lines.push(`                 ${method.summary}`);
        }
        lines.push('namespaces:');
        for (const [name, entry] of Object.entries(METHOD_CATALOG.namespaces)) {
          lines.push(`  ${name.padEnd(12)} ${entry.status.padEnd(9)} ${entry.description}`);
        }
        return {
          exitCode: EXIT.ok,
          human: lines.join('\n'),
          json: {
            spec_version: METHOD_CATALOG.spec_version,
            methods: METHOD_CATALOG.methods,
            namespaces: METHOD_CATALOG.namespaces,
          },
        };
      }),
    );
};

/** The record of a record file, or the provenance of an envelope file (with the envelope). */
export function recordAndEnvelope(value: unknown): {
  record: Record<string, unknown>;
  envelope?: Record<string, unknown>;
} {
  if (claimsEnvelopeV01(value)) {
    const envelope = value as Record<string, unknown>;
    if (!isJsonObject(envelope.provenance)) {
      throw new EnvelopeError('PROVENANCE_VERIFICATION_FAILED', 'The envelope carries no provenance record');
    }
    return { record: envelope.provenance, envelope };
  }
  if (!isJsonObject(value))
    throw new EnvelopeError('SCHEMA_INVALID', 'Input is not a prov.record.v0.1 object');
  return { record: value };
}

export const registerValidateMethods: Registrar = (program, invocation) => {
  program
    .command('validate-methods')
    .description(
      "check a record's method ids (grammar, reserved and unknown namespaces, deprecation) and every claimed method's contract",
    )
    .argument('<record>', 'prov.record.v0.1 or mcp.envelope.v0.1 file, or - for stdin')
    .option('--strict', 'methods outside the catalog are errors, not warnings')
    .action(
      runs(invocation, async ({ io }, file: string, options: { strict?: boolean }) => {
        const { record, envelope } = recordAndEnvelope(await readJsonInputExact(file, io));
        const methods = Array.isArray(record.methods)
          ? record.methods.filter((m): m is string => typeof m === 'string')
          : [];
        const findings: { level: string; code: string; method?: string; message: string }[] = [];
        if (methods.length === 0) {
          findings.push({ level: 'warning', code: 'METHODS_EMPTY', message: 'The record claims no methods' });
        }
        findings.push(...checkMethodIds(methods, { strict: options.strict === true }));
        const schema = defaultRegistry().validate(SCHEMA_IDS.record, record);
        if (schema.valid) {
          for (const finding of checkContracts({
            record: record as unknown as ProvRecord,
            ...(envelope ? { envelope } : {}),
          })) {
            if (finding.status === 'pass') continue;
            findings.push({
              level: finding.status === 'fail' ? 'error' : finding.status === 'warn' ? 'warning' : 'info',
              code:
                finding.status === 'fail'
                  ? 'METHOD_CONTRACT_VIOLATED'
                  : finding.status === 'skip'
                    ? 'CONTRACT_NOT_CHECKED'
                    : 'CONTRACT_WARNING',
              method: finding.method,
              message: `${finding.method}: ${finding.message}`,
            });
          }
        } else {
          findings.push({
            level: 'error',
            code: 'SCHEMA_INVALID',
            message: `record is not a valid prov.record.v0.1: ${schema.issues[0]?.pointer || '/'} ${schema.issues[0]?.message}`,
          });
        }
        const errors = findings.filter((finding) => finding.level === 'error').length;
        const human = [
          ...findings.map((finding) => `${finding.level.toUpperCase()}: ${finding.message}`),
          errors === 0
            ? `OK: ${methods.length} methods checked`
            : `FAILED: ${errors} error${errors === 1 ? '' : 's'}`,
        ].join('\n');
        return {
          exitCode: errors === 0 ? EXIT.ok : EXIT.checkFailed,
          human,
          json: { ok: errors === 0, methods, findings },
        };
      }),
    );
};
