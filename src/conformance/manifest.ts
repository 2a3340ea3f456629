import { fileURLToPath } from 'node:url';
import { isJsonObject } from '../canonical/json-value.ts';
import { checkMethodId, type MethodFinding } from '../provenance/catalog.ts';
import { defaultRegistry, SCHEMA_IDS } from '../schemas/index.ts';

/**
 * Capability manifests (`prov-capabilities@v0.1`): schema validation plus the
 * method-id checks on `implements` and `optional`. CONFORMANCE_LEVELS.md shows
 * `"conformance_level": "L2-engine"` in its examples while the manifest schema
 * only allows syntax-/semantics-/fully-conformant; such a manifest is invalid
 * here (the schema is normative) and the finding says how to fix it.
 */

/** This project's own capability manifest, at the package root. */
export const BUNDLED_MANIFEST_PATH = fileURLToPath(new URL('../../prov-capabilities.json', import.meta.url));

export interface ManifestFinding {
  level: 'error' | 'warning';
  code: string;
  pointer: string;
  message: string;
}

export interface Manifest {
  schema: 'prov-capabilities@v0.1';
  engine: { name: string; version: string; vendor?: string; repo?: string; license?: string };
  implements: string[];
  optional?: string[];
  conformance_level?: 'syntax-conformant' | 'semantics-conformant' | 'fully-conformant';
  constraints?: Record<string, unknown>;
  test_vectors_validated?: string[];
  known_deviations?: { method_id: string; deviation: string; reason?: string }[];
}

const LEVEL_NAMES = /^L[123]-(integrity|engine|lineage)$/;

function methodFindings(list: unknown, where: 'implements' | 'optional'): ManifestFinding[] {
  if (!Array.isArray(list)) return [];
  const findings: ManifestFinding[] = [];
  list.forEach((id, index) => {
    if (typeof id !== 'string') return;
    for (const finding of checkMethodId(id) as MethodFinding[]) {
      if (finding.level === 'info') continue;
      findings.push({
        level: finding.level,
        code: finding.code,
        pointer: `/${where}/${index}`,
        message: finding.message,
      });
    }
  });
  return findings;
}

export function validateManifest(manifest: unknown): ManifestFinding[] {
  const findings: ManifestFinding[] = [];
  const schema = defaultRegistry().validate(SCHEMA_IDS.manifest, manifest);
  if (!schema.valid) {
    for (const issue of schema.issues) {
      let message = `${issue.pointer || '/'} ${issue.message}`;
      if (
        issue.pointer === '/conformance_level' &&
        isJsonObject(manifest) &&
        LEVEL_NAMES.test(String(manifest.conformance_level))
      ) {
        message += ' (level names such as L2-engine are computed by conformance-report, not declared)';
      }
      findings.push({ level: 'error', code: 'SCHEMA_INVALID', pointer: issue.pointer, message });
    }
  }
  if (!isJsonObject(manifest)) return findings;
  findings.push(...methodFindings(manifest.implements, 'implements'));
  findings.push(...methodFindings(manifest.optional, 'optional'));
  if (Array.isArray(manifest.implements) && Array.isArray(manifest.optional)) {
    const both = manifest.optional.filter((id) => (manifest.implements as unknown[]).includes(id));
    for (const id of both) {
      findings.push({
        level: 'warning',
        code: 'MANIFEST_METHOD_TWICE',
        pointer: '/optional',
        message: `${String(id)} is listed in both implements and optional`,
      });
    }
  }
  return findings;
}
