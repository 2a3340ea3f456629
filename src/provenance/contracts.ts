import type { KeyObject } from 'node:crypto';
import { DIGEST_HEX_LENGTH, digestValue, isDigestAlg } from '../canonical/digest.ts';
import { isJsonObject } from '../canonical/json-value.ts';
import { claimsEnvelopeV01, envelopeV01Issues } from '../envelope/prov-v01.ts';
import { parseAnchor } from '../pointer/anchor.ts';
import { defaultRegistry, SCHEMA_IDS } from '../schemas/index.ts';
import { lookupMethod } from './catalog.ts';
import { checkRecordDigest, checkSignature } from './integrity.ts';
import type { LineageGraph } from './lineage.ts';
import { type Artifact, METHODS, type ProvRecord } from './record.ts';

/**
 * The semantic contract of every catalog method (PROV_METHODS_SPEC.md section 5):
 * claiming a method id is a promise about the record, and "syntax alone is not
 * conformance". Each check says pass, fail, or skip (the contract needs something
 * not given: the envelope, the key, the other records).
 */

export type ContractStatus = 'pass' | 'fail' | 'skip' | 'warn';

export interface ContractFinding {
  method: string;
  status: ContractStatus;
  message: string;
}

export interface ContractContext {
  record: ProvRecord;
  /** The mcp.envelope.v0.1 the record came in, when there was one. */
  envelope?: Record<string, unknown>;
  /** Other records, for lineage contracts. */
  lineage?: LineageGraph;
  publicKey?: KeyObject;
}

type Check = (context: ContractContext, method: string) => ContractFinding[];

const pass = (method: string, message: string): ContractFinding => ({ method, status: 'pass', message });
const fail = (method: string, message: string): ContractFinding => ({ method, status: 'fail', message });
const skip = (method: string, message: string): ContractFinding => ({ method, status: 'skip', message });
const warn = (method: string, message: string): ContractFinding => ({ method, status: 'warn', message });

function allArtifacts(record: ProvRecord): Artifact[] {
  return [...(record.inputs ?? []), ...(record.outputs ?? [])];
}

function needsEnvelope(method: string, context: ContractContext): ContractFinding | undefined {
  return context.envelope === undefined
    ? skip(method, 'contract concerns the envelope around the record, and no envelope was given')
    : undefined;
}

/** The envelope must be a valid mcp.envelope.v0.1 holding this record. */
function envelopeFindings(method: string, context: ContractContext): ContractFinding[] {
  const envelope = context.envelope as Record<string, unknown>;
  if (!claimsEnvelopeV01(envelope)) return [fail(method, 'record is not inside an mcp.envelope.v0.1')];
  const issues = envelopeV01Issues(envelope);
  if (issues.length > 0) {
    const first = issues[0] as { pointer: string; message: string };
    return [
      fail(method, `envelope is not a valid mcp.envelope.v0.1: ${first.pointer || '/'} ${first.message}`),
    ];
  }
  return [];
}

/** An output artifact labelled role=result is the envelope's result: its digest must match. */
function resultPreserved(method: string, context: ContractContext): ContractFinding {
  const envelope = context.envelope as Record<string, unknown>;
  const resultArtifacts = (context.record?.outputs ?? []).filter(
    (artifact) => artifact.labels?.role === 'result',
  );
  const withDigest = resultArtifacts.filter(
    (artifact) => artifact.digest && isDigestAlg(artifact.digest.alg),
  );
  if (withDigest.length === 0) {
    return pass(method, 'payload sits in envelope.result (no result digest to compare)');
  }
  for (const artifact of withDigest) {
    const digest = artifact.digest as { alg: 'sha256' | 'sha512' | 'blake3'; value: string };
    const actual = digestValue(envelope.result, digest.alg);
    if (actual.value !== digest.value) {
      return fail(method, `envelope.result does not match output artifact ${artifact.artifact_id}'s digest`);
    }
  }
  return pass(method, 'envelope.result matches the result artifact digest');
}

const CHECKS: Readonly<Record<string, Check>> = {
  [METHODS.wrap]: (context, method) => {
    const missing = needsEnvelope(method, context);
    if (missing) return [missing];
    const problems = envelopeFindings(method, context);
    return problems.length > 0 ? problems : [resultPreserved(method, context)];
  },
  [METHODS.passThrough]: (context, method) => {
    const missing = needsEnvelope(method, context);
    if (missing) return [missing];
    const problems = envelopeFindings(method, context);
    if (problems.length > 0) return problems;
    return [pass(method, 'envelope is not double-wrapped')];
  },
  [METHODS.attachRecord]: (context, method) => {
    const missing = needsEnvelope(method, context);
    if (missing) return [missing];
    const envelope = context.envelope as Record<string, unknown>;
    const result = defaultRegistry().validate(SCHEMA_IDS.record, envelope.provenance);
    if (!result.valid) {
      const first = result.issues[0];
      return [
        fail(
          method,
          `envelope.provenance is not a valid prov.record.v0.1: ${first?.pointer} ${first?.message}`,
        ),
      ];
    }
    const findings = [pass(method, 'envelope.provenance is a valid prov.record.v0.1')];
    if (!context.record?.tool?.adapter)
      findings.push(warn(method, 'provenance.tool.adapter should name the adapter'));
    return findings;
  },
  [METHODS.errorsCapture]: (context, method) => {
    const missing = needsEnvelope(method, context);
    if (missing) return [missing];
    const errors = (context.envelope as Record<string, unknown>).errors;
    if (!Array.isArray(errors) || errors.length === 0)
      return [fail(method, 'envelope.errors is empty or absent')];
    const bad = errors.findIndex((entry) => !isJsonObject(entry) || !entry.code || !entry.message);
    return bad >= 0
      ? [fail(method, `envelope.errors[${bad}] lacks code or message`)]
      : [pass(method, `envelope.errors has ${errors.length} entr${errors.length === 1 ? 'y' : 'ies'}`)];
  },
  [METHODS.warningsCapture]: (context, method) => {
    const missing = needsEnvelope(method, context);
    if (missing) return [missing];
    const warnings = (context.envelope as Record<string, unknown>).warnings;
    return Array.isArray(warnings) && warnings.length > 0
      ? [pass(method, `envelope.warnings has ${warnings.length} entr${warnings.length === 1 ? 'y' : 'ies'}`)]
      : [fail(method, 'envelope.warnings is empty or absent')];
  },
  [METHODS.build]: (context, method) => {
    const result = defaultRegistry().validate(SCHEMA_IDS.record, context.record);
    if (result.valid) return [pass(method, 'record is a valid prov.record.v0.1')];
    const first = result.issues[0];
    return [
      fail(method, `record is not a valid prov.record.v0.1: ${first?.pointer || '/'} ${first?.message}`),
    ];
  },
  [METHODS.registerInput]: (context, method) => registered(method, context.record.inputs, 'inputs'),
  [METHODS.registerOutput]: (context, method) => registered(method, context.record.outputs, 'outputs'),
  [METHODS.evidenceJsonPointer]: (context, method) => anchorsOfKind(method, context.record, 'json'),
  [METHODS.evidenceTextLines]: (context, method) => anchorsOfKind(method, context.record, 'text'),
  [METHODS.coerceEvidence]: (context, method) => {
    const evidence = context.record.evidence ?? [];
    const bad = evidence.findIndex((entry) => entry.schema_version !== 'evidence.v0.1');
    if (bad >= 0) return [fail(method, `evidence[${bad}] is not evidence.v0.1`)];
    return evidence.length === 0
      ? [fail(method, 'claims evidence was coerced, but the record has no evidence')]
      : [pass(method, `all ${evidence.length} evidence entries are evidence.v0.1`)];
  },
  'integrity.digest.sha256': (context, method) => digestContract(method, context.record, 'sha256'),
  'integrity.digest.sha512': (context, method) => digestContract(method, context.record, 'sha512'),
  'integrity.digest.blake3': (context, method) => digestContract(method, context.record, 'blake3'),
  [METHODS.recordDigest]: (context, method) => {
    const check = checkRecordDigest(context.record);
    if (check.status === 'absent') return [fail(method, 'provenance.integrity.record_digest is absent')];
    return [check.status === 'pass' ? pass(method, check.message) : fail(method, check.message)];
  },
  [METHODS.signatureCreate]: (context, method) => {
    const integrity = context.record.integrity;
    if (!integrity?.signature) return [fail(method, 'provenance.integrity.signature is absent')];
    if (!integrity.record_digest) {
      return [fail(method, 'the signature must cover integrity.record_digest, which is absent')];
    }
    return [signatureFinding(method, context)];
  },
  [METHODS.signatureVerify]: (context, method) => {
    if (!context.record.integrity?.signature) {
      return [fail(method, 'claims a verified signature, but the record has none')];
    }
    return [signatureFinding(method, context)];
  },
  [METHODS.parentLink]: (context, method) => {
    const parents = context.record.parents ?? [];
    if (parents.length === 0) return [fail(method, 'provenance.parents is empty')];
    const findings = [pass(method, `links ${parents.length} parent run${parents.length === 1 ? '' : 's'}`)];
    if (parents.includes(context.record.run_id))
      findings.push(fail(method, 'the record names itself as a parent'));
    if (context.lineage) {
      const missing = parents.filter((parent) => !context.lineage?.get(parent));
      if (missing.length > 0)
        findings.push(warn(method, `parents not retrievable here: ${missing.join(', ')}`));
    }
    return findings;
  },
  [METHODS.graphBuild]: (context, method) => {
    if (!context.lineage) return [skip(method, 'contract concerns a set of records, and none was given')];
    const report = context.lineage.report();
    if (!report.acyclic)
      return [fail(method, `lineage graph has a cycle: ${report.cycles[0]?.join(' -> ')}`)];
    if (report.nodes.length < 2 || report.edges.length === 0) {
      return [fail(method, 'a lineage graph needs several records linked by parents')];
    }
    return [pass(method, `${report.nodes.length} records form a DAG with ${report.edges.length} links`)];
  },
};

function registered(
  method: string,
  artifacts: readonly Artifact[] | undefined,
  where: string,
): ContractFinding[] {
  if (!artifacts || artifacts.length === 0) return [fail(method, `provenance.${where} is empty`)];
  const bad = artifacts.findIndex((artifact) => !artifact.artifact_id || !artifact.media_type);
  return bad >= 0
    ? [fail(method, `provenance.${where}[${bad}] lacks artifact_id or media_type`)]
    : [
        pass(
          method,
          `${artifacts.length} artifact${artifacts.length === 1 ? '' : 's'} in provenance.${where}`,
        ),
      ];
}

function anchorsOfKind(method: string, record: ProvRecord, kind: 'json' | 'text'): ContractFinding[] {
  const marker = kind === 'json' ? '#json:/' : '#text:line:';
  const findings: ContractFinding[] = [];
  let count = 0;
  for (const [index, entry] of (record.evidence ?? []).entries()) {
    if (!entry.source.includes(kind === 'json' ? '#json:' : '#text:line:')) continue;
    try {
      parseAnchor(entry.source);
      if (entry.source.includes(marker)) count++;
    } catch (error) {
      findings.push(fail(method, `evidence[${index}].source: ${(error as Error).message}`));
    }
  }
  if (count === 0) findings.push(fail(method, `no evidence source contains "${marker}"`));
  else if (findings.length === 0)
    findings.push(pass(method, `${count} evidence anchor${count === 1 ? '' : 's'} with ${marker}`));
  return findings;
}

function digestContract(
  method: string,
  record: ProvRecord,
  alg: 'sha256' | 'sha512' | 'blake3',
): ContractFinding[] {
  const artifacts = allArtifacts(record).filter((artifact) => artifact.digest?.alg === alg);
  if (artifacts.length === 0) return [fail(method, `no artifact has a ${alg} digest`)];
  const findings: ContractFinding[] = [];
  for (const artifact of artifacts) {
    const value = (artifact.digest as { value: string }).value;
    if (!/^[0-9a-f]+$/.test(value) || value.length !== DIGEST_HEX_LENGTH[alg]) {
      findings.push(
        fail(
          method,
          `artifact ${artifact.artifact_id}: ${alg} digest must be ${DIGEST_HEX_LENGTH[alg]} lowercase hex`,
        ),
      );
    }
  }
  if (findings.length === 0) {
    findings.push(
      pass(method, `${artifacts.length} ${alg} digest${artifacts.length === 1 ? '' : 's'} well-formed`),
    );
  }
  return findings;
}

function signatureFinding(method: string, context: ContractContext): ContractFinding {
  const check = checkSignature(context.record, context.publicKey);
  switch (check.status) {
    case 'pass':
      return pass(method, check.message);
    case 'unverifiable':
      return skip(method, check.message);
    default:
      return fail(method, check.message);
  }
}

/** Methods whose contracts concern only the envelope, so they can be checked without a record. */
const ENVELOPE_LEVEL: ReadonlySet<string> = new Set([
  METHODS.wrap,
  METHODS.passThrough,
  METHODS.errorsCapture,
  METHODS.warningsCapture,
]);

/**
 * Checks one method's contract, claimed or not (a conformance vector about a
 * method checks that method). Without a record, only envelope-level contracts
 * can hold.
 */
export function checkMethodContract(
  method: string,
  context: Omit<ContractContext, 'record'> & { record?: ProvRecord },
): ContractFinding[] {
  const check = CHECKS[method];
  if (!check) return [skip(method, 'not in the catalog: no contract to check')];
  if (!context.record && !ENVELOPE_LEVEL.has(method)) {
    return [fail(method, 'contract concerns a provenance record, and there is none')];
  }
  return check(context as ContractContext, method);
}

/** Checks the contract of every method the record claims. Unknown methods have no contract to check. */
export function checkContracts(context: ContractContext): ContractFinding[] {
  const findings: ContractFinding[] = [];
  for (const method of new Set(context.record.methods ?? [])) {
    const check = CHECKS[method];
    if (check) findings.push(...check(context, method));
    else if (!lookupMethod(method)) findings.push(skip(method, 'not in the catalog: no contract to check'));
  }
  return findings;
}

/** The methods whose contracts this module checks: every method in the catalog. */
export const CONTRACT_METHODS: readonly string[] = Object.keys(CHECKS);
