import { canonicalize } from '../canonical/canonicalize.ts';
import { type Digest, type DigestAlg, digestBytes } from '../canonical/digest.ts';
import { EnvelopeError } from '../errors/index.ts';
import { parseAnchor } from '../pointer/anchor.ts';

/** prov.record.v0.1 and its parts, as the schemas define them. */

export interface Artifact {
  schema_version: 'artifact.v0.1';
  artifact_id: string;
  media_type: string;
  locator?: string;
  size_bytes?: number;
  digest?: Digest;
  labels?: Record<string, string>;
}

export interface Evidence {
  schema_version: 'evidence.v0.1';
  field: string;
  source: string;
  method?: string;
  note?: string;
}

export interface RecordIntegrity {
  record_digest?: Digest;
  signature?: { alg: string; key_id: string; value: string };
}

export interface ProvRecord {
  schema_version: 'prov.record.v0.1';
  run_id: string;
  tool: { name: string; version: string; adapter?: string };
  time?: string;
  inputs: Artifact[];
  outputs: Artifact[];
  methods: string[];
  evidence: Evidence[];
  parents: string[];
  integrity?: RecordIntegrity;
}

export const RECORD_V01 = 'prov.record.v0.1';

/** Method ids the builder claims on its own, as it applies them. */
export const METHODS = {
  wrap: 'adapter.wrap.envelope_v0_1',
  passThrough: 'adapter.pass_through.envelope_v0_1',
  attachRecord: 'adapter.provenance.attach_record_v0_1',
  errorsCapture: 'adapter.errors.capture',
  warningsCapture: 'adapter.warnings.capture',
  build: 'engine.prov.record_v0_1.build',
  registerInput: 'engine.prov.artifact.register_input',
  registerOutput: 'engine.prov.artifact.register_output',
  evidenceJsonPointer: 'engine.extract.evidence.json_pointer',
  evidenceTextLines: 'engine.extract.evidence.text_lines',
  coerceEvidence: 'engine.coerce.evidence.v0_1',
  recordDigest: 'integrity.record_digest.compute',
  signatureCreate: 'integrity.signature.create',
  signatureVerify: 'integrity.signature.verify',
  parentLink: 'lineage.parent.link',
  graphBuild: 'lineage.graph.build',
} as const;

export function digestMethod(alg: DigestAlg): string {
  return `integrity.digest.${alg}`;
}

/**
 * Content of an artifact: a JSON value (digested over its canonical form) or
 * bytes/text (digested as they are).
 */
export type ArtifactContent = { json: unknown } | { bytes: Uint8Array } | { text: string };

export interface ArtifactSpec {
  id: string;
  mediaType: string;
  locator?: string;
  labels?: Record<string, string>;
  /** When given with `digest`, the digest and size are computed from it. */
  content?: ArtifactContent;
  /** Digest algorithm to compute over `content` (omit for no digest). */
  digest?: DigestAlg;
  /** Record the size in bytes of the (canonical) content. */
  size?: boolean;
}

function contentBytes(content: ArtifactContent): Uint8Array | string {
  if ('json' in content) return canonicalize(content.json);
  if ('text' in content) return content.text;
  return content.bytes;
}

export function buildArtifact(spec: ArtifactSpec): Artifact {
  const artifact: Artifact = {
    schema_version: 'artifact.v0.1',
    artifact_id: spec.id,
    media_type: spec.mediaType,
  };
  if (spec.locator !== undefined) artifact.locator = spec.locator;
  if (spec.content !== undefined && (spec.digest !== undefined || spec.size)) {
    const bytes = contentBytes(spec.content);
    if (spec.size)
      artifact.size_bytes = typeof bytes === 'string' ? Buffer.byteLength(bytes, 'utf8') : bytes.length;
    // A JSON value's bytes are already its canonical text: digested as they are, not canonicalized again.
    if (spec.digest !== undefined) artifact.digest = digestBytes(bytes, spec.digest);
  } else if (spec.digest !== undefined) {
    throw new EnvelopeError('INVALID_INPUT', `Artifact ${spec.id}: a digest needs the content`);
  }
  if (spec.labels && Object.keys(spec.labels).length > 0) artifact.labels = { ...spec.labels };
  return artifact;
}

export interface RecordBuilderOptions {
  runId: string;
  tool: { name: string; version: string; adapter?: string };
  /** RFC 3339 time; leave unset for deterministic records. */
  time?: string;
}

/**
 * Builds a prov.record.v0.1 whose `methods[]` are exactly the methods applied
 * while building it: each step that applies a method claims it, in order, once.
 */
export class RecordBuilder {
  private readonly options: RecordBuilderOptions;
  private readonly inputs: Artifact[] = [];
  private readonly outputs: Artifact[] = [];
  private readonly evidenceEntries: Evidence[] = [];
  private readonly parentIds: string[] = [];
  private readonly methods: string[] = [];

  constructor(options: RecordBuilderOptions) {
    this.options = options;
  }

  /** Claims a method this builder did not apply itself (the adapter's wrap, say). */
  claim(method: string): this {
    if (!this.methods.includes(method)) this.methods.push(method);
    return this;
  }

  input(spec: ArtifactSpec): this {
    this.inputs.push(this.artifact(spec));
    return this.claim(METHODS.registerInput);
  }

  output(spec: ArtifactSpec): this {
    this.outputs.push(this.artifact(spec));
    return this.claim(METHODS.registerOutput);
  }

  private artifact(spec: ArtifactSpec): Artifact {
    const artifact = buildArtifact(spec);
    if (artifact.digest) this.claim(digestMethod(artifact.digest.alg));
    return artifact;
  }

  /** Adds an evidence anchor; the anchor kind decides which extraction method is claimed. */
  evidence(field: string, source: string, extra: { method?: string; note?: string } = {}): this {
    const anchor = parseAnchor(source);
    const entry: Evidence = { schema_version: 'evidence.v0.1', field, source };
    if (extra.method !== undefined) entry.method = extra.method;
    if (extra.note !== undefined) entry.note = extra.note;
    this.evidenceEntries.push(entry);
    if (anchor.kind === 'json' && anchor.pointer.startsWith('/')) this.claim(METHODS.evidenceJsonPointer);
    if (anchor.kind === 'text') this.claim(METHODS.evidenceTextLines);
    return this;
  }

  /** Adapts tool-provided evidence ({field, source, note?}) into evidence.v0.1 entries. */
  coerceEvidence(items: readonly { field: string; source: string; note?: string }[]): this {
    for (const item of items) {
      this.evidence(item.field, item.source, item.note === undefined ? {} : { note: item.note });
    }
    if (items.length > 0) this.claim(METHODS.coerceEvidence);
    return this;
  }

  parent(runId: string): this {
    if (!this.parentIds.includes(runId)) this.parentIds.push(runId);
    return this.claim(METHODS.parentLink);
  }

  build(): ProvRecord {
    this.claim(METHODS.build);
    const record: ProvRecord = {
      schema_version: RECORD_V01,
      run_id: this.options.runId,
      tool: { ...this.options.tool },
      inputs: [...this.inputs],
      outputs: [...this.outputs],
      methods: [...this.methods],
      evidence: [...this.evidenceEntries],
      parents: [...this.parentIds],
    };
    if (this.options.time !== undefined) record.time = this.options.time;
    return record;
  }
}
