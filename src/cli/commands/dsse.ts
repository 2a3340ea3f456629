import { createHash, type KeyObject } from 'node:crypto';
import { canonicalize } from '../../canonical/canonicalize.ts';
import { parseJsonBytes } from '../../canonical/json-text.ts';
import { isJsonObject } from '../../canonical/json-value.ts';
import {
  DSSE_RECORD_PAYLOAD_TYPE,
  type DsseSigner,
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
  inTotoSubjects,
  PROV_RECORD_PREDICATE_TYPE,
  signInTotoStatement,
  signRecordDsse,
  verifyDsse,
} from '../../provenance/dsse.ts';
import { keyIdFor } from '../../provenance/integrity.ts';
import type { ProvRecord } from '../../provenance/record.ts';
import { verify } from '../../provenance/verify.ts';
import { defaultRegistry, SCHEMA_IDS } from '../../schemas/index.ts';
import type { CommandResult } from '../output.ts';
import { EXIT } from '../output.ts';

/**
 * `sign --dsse` / `sign --in-toto` and `verify --dsse`: the DSSE side of the
 * sign and verify commands (see provenance/dsse.ts for the formats).
 */

/** A DSSE envelope over a (schema-valid) record, or over its in-toto statement; printed as sign prints. */
export function signAsDsse(
  record: ProvRecord,
  signers: readonly DsseSigner[],
  inToto: boolean,
): CommandResult {
  const envelope = inToto ? signInTotoStatement(record, signers) : signRecordDsse(record, signers);
  return { exitCode: EXIT.ok, raw: `${JSON.stringify(envelope, null, 2)}\n`, json: envelope };
}

interface DsseCheck {
  check: string;
  status: 'pass' | 'fail' | 'skip';
  message: string;
  code?: string;
}

/**
 * The record a payload carries, verified as `verify` verifies one: its
 * contracts, record digest and artifact digests, and its own signature by the
 * given key whose id it names (if it is signed).
 */
async function recordChecks(record: ProvRecord, publicKeys: readonly KeyObject[]): Promise<DsseCheck[]> {
  const signer = publicKeys.find((key) => keyIdFor(key) === record.integrity?.signature?.key_id);
  const report = await verify(record, signer ? { publicKey: signer } : {});
  return report.checks.map((check) => ({
    check: `record:${check.check}`,
    status: check.status === 'warn' ? 'skip' : check.status,
    message: check.message,
    ...(check.code ? { code: check.code } : {}),
  }));
}

/** What the payload is, checked as far as its type is one this tool reads; the record it carries, if any. */
function payloadChecks(payloadType: string, payload: Buffer): { checks: DsseCheck[]; record?: ProvRecord } {
  const checksOnly = (checks: DsseCheck[]) => ({ checks });
  if (payloadType !== DSSE_RECORD_PAYLOAD_TYPE && payloadType !== IN_TOTO_PAYLOAD_TYPE) {
    return checksOnly([
      { check: 'payload', status: 'skip', message: `payload type ${payloadType} is not one this tool reads` },
    ]);
  }
  let value: unknown;
  try {
    value = parseJsonBytes(payload);
  } catch (error) {
    return checksOnly([
      {
        check: 'payload',
        status: 'fail',
        code: 'DSSE_INVALID',
        message: `payload is not JSON: ${(error as Error).message}`,
      },
    ]);
  }
  const recordCheck = (record: unknown, where: string): DsseCheck => {
    const schema = defaultRegistry().validate(SCHEMA_IDS.record, record);
    if (!schema.valid) {
      const first = schema.issues[0];
      return {
        check: 'payload',
        status: 'fail',
        code: 'SCHEMA_INVALID',
        message: `${where} is not a valid prov.record.v0.1${first ? `: ${first.pointer || '/'} ${first.message}` : ''}`,
      };
    }
    return {
      check: 'payload',
      status: 'pass',
      message: `${where} is a valid prov.record.v0.1 (run ${(record as ProvRecord).run_id})`,
    };
  };
  if (payloadType === DSSE_RECORD_PAYLOAD_TYPE) {
    const check = recordCheck(value, 'payload');
    return check.status === 'pass'
      ? { checks: [check], record: value as unknown as ProvRecord }
      : checksOnly([check]);
  }
  if (!isJsonObject(value) || value._type !== IN_TOTO_STATEMENT_TYPE) {
    return checksOnly([
      {
        check: 'payload',
        status: 'fail',
        code: 'DSSE_INVALID',
        message: `payload is not an ${IN_TOTO_STATEMENT_TYPE}`,
      },
    ]);
  }
  if (value.predicateType !== PROV_RECORD_PREDICATE_TYPE) {
    return checksOnly([
      {
        check: 'payload',
        status: 'skip',
        message: `in-toto statement with predicate type ${String(value.predicateType)}, not one this tool reads`,
      },
    ]);
  }
  const record = recordCheck(value.predicate, 'predicate');
  if (record.status !== 'pass') return checksOnly([record]);
  const expected = inTotoSubjects(value.predicate as unknown as ProvRecord);
  const same = canonicalize(value.subject ?? null) === canonicalize(expected);
  return {
    record: value.predicate as unknown as ProvRecord,
    checks: [
      record,
      same
        ? {
            check: 'subjects',
            status: 'pass',
            message: `subjects are the record's ${expected.length} output artifact${expected.length === 1 ? '' : 's'} with a digest`,
          }
        : {
            check: 'subjects',
            status: 'fail',
            code: 'DIGEST_MISMATCH',
            message: "subjects are not the record's output artifacts with their digests",
          },
    ],
  };
}

/**
 * Verifies a DSSE envelope with every key given: each must have made one of
 * its signatures. The payload is read as the envelope carries it; a record or
 * an in-toto statement of a record is then checked for its shape (and a
 * statement's subjects against its record's outputs).
 */
export async function verifyAsDsse(
  envelope: unknown,
  publicKeys: readonly KeyObject[],
): Promise<CommandResult> {
  const result = verifyDsse(envelope, publicKeys);
  const count = result.signatureCount;
  const checks: DsseCheck[] = result.keys.map((key) =>
    key.signatures.length > 0
      ? {
          check: 'signature',
          status: 'pass',
          message: `${key.keyId} verifies signature ${key.signatures.map((index) => index + 1).join(', ')} of ${count}`,
        }
      : {
          check: 'signature',
          status: 'fail',
          code: 'SIGNATURE_INVALID',
          message: `${key.keyId} made none of the envelope's signatures (${count})`,
        },
  );
  const payload = payloadChecks(result.payloadType, result.payload);
  checks.push(...payload.checks);
  if (payload.record) checks.push(...(await recordChecks(payload.record, publicKeys)));
  const ok = checks.every((check) => check.status !== 'fail');
  const sha256 = createHash('sha256').update(result.payload).digest('hex');
  const lines = checks.map(
    (check) => `${check.status.toUpperCase().padEnd(4)} ${check.check}: ${check.message}`,
  );
  lines.push(
    `payload: ${result.payloadType}, ${result.payload.length} bytes, sha256:${sha256}`,
    ok
      ? `VERIFIED: DSSE envelope signed by ${result.verifiedBy.join(', ')}`
      : `FAILED: ${checks.filter((check) => check.status === 'fail').length} of ${checks.length} checks failed`,
  );
  return {
    exitCode: ok ? EXIT.ok : EXIT.checkFailed,
    human: lines.join('\n'),
    json: {
      ok,
      payload_type: result.payloadType,
      payload_digest: { alg: 'sha256', value: sha256 },
      signatures: count,
      keys: result.keys.map((key) => ({
        key_id: key.keyId,
        verified: key.signatures.length > 0,
        signatures: key.signatures,
      })),
      checks,
    },
  };
}
