import type { KeyObject } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseJsonBytes } from '../../canonical/json-text.ts';
import { isJsonObject } from '../../canonical/json-value.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { type BundleReport, verifyBundle } from '../../ledger/bundle.ts';
import { parseCheckpoint } from '../../ledger/log/checkpoint.ts';
import { DSSE_RECORD_PAYLOAD_TYPE, IN_TOTO_PAYLOAD_TYPE } from '../../provenance/dsse.ts';
import {
  generateSigningKeyPair,
  keyIdFor,
  loadPrivateKey,
  loadPublicKey,
  signRecord,
} from '../../provenance/integrity.ts';
import { LineageGraph } from '../../provenance/lineage.ts';
import type { ProvRecord } from '../../provenance/record.ts';
import { describeCoverage, verdictLine, verify } from '../../provenance/verify.ts';
import { defaultRegistry, SCHEMA_IDS, schemaError } from '../../schemas/index.ts';
import { type Registrar, runs } from '../command.ts';
import { readInputBytes, readJsonInput, readJsonInputExact } from '../input.ts';
import { EXIT } from '../output.ts';
import { signAsDsse, verifyAsDsse } from './dsse.ts';
import { recordAndEnvelope } from './methods.ts';

async function writeNew(path: string, text: string, mode: number, force: boolean): Promise<void> {
  try {
    await writeFile(path, text, { mode, flag: force ? 'w' : 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new EnvelopeError('USAGE_ERROR', `${path} exists; pass --force to overwrite it`, { path });
    }
    throw new EnvelopeError('INPUT_UNREADABLE', `Cannot write ${path}: ${(error as Error).message}`, {
      path,
    });
  }
}

export const registerKeygen: Registrar = (program, invocation) => {
  program
    .command('keygen')
    .description('generate an Ed25519 key pair: PREFIX.private.pem (PKCS#8) and PREFIX.public.pem (SPKI)')
    .requiredOption('--out <prefix>', 'path prefix of the two key files')
    .option('--force', 'overwrite existing key files')
    .action(
      runs(invocation, async ({ io }, options: { out: string; force?: boolean }) => {
        const keys = generateSigningKeyPair();
        const privatePath = resolve(io.cwd, `${options.out}.private.pem`);
        const publicPath = resolve(io.cwd, `${options.out}.public.pem`);
        await writeNew(privatePath, keys.privateKeyPem, 0o600, options.force === true);
        await writeNew(publicPath, keys.publicKeyPem, 0o644, options.force === true);
        const keyId = keyIdFor(loadPublicKey(keys.publicKeyPem));
        return {
          exitCode: EXIT.ok,
          human: `wrote ${options.out}.private.pem and ${options.out}.public.pem (key id ${keyId})`,
          json: { private_key: privatePath, public_key: publicPath, key_id: keyId },
        };
      }),
    );
};

/** A bundle's checks, one line each, and a closing verdict; exit 1 when any failed. */
function bundleResult(report: BundleReport) {
  const lines = report.checks.map(
    (check) =>
      `${check.status.toUpperCase().padEnd(4)} ${check.check}: ${check.message}${check.code ? ` [${check.code}]` : ''}`,
  );
  const failed = report.checks.filter((check) => check.status === 'fail').length;
  const skipped = report.checks.filter((check) => check.status === 'skip').map((check) => check.check);
  lines.push(
    failed > 0
      ? `BUNDLE FAILED: ${failed} check${failed === 1 ? '' : 's'} failed (FAIL lines above)`
      : !report.authenticated
        ? 'BUNDLE CONSISTENT, NOT AUTHENTICATED: no public key given, so no signature was checked (--public-key)'
        : `BUNDLE VERIFIED: run ${report.run_id}${skipped.length > 0 ? `; not checked: ${skipped.join(', ')}` : ''}`,
  );
  return { exitCode: failed > 0 ? EXIT.checkFailed : EXIT.ok, human: lines.join('\n'), json: report };
}

async function readKey(path: string, io: Parameters<typeof readInputBytes>[1]): Promise<Buffer> {
  return readInputBytes(path, io);
}

/** Collects a repeatable option's values (commander keeps only the last otherwise). */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

export const registerSign: Registrar = (program, invocation) => {
  program
    .command('sign')
    .description(
      'sign a record (or the record in an envelope): adds the record digest and an Ed25519 signature, prints the result; with --dsse or --in-toto, prints a DSSE envelope over the record (as it is) instead',
    )
    .argument('<record>', 'prov.record.v0.1 or mcp.envelope.v0.1 file, or - for stdin')
    .requiredOption(
      '--private-key <file>',
      'Ed25519 private key (PKCS#8 PEM); with --dsse or --in-toto, repeat it for one signature per key',
      collect,
    )
    .option('--key-id <id>', 'key id to record (default: ed25519: plus the public key fingerprint)')
    .option(
      '--dsse',
      `a DSSE envelope whose payload is the record's RFC 8785 bytes (payloadType ${DSSE_RECORD_PAYLOAD_TYPE})`,
    )
    .option(
      '--in-toto',
      `a DSSE envelope (payloadType ${IN_TOTO_PAYLOAD_TYPE}) over an in-toto Statement v1: subjects the record's output artifacts with digests, predicate the record`,
    )
    .action(
      runs(
        invocation,
        async (
          { io },
          file: string,
          options: { privateKey: string[]; keyId?: string; dsse?: boolean; inToto?: boolean },
        ) => {
          const dsse = options.dsse === true || options.inToto === true;
          if (options.dsse && options.inToto) {
            throw new EnvelopeError('USAGE_ERROR', '--dsse and --in-toto are two formats: give one');
          }
          if (!dsse && options.privateKey.length > 1) {
            throw new EnvelopeError(
              'USAGE_ERROR',
              'A record carries one signature: several keys need --dsse or --in-toto',
            );
          }
          if (options.keyId !== undefined && options.privateKey.length > 1) {
            throw new EnvelopeError('USAGE_ERROR', '--key-id names one key: give it with one --private-key');
          }
          const { record, envelope } = recordAndEnvelope(await readJsonInputExact(file, io));
          const schema = defaultRegistry().validate(SCHEMA_IDS.record, record);
          if (!schema.valid) throw schemaError(SCHEMA_IDS.record, schema.issues);
          const keys: KeyObject[] = [];
          for (const path of options.privateKey) keys.push(loadPrivateKey(await readKey(path, io)));
          if (dsse) {
            const signers =
              options.keyId === undefined ? keys : [{ key: keys[0] as KeyObject, keyId: options.keyId }];
            return signAsDsse(record as unknown as ProvRecord, signers, options.inToto === true);
          }
          const signed = signRecord(
            record as unknown as ProvRecord,
            keys[0] as KeyObject,
            options.keyId ? { keyId: options.keyId } : {},
          );
          const output = envelope ? { ...envelope, provenance: signed } : signed;
          return { exitCode: EXIT.ok, raw: `${JSON.stringify(output, null, 2)}\n`, json: output };
        },
      ),
    );
};

async function loadRecordSet(paths: readonly string[], cwd: string): Promise<ProvRecord[]> {
  const records: ProvRecord[] = [];
  for (const path of paths) {
    const full = resolve(cwd, path);
    let files = [full];
    try {
      const entries = await readdir(full);
      files = entries
        .filter((name) => name.endsWith('.json'))
        .sort()
        .map((name) => join(full, name));
    } catch {
      // Not a folder: a single file.
    }
    for (const file of files) {
      let value: unknown;
      try {
        value = parseJsonBytes(await readFile(file));
      } catch (error) {
        throw new EnvelopeError(
          error instanceof EnvelopeError ? error.code : 'INPUT_UNREADABLE',
          `${file}: ${(error as Error).message}`,
        );
      }
      const { record } = recordAndEnvelope(value);
      records.push(record as unknown as ProvRecord);
    }
  }
  return records;
}

export const registerVerify: Registrar = (program, invocation) => {
  program
    .command('verify')
    .description(
      'verify a record or an envelope: recompute digests from obtainable inputs, resolve evidence, check every claimed contract, the record digest and the signature, and say which of them the record carries and which were checked; with --dsse, verify a DSSE envelope instead',
    )
    .argument(
      '<file>',
      'prov.record.v0.1 or mcp.envelope.v0.1 file (with --dsse: a DSSE envelope), or - for stdin',
    )
    .option('--artifacts <dir>', 'folder holding artifact content (locators are confined to it)')
    .option(
      '--public-key <file>',
      'Ed25519 public key (SPKI PEM) to verify the signature; an unsigned record then fails. With --dsse, required and repeatable: each key must have signed',
      collect,
    )
    .option('--records <paths...>', 'other records (files or folders) for lineage checks')
    .option('--strict', 'methods outside the catalog fail instead of warn')
    .option(
      '--dsse',
      "FILE is a DSSE envelope (from sign --dsse or --in-toto): check its signatures over the payload's exact bytes, then the record or statement it carries",
    )
    .option(
      '--bundle',
      'FILE is a result bundle (from ledger bundle): check the record, the envelope and artifact digests against the log leaf, the DSSE envelope, the inclusion proof and the checkpoint, with no ledger and no network',
    )
    .option(
      '--checkpoint <file>',
      "with --bundle: a checkpoint you saw earlier; the bundle's checkpoint must extend it (consistency)",
    )
    .action(
      runs(
        invocation,
        async (
          { io },
          file: string,
          options: {
            artifacts?: string;
            publicKey?: string[];
            records?: string[];
            strict?: boolean;
            dsse?: boolean;
            bundle?: boolean;
            checkpoint?: string;
          },
        ) => {
          if (options.checkpoint !== undefined && !options.bundle) {
            throw new EnvelopeError('USAGE_ERROR', '--checkpoint goes with --bundle');
          }
          if (options.bundle) {
            if (options.dsse || options.records !== undefined || options.strict) {
              throw new EnvelopeError(
                'USAGE_ERROR',
                '--bundle takes --public-key, --checkpoint and --artifacts only',
              );
            }
            const keys: KeyObject[] = [];
            for (const path of options.publicKey ?? []) keys.push(loadPublicKey(await readKey(path, io)));
            const checkpoint =
              options.checkpoint === undefined
                ? undefined
                : parseCheckpoint((await readInputBytes(options.checkpoint, io)).toString('utf8'));
            const report = await verifyBundle(await readJsonInputExact(file, io), {
              publicKeys: keys,
              ...(checkpoint ? { checkpoint } : {}),
              ...(options.artifacts ? { artifactsDir: resolve(io.cwd, options.artifacts) } : {}),
            });
            return bundleResult(report);
          }
          if (options.dsse) {
            if (options.artifacts !== undefined || options.records !== undefined || options.strict) {
              throw new EnvelopeError('USAGE_ERROR', '--dsse takes --public-key only');
            }
            if (!options.publicKey) {
              throw new EnvelopeError('USAGE_ERROR', '--dsse needs at least one --public-key');
            }
            const keys: KeyObject[] = [];
            for (const path of options.publicKey) keys.push(loadPublicKey(await readKey(path, io)));
            return verifyAsDsse(await readJsonInput(file, io), keys);
          }
          if ((options.publicKey?.length ?? 0) > 1) {
            throw new EnvelopeError(
              'USAGE_ERROR',
              'A record carries one signature: several keys need --dsse',
            );
          }
          const subject = await readJsonInputExact(file, io);
          const publicKeyFile = options.publicKey?.[0];
          const publicKey = publicKeyFile ? loadPublicKey(await readKey(publicKeyFile, io)) : undefined;
          let lineage: LineageGraph | undefined;
          if (options.records) {
            lineage = new LineageGraph(await loadRecordSet(options.records, io.cwd));
            if (isJsonObject(subject)) {
              const own = recordAndEnvelope(subject).record as unknown as ProvRecord;
              if (typeof own.run_id === 'string' && !lineage.get(own.run_id)) lineage.add(own);
            }
          }
          const report = await verify(subject, {
            ...(options.artifacts ? { artifactsDir: resolve(io.cwd, options.artifacts) } : {}),
            ...(publicKey ? { publicKey } : {}),
            ...(lineage ? { lineage } : {}),
            strictMethods: options.strict === true,
          });
          const lines = report.checks.map(
            (check) => `${check.status.toUpperCase().padEnd(4)} ${check.check}: ${check.message}`,
          );
          lines.push(...describeCoverage(report.coverage), verdictLine(report));
          return { exitCode: report.ok ? EXIT.ok : EXIT.checkFailed, human: lines.join('\n'), json: report };
        },
      ),
    );
};

export const registerLineage: Registrar = (program, invocation) => {
  program
    .command('lineage')
    .description('build the lineage graph of a set of records (files or folders of them); a cycle fails')
    .argument('<paths...>', 'record or envelope files, or folders of them')
    .action(
      runs(invocation, async ({ io }, paths: string[]) => {
        const graph = new LineageGraph(await loadRecordSet(paths, io.cwd));
        const report = graph.report();
        const lines = [
          `${report.nodes.length} records, ${report.edges.length} parent links`,
          `roots: ${report.roots.join(', ') || '(none)'}`,
        ];
        if (report.order) lines.push(`order: ${report.order.join(' -> ')}`);
        if (report.missingParents.length > 0)
          lines.push(`parents not in the set: ${report.missingParents.join(', ')}`);
        if (report.duplicateRunIds.length > 0)
          lines.push(`duplicate run ids: ${report.duplicateRunIds.join(', ')}`);
        for (const cycle of report.cycles) lines.push(`CYCLE: ${cycle.join(' -> ')}`);
        const ok = report.acyclic && report.duplicateRunIds.length === 0;
        lines.push(ok ? 'OK: the lineage is a DAG' : 'FAILED: the lineage is not a DAG of distinct runs');
        return {
          exitCode: ok ? EXIT.ok : EXIT.checkFailed,
          human: lines.join('\n'),
          json: { ok, ...report },
        };
      }),
    );
};
