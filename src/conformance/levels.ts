import type { CaseResult } from './evaluate.ts';

/**
 * Conformance levels of prov-spec (CONFORMANCE_LEVELS.md): each builds on the
 * previous one. A level is met when its methods are implemented and claimed,
 * and every case of its vectors passes; a level whose vectors are absent is not
 * demonstrated, hence not met.
 */

export interface LevelSpec {
  level: 1 | 2 | 3;
  name: 'L1-integrity' | 'L2-engine' | 'L3-lineage';
  /** Every one of these is required. */
  requires: readonly string[];
  /** At least one of these is required (L1's digest algorithms). */
  requiresOneOf?: readonly string[];
  /** Vector folders that must be present and pass. */
  vectors: readonly string[];
}

export const LEVELS: readonly LevelSpec[] = [
  {
    level: 1,
    name: 'L1-integrity',
    requires: [],
    requiresOneOf: ['integrity.digest.sha256', 'integrity.digest.sha512', 'integrity.digest.blake3'],
    vectors: [],
  },
  {
    level: 2,
    name: 'L2-engine',
    requires: [
      'adapter.wrap.envelope_v0_1',
      'adapter.provenance.attach_record_v0_1',
      'engine.prov.artifact.register_output',
    ],
    vectors: ['adapter.wrap.envelope_v0_1', 'engine.prov.artifact.register_output'],
  },
  {
    level: 3,
    name: 'L3-lineage',
    requires: ['lineage.parent.link'],
    vectors: ['lineage.parent.link'],
  },
];

export interface LevelAssessment {
  level: number;
  name: string;
  met: boolean;
  reasons: string[];
}

export interface LevelResult {
  /** 0 when not even L1 is met. */
  level: number;
  name: string | null;
  assessments: LevelAssessment[];
}

function folderStatus(folder: string, cases: readonly CaseResult[]): 'pass' | 'fail' | 'absent' {
  const own = cases.filter((result) => result.folder === folder);
  if (own.length === 0) return 'absent';
  return own.every((result) => result.passed) ? 'pass' : 'fail';
}

/**
 * The level met by an engine that implements `implemented`, declares `claimed`,
 * and produced `cases` on the vectors.
 */
export function assessLevels(
  claimed: ReadonlySet<string>,
  implemented: ReadonlySet<string>,
  cases: readonly CaseResult[],
): LevelResult {
  const assessments: LevelAssessment[] = [];
  let reached = 0;
  for (const spec of LEVELS) {
    const reasons: string[] = [];
    for (const method of spec.requires) {
      if (!claimed.has(method)) reasons.push(`${method} is not claimed`);
      else if (!implemented.has(method))
        reasons.push(`${method} is claimed but not implemented by this engine`);
    }
    let vectorFolders = [...spec.vectors];
    if (spec.requiresOneOf) {
      const usable = spec.requiresOneOf.filter((method) => claimed.has(method) && implemented.has(method));
      if (usable.length === 0)
        reasons.push(`none of ${spec.requiresOneOf.join(', ')} is claimed and implemented`);
      // Every claimed digest method with vectors must pass them; at least one must have vectors.
      const withVectors = usable.filter((method) => folderStatus(method, cases) !== 'absent');
      if (usable.length > 0 && withVectors.length === 0) reasons.push(`no vectors for ${usable.join(', ')}`);
      vectorFolders = [...vectorFolders, ...withVectors];
    }
    for (const folder of vectorFolders) {
      const status = folderStatus(folder, cases);
      if (status === 'absent') reasons.push(`no vectors for ${folder}`);
      if (status === 'fail') reasons.push(`vectors of ${folder} fail`);
    }
    const previousMet = spec.level === 1 || (assessments[spec.level - 2]?.met ?? false);
    if (!previousMet) reasons.push(`L${spec.level - 1} is not met`);
    const met = reasons.length === 0;
    if (met) reached = spec.level;
    assessments.push({ level: spec.level, name: spec.name, met, reasons });
  }
  return { level: reached, name: reached === 0 ? null : (LEVELS[reached - 1]?.name ?? null), assessments };
}
