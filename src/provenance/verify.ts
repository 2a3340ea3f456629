import type { KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  type Digest,
  type DigestAlg,
  digestBytes,
  digestFile,
  digestFormatProblem,
  digestValue,
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

export interface VerifyReport {
  subject: 'envelope' | 'record';
  run_id?: string;
  ok: boolean;
  counts: Record<CheckStatus, number>;
  checks: VerifyCheck[];
}

export interface VerifyOptions {
  /** Folder the artifacts' content is read from (and only from). */
  artifactsDir?: string;
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
  content.bytes ??= await readFile(content.path);
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
      return { subject: kind, ok: false, counts: count(checks), checks };
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
    return { subject: kind, ok: false, counts: count(checks), checks };
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
  }
  const counts = count(checks);
  return { subject: kind, run_id: record.run_id, ok: counts.fail === 0, counts, checks };
}
