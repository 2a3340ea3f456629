import { canonicalize } from '../canonical/canonicalize.ts';
import { digestFormatProblem, digestValue, isDigestAlg } from '../canonical/digest.ts';
import { isJsonObject } from '../canonical/json-value.ts';
import { applyCompatibilityPolicy } from '../envelope/compat-policy.ts';
import { envelopeV01Issues } from '../envelope/prov-v01.ts';
import { EnvelopeError } from '../errors/index.ts';
import { parseAnchor, resolveAnchor } from '../pointer/anchor.ts';
import { checkMethodId, checkMethodIds, lookupMethod } from '../provenance/catalog.ts';
import { type ContractContext, checkContracts, checkMethodContract } from '../provenance/contracts.ts';
import { computeRecordDigest, loadPublicKey } from '../provenance/integrity.ts';
import { LineageGraph } from '../provenance/lineage.ts';
import { type ArtifactContent, buildArtifact, type ProvRecord } from '../provenance/record.ts';
import { defaultRegistry, SCHEMA_IDS } from '../schemas/index.ts';
import type { VectorCase } from './vector-layout.ts';

/**
 * Runs vector cases against this engine. A main case (input.json +
 * expected.json) passes when the engine's output equals the expected document
 * (compared in canonical form); a positive case passes when the engine accepts
 * its payload, a negative case when the engine rejects it — so a must-fail
 * vector that the engine accepts is a failure.
 */

export interface CaseResult {
  id: string;
  folder: string;
  kind: VectorCase['kind'];
  expect: 'pass' | 'fail';
  passed: boolean;
  detail: string;
}

interface Verdict {
  ok: boolean;
  detail: string;
}

const same = (a: unknown, b: unknown): boolean => {
  try {
    return canonicalize(a) === canonicalize(b);
  } catch {
    return false;
  }
};

function schemaProblem(id: string, value: unknown): string | undefined {
  const result = defaultRegistry().validate(id, value);
  if (result.valid) return undefined;
  const first = result.issues[0];
  return `${first?.pointer || '/'} ${first?.message}`;
}

// ---- main cases -------------------------------------------------------------

type MainEvaluator = (input: unknown, expected: unknown) => Verdict;

function digestMain(input: unknown, expected: unknown): Verdict {
  if (!isJsonObject(expected) || !isJsonObject(expected.digest)) {
    return { ok: false, detail: 'expected.json must hold a digest {alg, value}' };
  }
  const { alg, value } = expected.digest;
  if (!isDigestAlg(alg))
    return { ok: false, detail: `expected digest algorithm ${String(alg)} is not supported` };
  if (typeof expected.canonical_form === 'string') {
    const canonical = canonicalize(input);
    if (canonical !== expected.canonical_form) {
      return { ok: false, detail: `canonical form differs: got ${canonical}` };
    }
  }
  const digest = digestValue(input, alg);
  return digest.value === value
    ? { ok: true, detail: `${alg} ${digest.value}` }
    : { ok: false, detail: `digest differs: got ${alg} ${digest.value}` };
}

function wrapMain(input: unknown, expected: unknown): Verdict {
  const problem = schemaProblem(SCHEMA_IDS.envelope, expected);
  if (problem) return { ok: false, detail: `expected.json is not a valid envelope: ${problem}` };
  const outcome = applyCompatibilityPolicy(input);
  if (outcome.action !== 'wrapped')
    return { ok: false, detail: 'input was passed through instead of wrapped' };
  return same(outcome.envelope, expected)
    ? { ok: true, detail: 'wrapped envelope equals expected' }
    : { ok: false, detail: `wrapped envelope differs: got ${canonicalize(outcome.envelope)}` };
}

function passThroughMain(input: unknown, expected: unknown): Verdict {
  const outcome = applyCompatibilityPolicy(input);
  if (outcome.action !== 'passed-through')
    return { ok: false, detail: 'input was wrapped instead of passed through' };
  if (!same(outcome.envelope, input)) return { ok: false, detail: 'pass-through changed the envelope' };
  return same(outcome.envelope, expected)
    ? { ok: true, detail: 'envelope returned unchanged' }
    : { ok: false, detail: 'expected.json differs from the envelope returned' };
}

function evidenceVerdict(
  entries: unknown,
  artifactId: unknown,
  content: unknown,
  kind: 'json' | 'text' | undefined,
): Verdict {
  if (!Array.isArray(entries) || entries.length === 0) return { ok: false, detail: 'no evidence entries' };
  if (typeof artifactId !== 'string') return { ok: false, detail: 'artifact_id is missing' };
  for (const [index, entry] of entries.entries()) {
    const problem = schemaProblem(SCHEMA_IDS.evidence, entry);
    if (problem) return { ok: false, detail: `evidence[${index}] is not evidence.v0.1: ${problem}` };
    const source = (entry as { source: string }).source;
    let anchor: ReturnType<typeof parseAnchor>;
    try {
      anchor = parseAnchor(source);
    } catch (error) {
      return { ok: false, detail: `evidence[${index}]: ${(error as Error).message}` };
    }
    if (anchor.artifactId !== artifactId) {
      return {
        ok: false,
        detail: `evidence[${index}] names artifact ${anchor.artifactId}, not ${artifactId}`,
      };
    }
    if (kind === 'json' && !(anchor.kind === 'json' && anchor.pointer.startsWith('/'))) {
      return { ok: false, detail: `evidence[${index}] is not a #json:/ anchor` };
    }
    if (kind === 'text' && anchor.kind !== 'text') {
      return { ok: false, detail: `evidence[${index}] is not a #text:line: anchor` };
    }
    const resolution = resolveAnchor(anchor, content);
    if (!resolution.resolved)
      return { ok: false, detail: `evidence[${index}] ${source}: ${resolution.reason}` };
  }
  return { ok: true, detail: `${entries.length} evidence anchors resolve against the artifact` };
}

function evidenceMain(kind: 'json' | 'text'): MainEvaluator {
  return (input, expected) => {
    if (!isJsonObject(input) || !isJsonObject(expected))
      return { ok: false, detail: 'input and expected must be objects' };
    return evidenceVerdict(expected.evidence, input.artifact_id, input.content, kind);
  };
}

function artifactContent(input: Record<string, unknown>): ArtifactContent | undefined {
  if ('content' in input) return { json: input.content };
  if (typeof input.text === 'string') return { text: input.text };
  if (typeof input.base64 === 'string') return { bytes: Buffer.from(input.base64, 'base64') };
  return undefined;
}

/**
 * Registering an artifact: input {artifact_id, media_type, content | text | base64,
 * digest_alg?, size?, locator?, labels?}; expected the artifact.v0.1 entry.
 */
function registerMain(input: unknown, expected: unknown): Verdict {
  if (!isJsonObject(input)) return { ok: false, detail: 'input must be an object' };
  const artifactExpected = isJsonObject(expected) && 'artifact' in expected ? expected.artifact : expected;
  const problem = schemaProblem(SCHEMA_IDS.artifact, artifactExpected);
  if (problem) return { ok: false, detail: `expected artifact is not artifact.v0.1: ${problem}` };
  const content = artifactContent(input);
  const alg = input.digest_alg;
  if (alg !== undefined && !isDigestAlg(alg))
    return { ok: false, detail: `unsupported digest_alg ${String(alg)}` };
  const artifact = buildArtifact({
    id: String(input.artifact_id),
    mediaType: String(input.media_type),
    ...(content ? { content } : {}),
    ...(alg ? { digest: alg } : {}),
    size: input.size === true,
    ...(typeof input.locator === 'string' ? { locator: input.locator } : {}),
    ...(isJsonObject(input.labels) ? { labels: input.labels as Record<string, string> } : {}),
  });
  return same(artifact, artifactExpected)
    ? { ok: true, detail: 'registered artifact equals expected' }
    : { ok: false, detail: `registered artifact differs: got ${canonicalize(artifact)}` };
}

/** Lineage: input {records}; expected any of {nodes, edges, roots, order, missing_parents, acyclic}. */
function lineageMain(input: unknown, expected: unknown): Verdict {
  if (!isJsonObject(input) || !Array.isArray(input.records))
    return { ok: false, detail: 'input.records is missing' };
  if (!isJsonObject(expected)) return { ok: false, detail: 'expected must be an object' };
  for (const [index, record] of input.records.entries()) {
    const verdict = recordVerdict(record, 'lineage.parent.link', undefined, false);
    if (!verdict.ok) return { ok: false, detail: `records[${index}]: ${verdict.detail}` };
  }
  const report = new LineageGraph(input.records as unknown as ProvRecord[]).report();
  const actual: Record<string, unknown> = {
    nodes: report.nodes,
    edges: report.edges,
    roots: report.roots,
    order: report.order ?? null,
    missing_parents: report.missingParents,
    acyclic: report.acyclic,
  };
  for (const key of Object.keys(expected)) {
    if (!(key in actual)) return { ok: false, detail: `expected.${key} is not a lineage property` };
    if (!same(actual[key], expected[key])) {
      return { ok: false, detail: `${key} differs: got ${canonicalize(actual[key])}` };
    }
  }
  return { ok: true, detail: `lineage of ${report.nodes.length} records matches` };
}

function recordDigestMain(input: unknown, expected: unknown): Verdict {
  const record = isJsonObject(input) && 'record' in input ? input.record : input;
  const wanted = isJsonObject(expected) && 'record_digest' in expected ? expected.record_digest : expected;
  if (!isJsonObject(wanted) || !isDigestAlg(wanted.alg))
    return { ok: false, detail: 'expected record_digest is malformed' };
  const digest = computeRecordDigest(record as ProvRecord, wanted.alg);
  return digest.value === wanted.value
    ? { ok: true, detail: `record digest ${digest.value}` }
    : { ok: false, detail: `record digest differs: got ${digest.value}` };
}

const MAIN_EVALUATORS: Readonly<Record<string, MainEvaluator>> = {
  'integrity.digest.sha256': digestMain,
  'integrity.digest.sha512': digestMain,
  'integrity.digest.blake3': digestMain,
  'adapter.wrap.envelope_v0_1': wrapMain,
  'adapter.pass_through.envelope_v0_1': passThroughMain,
  'engine.extract.evidence.json_pointer': evidenceMain('json'),
  'engine.extract.evidence.text_lines': evidenceMain('text'),
  'engine.prov.artifact.register_output': registerMain,
  'engine.prov.artifact.register_input': registerMain,
  'lineage.parent.link': lineageMain,
  'integrity.record_digest.compute': recordDigestMain,
};

// ---- positive and negative cases -----------------------------------------------

/** The method a vector folder is about, when it names a catalog method. */
function folderMethod(folder: string): string | undefined {
  return lookupMethod(folder) ? folder : undefined;
}

/**
 * A record is accepted when it is schema-valid, its method ids are well-formed
 * and not reserved, every claimed contract holds, and — when the vector folder
 * names a method — that method's contract holds too, claimed or not.
 */
function recordVerdict(
  value: unknown,
  method: string | undefined,
  context: Omit<ContractContext, 'record'> | undefined,
  requireFolderMethod = true,
): Verdict {
  const problem = schemaProblem(SCHEMA_IDS.record, value);
  if (problem) return { ok: false, detail: `not a valid prov.record.v0.1: ${problem}` };
  const record = value as ProvRecord;
  const idErrors = checkMethodIds(record.methods).filter((finding) => finding.level === 'error');
  if (idErrors.length > 0) return { ok: false, detail: (idErrors[0] as { message: string }).message };
  const claimed = new Set(record.methods);
  if (method && requireFolderMethod) claimed.add(method);
  const findings = checkContracts({ ...context, record: { ...record, methods: [...claimed] } });
  const failed = findings.find((finding) => finding.status === 'fail');
  if (failed) return { ok: false, detail: `${failed.method}: ${failed.message}` };
  return { ok: true, detail: 'record is valid and its contracts hold' };
}

function artifactVerdict(
  value: unknown,
  payload: Record<string, unknown>,
  method: string | undefined,
): Verdict {
  const problem = schemaProblem(SCHEMA_IDS.artifact, value);
  if (problem) return { ok: false, detail: `not a valid artifact.v0.1: ${problem}` };
  const artifact = value as { digest?: { alg: string; value: string } };
  const wantedAlg = method?.startsWith('integrity.digest.')
    ? method.slice('integrity.digest.'.length)
    : undefined;
  if (wantedAlg && artifact.digest?.alg !== wantedAlg)
    return { ok: false, detail: `artifact has no ${wantedAlg} digest` };
  if (artifact.digest) {
    const formatProblem = digestFormatProblem(artifact.digest.alg, artifact.digest.value);
    if (formatProblem) return { ok: false, detail: `digest: ${formatProblem}` };
    if ('content' in payload && isDigestAlg(artifact.digest.alg)) {
      const recomputed = digestValue(payload.content, artifact.digest.alg);
      if (recomputed.value !== artifact.digest.value) {
        return { ok: false, detail: `digest does not match the content: recomputed ${recomputed.value}` };
      }
    }
  }
  return { ok: true, detail: 'artifact is valid' };
}

function envelopeVerdict(
  value: unknown,
  payload: Record<string, unknown>,
  method: string | undefined,
): Verdict {
  const issues = envelopeV01Issues(value);
  if (issues.length > 0) {
    const first = issues[0] as { pointer: string; message: string };
    return { ok: false, detail: `not a valid mcp.envelope.v0.1: ${first.pointer || '/'} ${first.message}` };
  }
  const envelope = value as Record<string, unknown>;
  if (
    'input' in payload &&
    method === 'adapter.wrap.envelope_v0_1' &&
    !same(envelope.result, payload.input)
  ) {
    return { ok: false, detail: 'envelope.result is not the original payload' };
  }
  const keys = keyContext(payload);
  if (isJsonObject(envelope.provenance)) {
    return recordVerdict(envelope.provenance, method, { envelope, ...keys }, true);
  }
  if (method) {
    const failed = checkMethodContract(method, { envelope, ...keys }).find(
      (finding) => finding.status === 'fail',
    );
    if (failed) return { ok: false, detail: `${failed.method}: ${failed.message}` };
  }
  return { ok: true, detail: 'envelope is valid' };
}

/** A case may carry the Ed25519 public key (SPKI PEM) its signature contracts need. */
function keyContext(payload: Record<string, unknown>): Pick<ContractContext, 'publicKey'> {
  return typeof payload.public_key === 'string' ? { publicKey: loadPublicKey(payload.public_key) } : {};
}

function payloadVerdict(folder: string, payload: Record<string, unknown>): Verdict {
  const method = folderMethod(folder);
  if (typeof payload.method_id === 'string') {
    const errors = checkMethodId(payload.method_id).filter((finding) => finding.level === 'error');
    return errors.length > 0
      ? { ok: false, detail: (errors[0] as { message: string }).message }
      : { ok: true, detail: `${payload.method_id} is a valid method id` };
  }
  if (Array.isArray(payload.method_ids)) {
    for (const id of payload.method_ids) {
      const errors =
        typeof id === 'string' ? checkMethodId(id).filter((finding) => finding.level === 'error') : [];
      if (typeof id !== 'string') return { ok: false, detail: 'method_ids holds a non-string' };
      if (errors.length > 0) return { ok: false, detail: (errors[0] as { message: string }).message };
    }
    return { ok: true, detail: `${payload.method_ids.length} method ids are valid` };
  }
  if ('records' in payload) {
    if (!Array.isArray(payload.records)) return { ok: false, detail: 'records must be an array' };
    const graph = new LineageGraph();
    for (const [index, record] of payload.records.entries()) {
      const problem = schemaProblem(SCHEMA_IDS.record, record);
      if (problem)
        return { ok: false, detail: `records[${index}] is not a valid prov.record.v0.1: ${problem}` };
      graph.add(record as ProvRecord);
    }
    const report = graph.report();
    if (!report.acyclic)
      return { ok: false, detail: `lineage has a cycle: ${report.cycles[0]?.join(' -> ')}` };
    if (report.duplicateRunIds.length > 0)
      return { ok: false, detail: `duplicate run ids: ${report.duplicateRunIds.join(', ')}` };
    for (const [index, record] of payload.records.entries()) {
      const claims = (record as ProvRecord).methods.includes(method ?? '');
      const verdict = recordVerdict(record, method, { lineage: graph }, claims);
      if (!verdict.ok) return { ok: false, detail: `records[${index}]: ${verdict.detail}` };
    }
    return { ok: true, detail: `${report.nodes.length} records form a DAG` };
  }
  if ('record' in payload) return recordVerdict(payload.record, method, keyContext(payload));
  if ('envelope' in payload) return envelopeVerdict(payload.envelope, payload, method);
  // A case shaped like a main case: the folder's own evaluator decides.
  const expected = 'expected' in payload ? payload.expected : payload.output;
  if ('input' in payload && expected !== undefined) {
    const evaluator = MAIN_EVALUATORS[folder];
    if (evaluator) return evaluator(payload.input, expected);
  }
  if ('artifact' in payload) return artifactVerdict(payload.artifact, payload, method);
  if ('evidence' in payload) {
    const kind =
      method === 'engine.extract.evidence.text_lines'
        ? 'text'
        : method === 'engine.extract.evidence.json_pointer'
          ? 'json'
          : undefined;
    return evidenceVerdict(payload.evidence, payload.artifact_id, payload.content, kind);
  }
  return {
    ok: false,
    detail: `no evaluator for a case with members ${Object.keys(payload).join(', ') || '(none)'}`,
  };
}

function guarded(run: () => Verdict): Verdict {
  try {
    return run();
  } catch (error) {
    if (error instanceof EnvelopeError) return { ok: false, detail: `${error.code}: ${error.message}` };
    return { ok: false, detail: `engine error: ${(error as Error).message}` };
  }
}

export function evaluateCase(vectorCase: VectorCase): CaseResult {
  const base = {
    id: vectorCase.id,
    folder: vectorCase.folder,
    kind: vectorCase.kind,
    expect: vectorCase.expect,
  };
  if (vectorCase.loadError)
    return { ...base, passed: false, detail: `unusable vector: ${vectorCase.loadError}` };
  if (vectorCase.kind === 'main') {
    const evaluator = MAIN_EVALUATORS[vectorCase.folder];
    if (!evaluator)
      return { ...base, passed: false, detail: `no evaluator for main case of ${vectorCase.folder}` };
    const verdict = guarded(() => evaluator(vectorCase.input, vectorCase.expected));
    return { ...base, passed: verdict.ok, detail: verdict.detail };
  }
  const verdict = guarded(() => payloadVerdict(vectorCase.folder, vectorCase.payload ?? {}));
  const passed = vectorCase.expect === 'pass' ? verdict.ok : !verdict.ok;
  const detail =
    vectorCase.expect === 'fail'
      ? verdict.ok
        ? `must fail, but the engine accepted it (${verdict.detail})`
        : `rejected as required: ${verdict.detail}`
      : verdict.detail;
  return { ...base, passed, detail };
}

/** Folders whose main case this engine knows how to run. */
export const MAIN_CASE_FOLDERS: readonly string[] = Object.keys(MAIN_EVALUATORS);
