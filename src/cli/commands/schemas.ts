import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parseJsonBytes } from '../../canonical/json-text.ts';
import { isJsonObject } from '../../canonical/json-value.ts';
import { BUNDLED_SCHEMAS } from '../../schemas/catalog.ts';
import { type Registrar, runs } from '../command.ts';
import { EXIT } from '../output.ts';

interface SchemaFinding {
  file: string;
  ok: boolean;
  message: string;
}

/**
 * Every schema must be a JSON object that is a valid draft 2020-12 schema and
 * compiles with all its `$ref`s resolved against the others in the set.
 */
export function checkSchemaSet(schemas: readonly { file: string; schema: unknown }[]): SchemaFinding[] {
  const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
  const findings: SchemaFinding[] = [];
  const usable: { file: string; schema: Record<string, unknown> }[] = [];
  for (const { file, schema } of schemas) {
    if (!isJsonObject(schema)) {
      findings.push({ file, ok: false, message: 'root is not an object' });
      continue;
    }
    if (!ajv.validateSchema(schema)) {
      findings.push({ file, ok: false, message: `not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}` });
      continue;
    }
    try {
      ajv.addSchema(schema, typeof schema.$id === 'string' ? undefined : file);
      usable.push({ file, schema });
    } catch (error) {
      findings.push({ file, ok: false, message: (error as Error).message });
    }
  }
  for (const { file, schema } of usable) {
    try {
      ajv.getSchema(typeof schema.$id === 'string' ? schema.$id : file);
      findings.push({ file, ok: true, message: 'valid, compiles, $refs resolve' });
    } catch (error) {
      findings.push({ file, ok: false, message: `does not compile: ${(error as Error).message}` });
    }
  }
  return findings.sort((a, b) => a.file.localeCompare(b.file));
}

async function loadSchemaDir(dir: string): Promise<{ file: string; schema: unknown }[]> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
  const out: { file: string; schema: unknown }[] = [];
  for (const file of files) {
    try {
      out.push({ file, schema: parseJsonBytes(await readFile(join(dir, file))) });
    } catch (error) {
      out.push({ file, schema: `unreadable: ${(error as Error).message}` });
    }
  }
  return out;
}

export const registerValidateSchemas: Registrar = (program, invocation) => {
  program
    .command('validate-schemas')
    .description(
      'check that every schema is valid draft 2020-12, compiles, and its $refs resolve (bundled set by default)',
    )
    .argument('[dir]', 'a folder of *.json schemas to check instead')
    .action(
      runs(invocation, async ({ io }, dir: string | undefined) => {
        const set =
          dir === undefined
            ? BUNDLED_SCHEMAS.map(({ file, schema }) => ({ file, schema }))
            : await loadSchemaDir(resolve(io.cwd, dir));
        const findings = checkSchemaSet(set);
        const failed = findings.filter((finding) => !finding.ok).length;
        const lines = findings.map(
          (finding) => `${finding.ok ? 'OK' : 'ERROR'}: ${finding.file}: ${finding.message}`,
        );
        lines.push(
          failed === 0
            ? `All ${findings.length} schemas valid`
            : `${failed} of ${findings.length} schemas invalid`,
        );
        return {
          exitCode: failed === 0 ? EXIT.ok : EXIT.checkFailed,
          human: lines.join('\n'),
          json: { ok: failed === 0, schemas: findings },
        };
      }),
    );
};
