/**
 * An offline bundle for one result, in the spirit of a Sigstore bundle: what
 * an auditor needs to check the answer with no ledger and no network. It holds
 * the envelope the client got, its record, the record's artifact digests, a
 * DSSE envelope over the record, the log leaf with its inclusion proof and the
 * signed checkpoint it leads to, and consistency proofs from older checkpoints
 * to that one, so that a checkpoint the auditor saw earlier can vouch for it.
 *
 * Everything in a bundle is bound to the leaf: the record must be the leaf's,
 * the envelope must have the leaf's envelope digest, the artifacts must be the
 * leaf's output digests, the DSSE payload must be the record's exact bytes;
 * the leaf is bound to the checkpoint by the proof, and the checkpoint to the
 * log's key by its signature.
 */
import type { KeyObject } from 'node:crypto';
import { canonicalize, digestBytes, parseJsonLossless } from '../canonical/index.ts';
import { isJsonObject } from '../canonical/json-value.ts';
import { EnvelopeError } from '../errors/index.ts';
import {
  DSSE_RECORD_PAYLOAD_TYPE,
  type DsseEnvelope,
  type DsseSigner,
  IN_TOTO_PAYLOAD_TYPE,
  signRecordDsse,
  verifyDsse,
} from '../provenance/dsse.ts';
import { computeRecordDigest } from '../provenance/integrity.ts';
import type { ProvRecord } from '../provenance/record.ts';
import { verify as verifyRecord } from '../provenance/verify.ts';
import { type Checkpoint, checkpointSignedBy, parseCheckpoint, storedCheckpoints } from './log/checkpoint.ts';
import { leafHash } from './log/hashing.ts';
import {
  type ConsistencyProofFile,
  type InclusionProofFile,
  proveConsistency,
  proveInclusion,
} from './log/proof-file.ts';
import { verifyConsistency, verifyInclusion } from './log/proofs.ts';
import type { Ledger, LedgerEntry } from './store.ts';

export const BUNDLE_TYPE = 'mcp-envelope.bundle.v1';

/** Most consistency proofs a bundle carries by default: the newest older checkpoints, one per size. */
export const BUNDLE_CONSISTENCY_PROOFS = 32;

export interface ResultBundle {
  type: typeof BUNDLE_TYPE;
  run_id: string;
  /** The mcp.envelope.v0.1 the record was stored with, or null. */
  envelope: Record<string, unknown> | null;
  record: ProvRecord;
  /** The record's outputs as the leaf names them: artifact id and `<alg>:<hex>` digest (or null). */
  artifacts: Array<{ artifact_id: string; digest: string | null }>;
  /** A DSSE envelope over the record's RFC 8785 bytes, or null when the bundle was made without a key. */
  dsse: DsseEnvelope | null;
  /** The leaf, its index, the audit path and the checkpoint (`ledger prove`'s file). */
  inclusion: InclusionProofFile;
  /** Proofs that older checkpoints' logs are prefixes of the inclusion's checkpoint's. */
  consistency: ConsistencyProofFile[];
}

export interface BundleOptions {
  /** Prove inclusion in this checkpoint (default: the newest the ledger kept). */
  checkpoint?: Checkpoint;
  /** Keys that sign the DSSE envelope (none: `dsse` is null). */
  signers?: readonly DsseSigner[];
  /** Older checkpoints to prove consistency from, besides the newest stored ones. */
  since?: readonly Checkpoint[];
}

/** Builds the bundle of one entry, from the ledger's log. */
export function buildBundle(ledger: Ledger, entry: LedgerEntry, options: BundleOptions = {}): ResultBundle {
  const stored = storedCheckpoints(ledger).map((kept) => kept.checkpoint);
  const checkpoint = options.checkpoint ?? stored.at(-1);
  if (checkpoint === undefined) {
    throw new EnvelopeError(
      'LEDGER_CHECKPOINT_INVALID',
      `Ledger ${ledger.path} holds no checkpoint: write one with ledger checkpoint, or pass --checkpoint FILE`,
      { path: ledger.path },
    );
  }
  const inclusion = proveInclusion(ledger, entry, checkpoint);
  const older = new Map<number, Checkpoint>();
  for (const kept of stored.filter((c) => c.origin === checkpoint.origin && c.size < checkpoint.size)) {
    older.set(kept.size, kept);
  }
  const chosen = [...older.values()].slice(-BUNDLE_CONSISTENCY_PROOFS);
  for (const given of options.since ?? []) if (!chosen.some((c) => c.size === given.size)) chosen.push(given);
  const consistency = chosen
    .filter((older) => older.size <= checkpoint.size)
    .map((older) => proveConsistency(ledger, older, checkpoint));
  const leaf = parseJsonLossless(Buffer.from(inclusion.leaf, 'base64').toString('utf8')).lossless as {
    output_digests?: ResultBundle['artifacts'];
  };
  return {
    type: BUNDLE_TYPE,
    run_id: entry.run_id,
    envelope: entry.envelope,
    record: entry.record,
    artifacts: leaf.output_digests ?? [],
    dsse:
      options.signers && options.signers.length > 0 ? signRecordDsse(entry.record, options.signers) : null,
    inclusion,
    consistency,
  };
}

export type BundleCheckStatus = 'pass' | 'fail' | 'skip' | 'warn';

export interface BundleCheck {
  check: string;
  status: BundleCheckStatus;
  message: string;
  code?: string;
}

export interface BundleReport {
  ok: boolean;
  /** Whether a public key was given: without one, signatures are unchecked and the bundle only hangs together. */
  authenticated: boolean;
  run_id?: string;
  checks: BundleCheck[];
}

export interface VerifyBundleOptions {
  /** Ed25519 public keys trusted for the record's signature, the DSSE envelope and the checkpoint. */
  publicKeys?: readonly KeyObject[];
  /** A checkpoint the auditor saw earlier: the bundle's must extend it. */
  checkpoint?: Checkpoint;
  /** Folder holding artifact content, to recompute the artifacts' digests. */
  artifactsDir?: string;
}

const same = (a: unknown, b: unknown) => canonicalize(a) === canonicalize(b);

function fail(check: string, message: string, code = 'BUNDLE_INVALID'): BundleCheck {
  return { check, status: 'fail', message, code };
}

/**
 * Checks a bundle on its own. Each check names what it bound to what; a
 * bundle whose parts do not fit is refused part by part rather than at the
 * first problem, so an auditor sees everything that is wrong.
 */
export async function verifyBundle(value: unknown, options: VerifyBundleOptions = {}): Promise<BundleReport> {
  const keys = options.publicKeys ?? [];
  if (!isJsonObject(value) || value.type !== BUNDLE_TYPE) {
    throw new EnvelopeError('BUNDLE_INVALID', `Not a bundle: expected an object with type "${BUNDLE_TYPE}"`);
  }
  const bundle = value as unknown as ResultBundle;
  if (!isJsonObject(bundle.record) || !isJsonObject(bundle.inclusion) || !Array.isArray(bundle.artifacts)) {
    throw new EnvelopeError('BUNDLE_INVALID', 'The bundle lacks its record, artifacts or inclusion proof');
  }
  const checks: BundleCheck[] = [];

  // The leaf, and what it binds: record, envelope, artifacts.
  let leafBytes: Buffer;
  let leaf: Record<string, unknown>;
  try {
    leafBytes = Buffer.from(String(bundle.inclusion.leaf), 'base64');
    const parsed = parseJsonLossless(leafBytes.toString('utf8')).lossless;
    if (!isJsonObject(parsed)) throw new Error('not a JSON object');
    leaf = parsed;
  } catch (error) {
    throw new EnvelopeError(
      'BUNDLE_INVALID',
      `The bundle's leaf cannot be read: ${(error as Error).message}`,
    );
  }
  const recordDigest = `sha256:${computeRecordDigest(bundle.record).value}`;
  checks.push(
    !same(leaf.record, bundle.record)
      ? fail('leaf:record', 'the record is not the one in the log leaf')
      : leaf.record_digest !== recordDigest
        ? fail(
            'leaf:record',
            `the leaf names record digest ${String(leaf.record_digest)}, the record's is ${recordDigest}`,
          )
        : { check: 'leaf:record', status: 'pass', message: `the record is the leaf's (${recordDigest})` },
  );
  if (bundle.envelope === null) {
    checks.push(
      leaf.envelope_digest === null
        ? { check: 'leaf:envelope', status: 'skip', message: 'the record was stored without an envelope' }
        : fail('leaf:envelope', 'the leaf names an envelope the bundle does not carry'),
    );
  } else {
    const digest = `sha256:${digestBytes(canonicalize(bundle.envelope), 'sha256').value}`;
    checks.push(
      digest !== leaf.envelope_digest
        ? fail(
            'leaf:envelope',
            `the envelope's digest is ${digest}, the leaf names ${String(leaf.envelope_digest)}`,
          )
        : !same(bundle.envelope.provenance, bundle.record)
          ? fail('leaf:envelope', "the envelope's provenance is not the bundle's record")
          : { check: 'leaf:envelope', status: 'pass', message: `the envelope is the leaf's (${digest})` },
    );
  }
  checks.push(
    same(bundle.artifacts, leaf.output_digests)
      ? {
          check: 'leaf:artifacts',
          status: 'pass',
          message: `${bundle.artifacts.length} artifact digest${bundle.artifacts.length === 1 ? '' : 's'}, as the leaf names them`,
        }
      : fail('leaf:artifacts', 'the artifact digests are not those the leaf names'),
  );

  // The record itself: contracts, digests, its own signature.
  const record = await verifyRecord(bundle.envelope ?? bundle.record, {
    ...(keys[0] ? { publicKey: keys[0] } : {}),
    ...(options.artifactsDir ? { artifactsDir: options.artifactsDir } : {}),
  });
  for (const check of record.checks) {
    checks.push({
      check: `record:${check.check}`,
      status: check.status,
      message: check.message,
      ...(check.status === 'fail' ? { code: check.code ?? 'CONTRACT_VIOLATION' } : {}),
    });
  }

  checks.push(dsseCheck(bundle, keys));

  // The checkpoint and the path to it.
  let checkpoint: Checkpoint | undefined;
  try {
    checkpoint = parseCheckpoint(String(bundle.inclusion.checkpoint));
  } catch (error) {
    checks.push(
      fail(
        'checkpoint',
        `the checkpoint cannot be read: ${(error as Error).message}`,
        'LEDGER_CHECKPOINT_INVALID',
      ),
    );
  }
  if (checkpoint) {
    checks.push(checkpointCheck('checkpoint', checkpoint, keys));
    const index = Number(bundle.inclusion.leaf_index);
    const path = (bundle.inclusion.audit_path ?? []).map((hash) => Buffer.from(String(hash), 'base64'));
    const included =
      bundle.inclusion.tree_size === checkpoint.size &&
      Number.isSafeInteger(index) &&
      verifyInclusion(leafHash(leafBytes), index, checkpoint.size, path, checkpoint.root);
    checks.push(
      included
        ? {
            check: 'inclusion',
            status: 'pass',
            message: `leaf ${index} is in ${checkpoint.origin} at size ${checkpoint.size}`,
          }
        : fail(
            'inclusion',
            `the audit path does not lead from leaf ${index} to the checkpoint's root`,
            'LEDGER_TAMPERED',
          ),
    );
    if (options.checkpoint) checks.push(consistencyCheck(bundle, options.checkpoint, checkpoint, keys));
  }
  const ok = checks.every((check) => check.status !== 'fail');
  return { ok, authenticated: keys.length > 0, run_id: bundle.run_id, checks };
}

function dsseCheck(bundle: ResultBundle, keys: readonly KeyObject[]): BundleCheck {
  if (bundle.dsse === null || bundle.dsse === undefined) {
    return { check: 'dsse', status: 'skip', message: 'the bundle carries no DSSE envelope' };
  }
  if (keys.length === 0)
    return { check: 'dsse', status: 'skip', message: 'no public key given to verify the DSSE envelope' };
  let result: ReturnType<typeof verifyDsse>;
  try {
    result = verifyDsse(bundle.dsse, keys);
  } catch (error) {
    return fail('dsse', (error as Error).message, (error as EnvelopeError).code ?? 'DSSE_INVALID');
  }
  if (result.verifiedBy.length === 0)
    return fail('dsse', 'no DSSE signature verifies under the keys given', 'SIGNATURE_INVALID');
  let bound: boolean;
  try {
    const payload = parseJsonLossless(result.payload.toString('utf8')).lossless as Record<string, unknown>;
    bound =
      result.payloadType === DSSE_RECORD_PAYLOAD_TYPE
        ? result.payload.equals(Buffer.from(canonicalize(bundle.record)))
        : result.payloadType === IN_TOTO_PAYLOAD_TYPE && same(payload.predicate, bundle.record);
  } catch {
    bound = false;
  }
  return bound
    ? {
        check: 'dsse',
        status: 'pass',
        message: `DSSE envelope over the record, signed by ${result.verifiedBy.join(', ')}`,
      }
    : fail('dsse', `the DSSE payload (${result.payloadType}) is not the bundle's record`, 'DSSE_INVALID');
}

function checkpointCheck(check: string, checkpoint: Checkpoint, keys: readonly KeyObject[]): BundleCheck {
  if (keys.length === 0) {
    return {
      check,
      status: 'skip',
      message: `${checkpoint.origin} at size ${checkpoint.size}: no public key given to check its signature`,
    };
  }
  return keys.some((key) => checkpointSignedBy(checkpoint, key))
    ? {
        check,
        status: 'pass',
        message: `${checkpoint.origin} at size ${checkpoint.size}, signed by the given key`,
      }
    : fail(
        check,
        `${checkpoint.origin} at size ${checkpoint.size} is not signed by a given key`,
        'LEDGER_CHECKPOINT_INVALID',
      );
}

/** The auditor's earlier checkpoint against the bundle's: the same log, and the bundle's extends it. */
function consistencyCheck(
  bundle: ResultBundle,
  earlier: Checkpoint,
  checkpoint: Checkpoint,
  keys: readonly KeyObject[],
): BundleCheck {
  const check = 'consistency';
  const signed = checkpointCheck(check, earlier, keys);
  if (signed.status === 'fail') return { ...signed, message: `the given checkpoint: ${signed.message}` };
  if (earlier.origin !== checkpoint.origin) {
    return fail(
      check,
      `the given checkpoint is of another log (${earlier.origin}, the bundle's is ${checkpoint.origin})`,
      'LEDGER_TAMPERED',
    );
  }
  if (earlier.size > checkpoint.size) {
    return fail(
      check,
      `the given checkpoint (size ${earlier.size}) is newer than the bundle's (size ${checkpoint.size}): ask for a bundle proved against it (ledger bundle --checkpoint)`,
      'LEDGER_CHECKPOINT_INVALID',
    );
  }
  if (earlier.size === checkpoint.size) {
    return Buffer.from(earlier.root).equals(Buffer.from(checkpoint.root))
      ? { check, status: 'pass', message: `the given checkpoint is the bundle's (size ${checkpoint.size})` }
      : fail(
          check,
          `the given checkpoint and the bundle's have size ${checkpoint.size} but different roots: the log forked`,
          'LEDGER_TAMPERED',
        );
  }
  const proof = (bundle.consistency ?? []).find(
    (p) => p.old_size === earlier.size && p.new_size === checkpoint.size,
  );
  if (proof === undefined) {
    return fail(
      check,
      `the bundle holds no consistency proof from size ${earlier.size}: ask for one made with ledger bundle --since`,
      'LEDGER_CHECKPOINT_INVALID',
    );
  }
  const hashes = proof.proof.map((hash) => Buffer.from(String(hash), 'base64'));
  return verifyConsistency(earlier.size, checkpoint.size, hashes, earlier.root, checkpoint.root)
    ? {
        check,
        status: 'pass',
        message: `the bundle's checkpoint (size ${checkpoint.size}) extends the given one (size ${earlier.size})`,
      }
    : fail(
        check,
        `the given checkpoint (size ${earlier.size}) is not a prefix of the bundle's (size ${checkpoint.size}): history was rewritten, or the logs forked`,
        'LEDGER_TAMPERED',
      );
}
