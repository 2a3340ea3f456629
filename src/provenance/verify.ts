import type { KeyObject } from 'node:crypto';
import {
  type Digest,
  type DigestAlg,
  digestBytes,
  digestFile,
  digestFormatProblem,
  digestValue,
  openRegularFile,
} from '../canonical/digest.ts';
import { decodeUtf8, parseJson } from '../canonical/json-text.ts';
import { isJsonObject } from '../canonical/json-value.ts';
import { claimsEnvelopeV01, envelopeV01Issues } from '../envelope/prov-v01.ts';
import { EnvelopeError } from '../errors/index.ts';
import { parseAnchor, resolveAnchor } from '../pointer/anchor.ts';
import { defaultRegistry, SCHEMA_IDS } from '../schemas/index.ts';
import { ArtifactFolder } from './artifact-folder.ts';
import { checkMethodIds } from './catalog.ts';
import { checkContracts } from './contracts.ts';
import { checkRecordDigest, checkSignature } from './integrity.ts';
import type { LineageGraph } from './lineage.ts';
import type { Artifact, ProvRecord } from './record.ts';

/**
 * Verification without trusting the producer: from the record (or the
 * envelope holding it), the spec, and inputs the auditor can obtain, recompute
 * every digest that can be recomputed, resolve every evidence anchor, check every
 * claimed method's contract, the record digest and the signature.
 */

export type CheckStatus = 'pass' | 'fail' | 'skip' | 'warn';

export interface VerifyCheck {
  /** What was checked, e.g. `schema`, `method:<id>`, `contract:<id>`, `artifact:<id>`, `evidence[0]`. */
  check: string;
  status: CheckStatus;
  message: string;
  code?: string;
}

/** `verified`/`failed`: checked; `absent`: not in the record (nothing to check); `not_checked`: present, but not checkable here. */
export type CoverageStatus = 'verified' | 'failed' | 'absent' | 'not_checked';

/** The record digest or the signature. */
export interface CoverageItem {
  /** Whether the record carries it. */
  present: boolean;
  status: CoverageStatus;
  /** What was found, or why it was not checked. */
  detail: string;
}

/** Artifact digests, evidence anchors or parent links: how many the record carries and what became of each. */
export interface CoverageTally {
  present: number;
  verified: number;
  failed: number;
  not_checked: number;
  /** Why some were not checked: distinct reasons, in order of first appearance. */
  reasons: string[];
}

/**
 * - `verified`: everything the record carries (digests, signature, evidence anchors, parents) was checked and held;
 * - `partially_verified`: a digest or the signature was verified, something else could not be checked;
 * - `nothing_verified`: the record carries integrity-bearing items, but none could be checked here;
 * - `nothing_to_verify`: the record carries no record digest, signature or artifact digest;
 * - `failed`: a check failed.
 */
export type VerifyVerdict =
  | 'verified'
  | 'partially_verified'
  | 'nothing_verified'
  | 'nothing_to_verify'
  | 'failed';

/** What the record carries and what of it was checked: a reader must not take "nothing to check" for "checked". */
export interface VerifyCoverage {
  verdict: VerifyVerdict;
  record_digest: CoverageItem;
  signature: CoverageItem;
  /** Over the artifacts that carry a digest; `artifacts` counts all of them, digest or not. */
  artifact_digests: CoverageTally & { artifacts: number };
  /** `verified` counts the anchors that resolve. */
  evidence_anchors: CoverageTally;
  /** Over the record's parents; `verified` counts those found among the other records given. */
  lineage: CoverageTally;
}

export interface VerifyReport {
  subject: 'envelope' | 'record';
  run_id?: string;
  /** No check failed. Read `coverage.verdict` for what was actually verified. */
  ok: boolean;
  counts: Record<CheckStatus, number>;
  coverage: VerifyCoverage;
  checks: VerifyCheck[];
}

export interface VerifyOptions {
  /** Folder the artifacts' content is read from (and only from). */
  artifactsDir?: string;
  /**
   * Key to verify the signature with. Giving one asks for a signed record: an
   * unsigned record then fails.
   */
  publicKey?: KeyObject;
  /** Other records, for lineage checks. */
  lineage?: LineageGraph;
  /** Methods outside the catalog fail instead of warn. */
  strictMethods?: boolean;
}

const JSON_MEDIA = /^application\/(?:[\w.+-]+\+)?json(?:\s*;.*)?$/i;

function isJsonMedia(mediaType: string): boolean {
  return JSON_MEDIA.test(mediaType.trim());
}

type Content =
  | { kind: 'json'; value: unknown; text?: string }
  | { kind: 'file'; path: string; bytes?: Buffer };

type ContentLookup = { content: Content } | { unavailable: string } | { unsafe: string };

class ContentSource {
  private readonly folder: ArtifactFolder | undefined;
  private readonly envelope: Record<string, unknown> | undefined;
  private readonly cache = new Map<string, ContentLookup>();

  constructor(envelope: Record<string, unknown> | undefined, artifactsDir: string | undefined) {
    this.envelope = envelope;
    this.folder = artifactsDir === undefined ? undefined : new ArtifactFolder(artifactsDir);
  }

  /** The envelope's result stands for the output artifact labelled role=result. */
  isEnvelopeResult(artifact: Artifact, record: ProvRecord): boolean {
    return (
      this.envelope !== undefined && artifact.labels?.role === 'result' && record.outputs.includes(artifact)
    );
  }

  async lookup(artifact: Artifact, record: ProvRecord): Promise<ContentLookup> {
    const key = `${record.outputs.includes(artifact) ? 'out' : 'in'}:${artifact.artifact_id}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    let found: ContentLookup;
    if (this.isEnvelopeResult(artifact, record)) {
      found = { content: { kind: 'json', value: (this.envelope as Record<string, unknown>).result } };
    } else if (this.folder) {
      const located = await this.folder.locate(artifact);
      found = located.found
        ? { content: { kind: 'file', path: located.path } }
        : 'unsafe' in located
          ? { unsafe: located.reason }
          : { unavailable: located.reason };
    } else {
      found = { unavailable: 'no artifacts folder given' };
    }
    this.cache.set(key, found);
    return found;
  }
}

/** A locator that escapes the folder fails; content that simply cannot be had is skipped. */
function missingContentCheck(
  check: string,
  lookup: Exclude<ContentLookup, { content: Content }>,
  prefix: string,
): VerifyCheck {
  return 'unsafe' in lookup
    ? { check, status: 'fail', code: 'LOCATOR_UNSAFE', message: lookup.unsafe }
    : { check, status: 'skip', message: `${prefix}content not obtainable: ${lookup.unavailable}` };
}

async function fileBytes(content: Extract<Content, { kind: 'file' }>): Promise<Buffer> {
  if (!content.bytes) {
    // Opened as a regular file again: a path swapped for a FIFO since the folder's check is refused, not waited on.
    const { handle } = await openRegularFile(content.path);
    try {
      content.bytes = await handle.readFile();
    } finally {
      await handle.close();
    }
  }
  return content.bytes;
}

/** Parsed JSON of a content (strict parse for files). */
async function jsonOf(content: Content): Promise<unknown> {
  if (content.kind === 'json') return content.value;
  return parseJson(decodeUtf8(await fileBytes(content)));
}

async function textOf(content: Content): Promise<string> {
  if (content.kind === 'json')
    return typeof content.value === 'string' ? content.value : JSON.stringify(content.value);
  return decodeUtf8(await fileBytes(content));
}

async function recomputeDigest(
  content: Content,
  artifact: Artifact,
  alg: DigestAlg,
): Promise<{ canonical?: Digest; raw?: Digest }> {
  if (content.kind === 'json') return { canonical: digestValue(content.value, alg) };
  if (isJsonMedia(artifact.media_type)) {
    const raw = digestBytes(await fileBytes(content), alg);
    try {
      return { canonical: digestValue(await jsonOf(content), alg), raw };
    } catch {
      return { raw };
    }
  }
  const raw = await digestFile(content.path, alg);
  return { raw: { alg: raw.alg, value: raw.value } };
}

async function artifactChecks(record: ProvRecord, source: ContentSource): Promise<VerifyCheck[]> {
  const checks: VerifyCheck[] = [];
  for (const [where, list] of [
    ['inputs', record.inputs ?? []],
    ['outputs', record.outputs ?? []],
  ] as const) {
    for (const [index, artifact] of list.entries()) {
      const name = `artifact:${where}[${index}]:${artifact.artifact_id}`;
      if (!artifact.digest) continue;
      const { alg, value } = artifact.digest;
      const problem = digestFormatProblem(alg, value);
      if (problem) {
        checks.push({
          check: name,
          status: 'fail',
          code: 'DIGEST_MISMATCH',
          message: `digest is malformed: ${problem}`,
        });
        continue;
      }
      const lookup = await source.lookup(artifact, record);
      if (!('content' in lookup)) {
        checks.push(missingContentCheck(name, lookup, ''));
        continue;
      }
      let recomputed: { canonical?: Digest; raw?: Digest };
      try {
        recomputed = await recomputeDigest(lookup.content, artifact, alg as DigestAlg);
      } catch (error) {
        const code = error instanceof EnvelopeError ? error.code : 'INPUT_UNREADABLE';
        checks.push({
          check: name,
          status: 'fail',
          code,
          message: `content could not be digested: ${(error as Error).message}`,
        });
        continue;
      }
      const expected = recomputed.canonical ?? recomputed.raw;
      if (expected?.value === value) {
        const over = recomputed.canonical ? 'canonical JSON' : 'bytes';
        const from = source.isEnvelopeResult(artifact, record) ? 'envelope.result' : 'the artifacts folder';
        checks.push({ check: name, status: 'pass', message: `${alg} over ${over} from ${from} matches` });
      } else if (recomputed.canonical && recomputed.raw?.value === value) {
        checks.push({
          check: name,
          status: 'fail',
          code: 'DIGEST_MISMATCH',
          message: `${alg} matches the raw file bytes, not the RFC 8785 canonical JSON the spec requires for ${artifact.media_type}`,
        });
      } else {
        checks.push({
          check: name,
          status: 'fail',
          code: 'DIGEST_MISMATCH',
          message: `${alg} does not match the content: recomputed ${expected?.value}`,
        });
      }
    }
  }
  return checks;
}

async function evidenceChecks(record: ProvRecord, source: ContentSource): Promise<VerifyCheck[]> {
  const checks: VerifyCheck[] = [];
  const artifacts = new Map<string, Artifact>();
  for (const artifact of [...(record.inputs ?? []), ...(record.outputs ?? [])]) {
    if (!artifacts.has(artifact.artifact_id)) artifacts.set(artifact.artifact_id, artifact);
  }
  for (const [index, entry] of (record.evidence ?? []).entries()) {
    const name = `evidence[${index}]:${entry.field}`;
    let anchor: ReturnType<typeof parseAnchor>;
    try {
      anchor = parseAnchor(entry.source);
    } catch (error) {
      checks.push({ check: name, status: 'fail', code: 'ANCHOR_INVALID', message: (error as Error).message });
      continue;
    }
    const artifact = artifacts.get(anchor.artifactId);
    if (!artifact) {
      checks.push({
        check: name,
        status: 'fail',
        code: 'ANCHOR_UNRESOLVED',
        message: `${entry.source} names artifact "${anchor.artifactId}", which is not among the record's inputs or outputs`,
      });
      continue;
    }
    const lookup = await source.lookup(artifact, record);
    if (!('content' in lookup)) {
      checks.push(missingContentCheck(name, lookup, `${entry.source}: `));
      continue;
    }
    try {
      const content = anchor.kind === 'text' ? await textOf(lookup.content) : await jsonOf(lookup.content);
      const resolution = resolveAnchor(anchor, content);
      checks.push(
        resolution.resolved
          ? { check: name, status: 'pass', message: `${entry.source} resolves` }
          : {
              check: name,
              status: 'fail',
              code: 'ANCHOR_UNRESOLVED',
              message: `${entry.source}: ${resolution.reason}`,
            },
      );
    } catch (error) {
      const code = error instanceof EnvelopeError ? error.code : 'INPUT_UNREADABLE';
      checks.push({
        check: name,
        status: 'fail',
        code,
        message: `${entry.source}: ${(error as Error).message}`,
      });
    }
  }
  return checks;
}

interface LineageOutcome {
  check: VerifyCheck;
  tally: CoverageTally;
}

/** Parents found among the other records given, and no cycle back to this record. */
function lineageCheck(record: ProvRecord, lineage: LineageGraph | undefined): LineageOutcome | undefined {
  const parents = [...new Set(record.parents ?? [])];
  if (parents.length === 0) return undefined;
  const outcome = (
    status: CheckStatus,
    message: string,
    counts: Pick<CoverageTally, 'verified' | 'failed' | 'not_checked'>,
    reason?: string,
  ): LineageOutcome => ({
    check: {
      check: 'lineage',
      status,
      message,
      ...(status === 'fail' ? { code: 'LINEAGE_CYCLE' } : {}),
    },
    tally: { present: parents.length, ...counts, reasons: reason ? [reason] : [] },
  });
  const plural = parents.length === 1 ? 'parent' : 'parents';
  if (!lineage) {
    return outcome(
      'skip',
      `${parents.length} ${plural}, not checked: no other records given`,
      { verified: 0, failed: 0, not_checked: parents.length },
      'no other records given',
    );
  }
  const everyFailed = { verified: 0, failed: parents.length, not_checked: 0 };
  if (parents.includes(record.run_id)) {
    return outcome('fail', `the record names itself (${record.run_id}) as a parent`, everyFailed);
  }
  const backLink = lineage
    .ancestors(record.run_id)
    .find((id) => lineage.get(id)?.parents.includes(record.run_id));
  if (backLink !== undefined) {
    return outcome(
      'fail',
      `ancestor ${backLink} names ${record.run_id} as its parent: the lineage has a cycle`,
      everyFailed,
    );
  }
  const missing = parents.filter((parent) => !lineage.get(parent));
  const found = parents.length - missing.length;
  if (missing.length === 0) {
    return outcome(
      'pass',
      `${found} of ${parents.length} ${plural} found among the records given, no cycle`,
      {
        verified: found,
        failed: 0,
        not_checked: 0,
      },
    );
  }
  return outcome(
    'skip',
    `${found} of ${parents.length} ${plural} found; not among the records given: ${missing.join(', ')}`,
    { verified: found, failed: 0, not_checked: missing.length },
    `not among the records given: ${missing.join(', ')}`,
  );
}

function tally(checks: readonly VerifyCheck[], present: number): CoverageTally {
  const result: CoverageTally = { present, verified: 0, failed: 0, not_checked: 0, reasons: [] };
  for (const check of checks) {
    if (check.status === 'pass') result.verified++;
    else if (check.status === 'fail') result.failed++;
    else {
      result.not_checked++;
      const reason = check.message.replace(/^.*content not obtainable: /, 'content not obtainable: ');
      if (!result.reasons.includes(reason)) result.reasons.push(reason);
    }
  }
  return result;
}

function coverageItem(
  check: VerifyCheck | undefined,
  present: boolean,
  absentDetail: string,
  unchecked: string | undefined,
): CoverageItem {
  if (!check) {
    return present
      ? { present, status: 'not_checked', detail: unchecked ?? 'not checked' }
      : { present, status: 'absent', detail: absentDetail };
  }
  const status: CoverageStatus =
    check.status === 'pass' ? 'verified' : check.status === 'fail' ? 'failed' : 'not_checked';
  return { present, status, detail: check.message };
}

/**
 * What the record carries and what became of it. `unchecked` (when the record
 * could not be read as one) marks everything not checked, for that reason.
 */
function coverageOf(
  record: ProvRecord | undefined,
  checks: readonly VerifyCheck[],
  unchecked?: string,
  lineageTally?: CoverageTally,
): VerifyCoverage {
  const named = (prefix: string) => checks.filter((check) => check.check.startsWith(prefix));
  const counted = (prefix: string, present: number): CoverageTally =>
    unchecked === undefined
      ? tally(named(prefix), present)
      : { present, verified: 0, failed: 0, not_checked: present, reasons: present > 0 ? [unchecked] : [] };
  const artifacts = record ? [...(record.inputs ?? []), ...(record.outputs ?? [])] : [];
  const withDigest = artifacts.filter((artifact) => artifact.digest !== undefined).length;
  const parents = record ? new Set(record.parents ?? []).size : 0;
  const integrity = record?.integrity;
  const lineage: CoverageTally = lineageTally ?? {
    present: parents,
    verified: 0,
    failed: 0,
    not_checked: parents,
    reasons: parents > 0 ? [unchecked ?? 'not checked'] : [],
  };
  const coverage: Omit<VerifyCoverage, 'verdict'> = {
    record_digest: coverageItem(
      checks.find((check) => check.check === 'record_digest'),
      integrity?.record_digest !== undefined,
      'the record has no integrity.record_digest',
      unchecked,
    ),
    signature: coverageItem(
      checks.find((check) => check.check === 'signature'),
      integrity?.signature !== undefined,
      'the record is not signed (no integrity.signature)',
      unchecked,
    ),
    artifact_digests: { artifacts: artifacts.length, ...counted('artifact:', withDigest) },
    evidence_anchors: counted('evidence[', record ? (record.evidence ?? []).length : 0),
    lineage,
  };
  const integrityItems = [coverage.record_digest, coverage.signature];
  const present = integrityItems.some((item) => item.present) || coverage.artifact_digests.present > 0;
  const verified =
    integrityItems.some((item) => item.status === 'verified') || coverage.artifact_digests.verified > 0;
  const someUnchecked =
    integrityItems.some((item) => item.status === 'not_checked') ||
    [coverage.artifact_digests, coverage.evidence_anchors, coverage.lineage].some(
      (entry) => entry.not_checked > 0,
    );
  const failed = checks.some((check) => check.status === 'fail');
  const verdict: VerifyVerdict = failed
    ? 'failed'
    : !present
      ? 'nothing_to_verify'
      : !verified
        ? 'nothing_verified'
        : someUnchecked
          ? 'partially_verified'
          : 'verified';
  return { verdict, ...coverage };
}

/**
 * The coverage of something that could not be read as a record at all (a
 * ledger row that does not hold one): nothing was checked, and whether it
 * carries a digest or a signature is unknown, so nothing is reported present.
 */
export function unreadableCoverage(reason: string): VerifyCoverage {
  const item: CoverageItem = { present: false, status: 'not_checked', detail: reason };
  const none: CoverageTally = { present: 0, verified: 0, failed: 0, not_checked: 0, reasons: [] };
  return {
    verdict: 'failed',
    record_digest: item,
    signature: { ...item },
    artifact_digests: { artifacts: 0, ...none, reasons: [] },
    evidence_anchors: { ...none, reasons: [] },
    lineage: { ...none, reasons: [] },
  };
}

function count(checks: readonly VerifyCheck[]): Record<CheckStatus, number> {
  const counts: Record<CheckStatus, number> = { pass: 0, fail: 0, skip: 0, warn: 0 };
  for (const check of checks) counts[check.status]++;
  return counts;
}

/**
 * Verifies an mcp.envelope.v0.1 (with its provenance record) or a bare
 * prov.record.v0.1. The report is ok only when no check failed.
 */
export async function verify(subject: unknown, options: VerifyOptions = {}): Promise<VerifyReport> {
  const checks: VerifyCheck[] = [];
  let envelope: Record<string, unknown> | undefined;
  let recordValue: unknown = subject;
  const kind: VerifyReport['subject'] = claimsEnvelopeV01(subject) ? 'envelope' : 'record';
  if (kind === 'envelope') {
    envelope = subject as Record<string, unknown>;
    const issues = envelopeV01Issues(envelope);
    checks.push(
      issues.length === 0
        ? { check: 'schema:envelope', status: 'pass', message: 'valid mcp.envelope.v0.1' }
        : {
            check: 'schema:envelope',
            status: 'fail',
            code: 'ENVELOPE_INVALID',
            message: issues.map((issue) => `${issue.pointer || '/'} ${issue.message}`).join('; '),
          },
    );
    recordValue = envelope.provenance;
    if (recordValue === undefined || recordValue === null) {
      checks.push({
        check: 'provenance',
        status: 'fail',
        code: 'PROVENANCE_VERIFICATION_FAILED',
        message: 'envelope carries no provenance record: nothing to verify',
      });
      return {
        subject: kind,
        ok: false,
        counts: count(checks),
        coverage: coverageOf(undefined, checks),
        checks,
      };
    }
  }
  if (!isJsonObject(recordValue)) {
    throw new EnvelopeError(
      'SCHEMA_INVALID',
      'Input is neither an mcp.envelope.v0.1 nor a prov.record.v0.1 object',
    );
  }
  const schema = defaultRegistry().validate(SCHEMA_IDS.record, recordValue);
  checks.push(
    schema.valid
      ? { check: 'schema:record', status: 'pass', message: 'valid prov.record.v0.1' }
      : {
          check: 'schema:record',
          status: 'fail',
          code: 'SCHEMA_INVALID',
          message: schema.issues.map((issue) => `${issue.pointer || '/'} ${issue.message}`).join('; '),
        },
  );
  if (!schema.valid && !Array.isArray(recordValue.methods)) {
    const partial = recordValue as unknown as ProvRecord;
    const coverage = coverageOf(
      {
        ...partial,
        inputs: Array.isArray(partial.inputs) ? partial.inputs : [],
        outputs: Array.isArray(partial.outputs) ? partial.outputs : [],
        evidence: Array.isArray(partial.evidence) ? partial.evidence : [],
        parents: Array.isArray(partial.parents) ? partial.parents : [],
        integrity: isJsonObject(partial.integrity) ? partial.integrity : undefined,
      } as ProvRecord,
      checks,
      'the record is not a valid prov.record.v0.1',
    );
    return { subject: kind, ok: false, counts: count(checks), coverage, checks };
  }
  const record = recordValue as unknown as ProvRecord;

  for (const finding of checkMethodIds(record.methods ?? [], { strict: options.strictMethods === true })) {
    checks.push({
      check: `method:${finding.method}`,
      status: finding.level === 'error' ? 'fail' : finding.level === 'warning' ? 'warn' : 'pass',
      code: finding.code,
      message: finding.message,
    });
  }
  const contractContext = {
    record,
    ...(envelope ? { envelope } : {}),
    ...(options.lineage ? { lineage: options.lineage } : {}),
    ...(options.publicKey ? { publicKey: options.publicKey } : {}),
  };
  for (const finding of checkContracts(contractContext)) {
    checks.push({
      check: `contract:${finding.method}`,
      status: finding.status,
      message: finding.message,
      ...(finding.status === 'fail' ? { code: 'METHOD_CONTRACT_VIOLATED' } : {}),
    });
  }

  const source = new ContentSource(envelope, options.artifactsDir);
  checks.push(...(await artifactChecks(record, source)));
  checks.push(...(await evidenceChecks(record, source)));

  const digest = checkRecordDigest(record);
  if (digest.status !== 'absent') {
    checks.push({
      check: 'record_digest',
      status: digest.status,
      message: digest.message,
      ...(digest.status === 'fail' ? { code: 'DIGEST_MISMATCH' } : {}),
    });
  }
  const signature = checkSignature(record, options.publicKey);
  if (signature.status !== 'absent') {
    checks.push({
      check: 'signature',
      status: signature.status === 'unverifiable' ? 'skip' : signature.status,
      message: signature.message,
      ...(signature.status === 'fail' ? { code: 'SIGNATURE_INVALID' } : {}),
    });
  } else if (options.publicKey) {
    // The auditor asked for a signature by giving a key: an unsigned record must not pass.
    checks.push({
      check: 'signature',
      status: 'fail',
      code: 'SIGNATURE_INVALID',
      message: 'a public key was given, but the record is not signed (no integrity.signature)',
    });
  }
  const lineage = lineageCheck(record, options.lineage);
  if (lineage) checks.push(lineage.check);
  const counts = count(checks);
  return {
    subject: kind,
    run_id: record.run_id,
    ok: counts.fail === 0,
    counts,
    coverage: coverageOf(record, checks, undefined, lineage?.tally),
    checks,
  };
}

const ITEM_WORD: Record<CoverageStatus, string> = {
  verified: 'verified',
  failed: 'FAILED',
  absent: 'absent',
  not_checked: 'not checked',
};

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

function describeItem(item: CoverageItem): string {
  return `${ITEM_WORD[item.status]}: ${item.detail}`;
}

function describeTally(entry: CoverageTally, done: string, absent: string): string {
  if (entry.present === 0 && entry.failed === 0) return `absent: ${absent}`;
  const parts = [`${entry.verified} of ${entry.present} ${done}`];
  if (entry.failed > 0) parts.push(`${entry.failed} FAILED`);
  if (entry.not_checked > 0) parts.push(`${entry.not_checked} not checked (${entry.reasons.join('; ')})`);
  return parts.join(', ');
}

/** The coverage for people: one line per item, what the record carries and what was checked. */
export function describeCoverage(coverage: VerifyCoverage): string[] {
  const artifacts = coverage.artifact_digests;
  const undigested = artifacts.artifacts - artifacts.present;
  let artifactLine = describeTally(
    artifacts,
    'verified',
    artifacts.artifacts === 0
      ? 'the record lists no artifacts'
      : `no artifact carries a digest (${plural(artifacts.artifacts, 'artifact')} without)`,
  );
  if (artifacts.present > 0 && undigested > 0)
    artifactLine += `; ${plural(undigested, 'artifact')} without a digest`;
  return [
    'coverage:',
    `  record digest     ${describeItem(coverage.record_digest)}`,
    `  signature         ${describeItem(coverage.signature)}`,
    `  artifact digests  ${artifactLine}`,
    `  evidence anchors  ${describeTally(coverage.evidence_anchors, 'resolved', 'the record has no evidence')}`,
    `  lineage           ${describeTally(coverage.lineage, 'parents found', 'the record has no parents')}`,
  ];
}

/** Items verified, as `record digest, signature, 2/2 artifact digests`. */
function verifiedItems(coverage: VerifyCoverage, withIntegrity: boolean): string[] {
  const items: string[] = [];
  if (withIntegrity) {
    if (coverage.record_digest.status === 'verified') items.push('record digest');
    if (coverage.signature.status === 'verified') items.push('signature');
    const artifacts = coverage.artifact_digests;
    if (artifacts.verified > 0) items.push(`${artifacts.verified}/${artifacts.present} artifact digests`);
  }
  const evidence = coverage.evidence_anchors;
  if (evidence.verified > 0) items.push(`${evidence.verified}/${evidence.present} evidence anchors`);
  const lineage = coverage.lineage;
  if (lineage.verified > 0) items.push(`${lineage.verified}/${lineage.present} parent links`);
  return items;
}

function uncheckedItems(coverage: VerifyCoverage): string[] {
  const items: string[] = [];
  if (coverage.record_digest.status === 'not_checked') items.push('record digest');
  if (coverage.signature.status === 'not_checked') items.push('signature');
  for (const [entry, name] of [
    [coverage.artifact_digests, 'artifact digests'],
    [coverage.evidence_anchors, 'evidence anchors'],
    [coverage.lineage, 'parent links'],
  ] as const) {
    if (entry.not_checked > 0) items.push(`${entry.not_checked}/${entry.present} ${name}`);
  }
  return items;
}

/** Integrity-bearing items the record does not carry. */
function absentItems(coverage: VerifyCoverage): string[] {
  const items: string[] = [];
  if (!coverage.record_digest.present) items.push('record digest');
  if (!coverage.signature.present) items.push('signature');
  if (coverage.artifact_digests.present === 0) items.push('artifact digests');
  return items;
}

const COVERAGE_CHECKS = /^(?:record_digest|signature|lineage|artifact:|evidence\[)/;

function failedItems(report: VerifyReport): string[] {
  const { coverage } = report;
  const items: string[] = [];
  if (coverage.record_digest.status === 'failed') items.push('record digest');
  if (coverage.signature.status === 'failed')
    items.push(coverage.signature.present ? 'signature' : 'signature absent though a public key was given');
  for (const [entry, name] of [
    [coverage.artifact_digests, 'artifact digests'],
    [coverage.evidence_anchors, 'evidence anchors'],
    [coverage.lineage, 'parent links'],
  ] as const) {
    if (entry.failed > 0) items.push(`${entry.failed}/${entry.present} ${name}`);
  }
  for (const check of report.checks) {
    if (check.status === 'fail' && !COVERAGE_CHECKS.test(check.check) && !items.includes(check.check))
      items.push(check.check);
  }
  return items;
}

/**
 * The closing line for people. Never a bare VERIFIED: it names what was
 * verified, what could not be checked, or that the record carries nothing to verify.
 */
export function verdictLine(report: VerifyReport): string {
  const { counts, coverage } = report;
  const tail = `(${counts.pass} passed, ${counts.fail} failed, ${counts.skip} skipped, ${counts.warn} warnings)`;
  const others = verifiedItems(coverage, false);
  const structure =
    others.length > 0
      ? `only its structure, claimed methods and ${others.join(', ')} were checked`
      : 'only its structure and claimed methods were checked';
  const absent = absentItems(coverage);
  const absentPart = absent.length > 0 ? `; absent: ${absent.join(', ')}` : '';
  switch (coverage.verdict) {
    case 'failed': {
      // What matched is named too, but digests without a verified signature prove no origin: anyone can recompute them.
      const held = verifiedItems(coverage, true);
      const label =
        coverage.signature.status === 'verified'
          ? 'verified'
          : 'matched, but with no valid signature anyone could have recomputed them';
      const heldPart = held.length > 0 ? `; ${label}: ${held.join(', ')}` : '';
      return `NOT VERIFIED: failed: ${failedItems(report).join(', ')}${heldPart} ${tail}`;
    }
    case 'nothing_to_verify':
      return `NOTHING TO VERIFY: the record carries no record digest, signature or artifact digest; ${structure} ${tail}`;
    case 'nothing_verified':
      return `NOTHING VERIFIED: not checked: ${uncheckedItems(coverage).join(', ')}${absentPart}; ${structure} ${tail}`;
    case 'partially_verified':
      return `PARTIALLY VERIFIED: ${verifiedItems(coverage, true).join(', ')}; not checked: ${uncheckedItems(coverage).join(', ')}${absentPart} ${tail}`;
    case 'verified':
      return `VERIFIED: ${verifiedItems(coverage, true).join(', ')}${absentPart} ${tail}`;
  }
}
