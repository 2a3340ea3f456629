/**
 * A log leaf: the exact bytes the transparency log commits to for one ledger
 * entry, RFC 8785 canonical JSON (UTF-8) of one object holding everything an
 * auditor relies on. The side columns of `records` serve queries; verification
 * reads the leaf.
 */
import { canonicalize, digestValue } from '../../canonical/index.ts';
import type { ProvRecord } from '../../provenance/record.ts';

export const LEAF_TYPE = 'mcp-envelope.ledger.leaf.v1';

export interface LeafFields {
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

/** The leaf object: the members the bytes hold, by name, as `leafBytes` canonicalizes them. */
export function leafObject(fields: LeafFields): Record<string, unknown> {
  return {
    type: LEAF_TYPE,
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
    envelope_digest:
      fields.envelope === null ? null : `sha256:${digestValue(fields.envelope, 'sha256').value}`,
    record: fields.record,
  };
}

export function leafText(fields: LeafFields): string {
  return canonicalize(leafObject(fields));
}

export function leafBytes(fields: LeafFields): Buffer {
  return Buffer.from(leafText(fields), 'utf8');
}
