import { readFile } from 'node:fs/promises';
import { parseJsonBytes } from '../../canonical/json-text.ts';
import { BUNDLED_MANIFEST_PATH } from '../../conformance/manifest.ts';
import { buildConformanceReport, runVectors } from '../../conformance/report.ts';
import { BUNDLED_VECTORS_DIR } from '../../conformance/vector-layout.ts';
import { checkMethodId, METHOD_CATALOG } from '../../provenance/catalog.ts';
import { CONTRACT_METHODS } from '../../provenance/contracts.ts';
import {
  checkSignature,
  generateSigningKeyPair,
  loadPrivateKey,
  loadPublicKey,
  signRecord,
} from '../../provenance/integrity.ts';
import { RecordBuilder } from '../../provenance/record.ts';
import { BUNDLED_SCHEMAS } from '../../schemas/catalog.ts';
import { type Registrar, runs } from '../command.ts';
import { EXIT } from '../output.ts';
import { checkSchemaSet } from './schemas.ts';

interface SelfCheck {
  check: string;
  ok: boolean;
  message: string;
}

async function selfChecks(): Promise<SelfCheck[]> {
  const checks: SelfCheck[] = [];
  const schemas = checkSchemaSet(BUNDLED_SCHEMAS);
  const badSchemas = schemas.filter((finding) => !finding.ok);
  checks.push({
    check: 'schemas',
    ok: badSchemas.length === 0,
    message:
      badSchemas.length === 0
        ? `all ${schemas.length} bundled schemas valid`
        : badSchemas.map((s) => `${s.file}: ${s.message}`).join('; '),
  });

  const catalogProblems: string[] = [];
  for (const method of METHOD_CATALOG.methods) {
    const errors = checkMethodId(method.id).filter((finding) => finding.level === 'error');
    if (errors.length > 0) catalogProblems.push(`${method.id}: ${errors[0]?.message}`);
    if (method.namespace !== method.id.split('.')[0])
      catalogProblems.push(`${method.id}: namespace ${method.namespace}`);
    if (method.status === 'deprecated' && !method.superseded_by)
      catalogProblems.push(`${method.id}: deprecated without superseded_by`);
    if (!CONTRACT_METHODS.includes(method.id)) catalogProblems.push(`${method.id}: no contract check`);
  }
  checks.push({
    check: 'catalog',
    ok: catalogProblems.length === 0,
    message:
      catalogProblems.length === 0
        ? `${METHOD_CATALOG.methods.length} methods, each with a contract check`
        : catalogProblems.join('; '),
  });

  const run = await runVectors(BUNDLED_VECTORS_DIR);
  checks.push({
    check: 'vectors',
    ok: run.failed === 0,
    message: `${run.passed} passed, ${run.failed} failed${
      run.failed
        ? `: ${run.cases
            .filter((c) => !c.passed)
            .map((c) => c.id)
            .join(', ')}`
        : ''
    }`,
  });

  const manifest = parseJsonBytes(await readFile(BUNDLED_MANIFEST_PATH));
  const report = buildConformanceReport(manifest, run);
  checks.push({
    check: 'conformance',
    ok: report.ok && report.level.level === 3,
    message: `own manifest ${report.manifest.valid ? 'valid' : 'invalid'}, level met: ${report.level.name ?? 'none'}`,
  });

  const keys = generateSigningKeyPair();
  const record = new RecordBuilder({ runId: 'self-test', tool: { name: 'mcp-envelope', version: '0' } })
    .output({
      id: 'result',
      mediaType: 'application/json',
      content: { json: { ok: true } },
      digest: 'sha256',
    })
    .build();
  const signed = signRecord(record, loadPrivateKey(keys.privateKeyPem));
  const good = checkSignature(signed, loadPublicKey(keys.publicKeyPem)).status === 'pass';
  const tampered =
    checkSignature({ ...signed, run_id: 'self-test!' }, loadPublicKey(keys.publicKeyPem)).status === 'fail';
  checks.push({
    check: 'signatures',
    ok: good && tampered,
    message: good && tampered ? 'sign, verify and tamper detection work' : 'Ed25519 round trip failed',
  });
  return checks;
}

export const registerSelfTest: Registrar = (program, invocation) => {
  program
    .command('self-test')
    .description('check the bundled schemas, method catalog, vectors, own capability manifest and signatures')
    .action(
      runs(invocation, async () => {
        const checks = await selfChecks();
        const failed = checks.filter((check) => !check.ok).length;
        const lines = checks.map((check) => `${check.ok ? 'OK' : 'FAIL'}: ${check.check}: ${check.message}`);
        lines.push(`${checks.length - failed} passed, ${failed} failed`);
        return {
          exitCode: failed === 0 ? EXIT.ok : EXIT.checkFailed,
          human: lines.join('\n'),
          json: { ok: failed === 0, checks },
        };
      }),
    );
};
