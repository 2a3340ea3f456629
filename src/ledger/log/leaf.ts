/**
 * A log leaf: the exact bytes the transparency log commits to for one ledger
 * entry, RFC 8785 canonical JSON (UTF-8) of one object holding everything an
 * auditor relies on. The side columns of `records` serve queries; verification
 * reads the leaf.
 */
import { canonicalize, digestBytes } from '../../canonical/index.ts';
import type { ProvRecord } from '../../provenance/record.ts';

export const LEAF_TYPE = 'mcp-envelope.ledger.leaf.v2';
/** Leaves written before `index` was a member: kept as they were hashed in ledgers from schema version 2. */
export const LEAF_TYPE_V1 = 'mcp-envelope.ledger.leaf.v1';

export interface LeafFields {
  /** The leaf's place in the log (from 0): a row moved to another place no longer matches its leaf. */
  index: number;
  run_id: string;
  tool: string;
  upstream: string | null;
  principal: string | null;
  created_at: string;
  /** SHA-256 hex of the record without its integrity member (the record_digest column). */
  record_digest: string;
  record: ProvRecord;
  envelope: Record<string, unknown> | null;
}

/** The canonical texts of the record and envelope, when the caller already has them (the store does). */
export interface CanonicalTexts {
  record: string;
  envelope: string | null;
}

/** The leaf object: the members the bytes hold, by name, as `leafBytes` canonicalizes them. */
export function leafObject(fields: LeafFields): Record<string, unknown> {
  return {
    ...leafMembers(fields, fields.envelope === null ? null : canonicalize(fields.envelope)),
    record: fields.record,
  };
}

/** Every member but `record`. */
function leafMembers(fields: LeafFields, envelopeText: string | null): Record<string, unknown> {
  return {
    type: LEAF_TYPE,
    index: fields.index,
    run_id: fields.run_id,
    tool: fields.tool,
    upstream: fields.upstream,
    principal: fields.principal,
    created_at: fields.created_at,
    record_digest: `sha256:${fields.record_digest}`,
    // The answer's digests, as the record names them (artifact id and digest; null when it has none).
    output_digests: (fields.record.outputs ?? []).map((output) => ({
      artifact_id: output.artifact_id,
      digest: output.digest ? `${output.digest.alg}:${output.digest.value}` : null,
    })),
    envelope_digest: envelopeText === null ? null : `sha256:${digestBytes(envelopeText, 'sha256').value}`,
  };
}

/**
 * The leaf's canonical text. With `texts`, the record's and envelope's
 * canonical texts are spliced in rather than canonicalized again: RFC 8785
 * orders `record` just before `record_digest`, and `,"record_digest":` with
 * bare quotes cannot occur inside an earlier member's string (its quotes would
 * be escaped), so its first occurrence is the member.
 */
export function leafText(fields: LeafFields, texts?: CanonicalTexts): string {
  if (texts === undefined) return canonicalize(leafObject(fields));
  const rest = canonicalize(leafMembers(fields, texts.envelope));
  const at = rest.indexOf(',"record_digest":');
  return `${rest.slice(0, at)},"record":${texts.record}${rest.slice(at)}`;
}

export function leafBytes(fields: LeafFields, texts?: CanonicalTexts): Buffer {
  return Buffer.from(leafText(fields, texts), 'utf8');
}
