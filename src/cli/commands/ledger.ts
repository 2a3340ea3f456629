import type { KeyObject } from 'node:crypto';
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { canonicalize } from '../../canonical/index.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { CONFIG_DEFAULTS } from '../../gateway/operations/config.ts';
import { BUNDLE_CONSISTENCY_PROOFS, buildBundle } from '../../ledger/bundle.ts';
import {
  auditEntries,
  auditLog,
  type Checkpoint,
  checkpointSignedBy,
  Ledger,
  type LedgerEntry,
  type LogAudit,
  latestCheckpoint,
  parseCheckpoint,
  proveConsistency,
  proveInclusion,
  verifyLedger,
  writeCheckpoint,
} from '../../ledger/index.ts';
import { ledgerVerdictLine } from '../../ledger/verify.ts';
import { loadPrivateKey, loadPublicKey } from '../../provenance/index.ts';
import { type Invocation, type Registrar, runs } from '../command.ts';
import { readInputBytes, readJsonInputExact } from '../input.ts';
import { type CliIo, EXIT } from '../output.ts';
import { registerServe } from './ledger-serve.ts';

interface DbOption {
  db?: string;
}

/**
 * The ledger file the gateway writes when its configuration sets no
 * `ledger.path` (relative to the configuration's folder), so that ledger
 * commands run in that folder find it without --db.
 */
export const DEFAULT_LEDGER_DB: string = CONFIG_DEFAULTS.ledger.path;

const DB_HELP = `ledger database file (default: ${DEFAULT_LEDGER_DB}, where the gateway writes it)`;

/**
 * Opens the ledger for one command and always closes it. Reading commands
 * open it read-only: they never create, migrate or otherwise change the file
 * they were asked to read.
 */
async function withLedger<T>(
  io: CliIo,
  file: string | undefined,
  mode: 'read' | 'write',
  body: (ledger: Ledger) => Promise<T> | T,
): Promise<T> {
  let ledger: Ledger;
  try {
    ledger = Ledger.open(
      resolve(io.cwd, file ?? DEFAULT_LEDGER_DB),
      mode === 'read' ? { readOnly: true } : { create: true },
    );
  } catch (error) {
    if (file === undefined && error instanceof EnvelopeError && error.code === 'LEDGER_NOT_FOUND') {
      throw new EnvelopeError(
        'LEDGER_NOT_FOUND',
        `No ledger at ${DEFAULT_LEDGER_DB}, where the gateway writes one by default (relative to its configuration file): run this in the configuration's folder, or pass --db FILE`,
        error.details,
        { cause: error },
      );
    }
    throw error;
  }
  try {
    return await body(ledger);
  } finally {
    ledger.close();
  }
}

function summary(entry: LedgerEntry) {
  return {
    seq: entry.seq,
    run_id: entry.run_id,
    tool: entry.tool,
    upstream: entry.upstream,
    record_digest: `sha256:${entry.record_digest}`,
    created_at: entry.created_at,
  };
}

function line(entry: LedgerEntry): string {
  return [
    String(entry.seq).padStart(5),
    entry.created_at,
    entry.run_id,
    `${entry.upstream ?? '-'}/${entry.tool}`,
    `sha256:${entry.record_digest.slice(0, 16)}`,
  ].join('  ');
}

/** The header over `line`'s columns. */
const LIST_HEADER = [
  '  seq',
  'created_at'.padEnd(24),
  'run_id'.padEnd(36),
  'upstream/tool',
  'record digest',
].join('  ');

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(limit) || limit < 1) {
    throw new EnvelopeError('USAGE_ERROR', `--limit must be a positive integer, got "${value}"`);
  }
  return limit;
}

function registerList(ledger: Command, invocation: Invocation): void {
  ledger
    .command('list')
    .description('list stored records, newest first')
    .option('--db <file>', DB_HELP)
    .option('--tool <name>', 'only records of this tool')
    .option('--upstream <name>', 'only records from this upstream')
    .option('--limit <n>', 'at most this many', '100')
    .action(
      runs(
        invocation,
        async ({ io }, options: DbOption & { tool?: string; upstream?: string; limit: string }) => {
          const limit = parseLimit(options.limit);
          const entries = await withLedger(io, options.db, 'read', (store) =>
            store.list({
              limit,
              ...(options.tool === undefined ? {} : { tool: options.tool }),
              ...(options.upstream === undefined ? {} : { upstream: options.upstream }),
            }),
          );
          return {
            exitCode: EXIT.ok,
            human: entries.length === 0 ? 'no records' : [LIST_HEADER, ...entries.map(line)].join('\n'),
            json: { entries: entries.map(summary) },
          };
        },
      ),
    );
}

function registerShow(ledger: Command, invocation: Invocation): void {
  ledger
    .command('show')
    .description('print the records with this run id or record digest')
    .argument('<key>', 'run id, or record digest (hex or sha256:hex)')
    .option('--db <file>', DB_HELP)
    .action(
      runs(invocation, async ({ io }, key: string, options: DbOption) => {
        const entries = await withLedger(io, options.db, 'read', (store) => store.show(key));
        const full = entries.map((entry) => ({
          ...summary(entry),
          record: entry.record,
          envelope: entry.envelope,
        }));
        // For a person, an envelope's provenance that is the record above is not printed again.
        const shown = full.map((entry) =>
          entry.envelope !== null &&
          canonicalize(entry.envelope.provenance ?? null) === canonicalize(entry.record)
            ? { ...entry, envelope: { ...entry.envelope, provenance: '(the record above)' } }
            : entry,
        );
        return {
          exitCode: EXIT.ok,
          human: shown.map((entry) => JSON.stringify(entry, null, 2)).join('\n'),
          json: { entries: full },
        };
      }),
    );
}

/** What a clean `ledger verify` does and does not prove: a pass must not be read as more. */
const VERIFY_LIMITS = `
What it proves: each row's record still has the digest stored with it, and
the record (or the envelope it came in) passes the provenance checks,
signatures included when the records are signed and --public-key is given.
A row that cannot be read fails on its own, named by seq, run id and digest.
The closing line counts only the records whose digests or signature were
checked and held as verified; the others are counted apart (nothing verified,
nothing to verify, failed), and an empty ledger is no pass (exit 1).

Verifying the whole ledger also audits its transparency log: every row is
compared with its leaf (a changed run_id, tool, upstream, created_at,
record_digest or envelope column fails, named by seq and column, as does a
changed principal, outcome or error_code, the viewer's index columns, or a
rewritten leaf), a deleted, reordered or smuggled row fails, and the tree's root must match every checkpoint the ledger
kept and the one given with --checkpoint (a truncated, wiped, rewritten or
forked log fails; with --public-key each checkpoint must be signed by it).

What it does not prove: a ledger rewritten wholly, log and checkpoints
included, passes unless a checkpoint taken before is given (--checkpoint) or
the checkpoints must be signed by a key the rewriter lacks (--public-key).
Without records signed by the gateway (its \`signing\` setting) and
--public-key, a row rewritten consistently before its leaf was logged cannot
be told apart. The file is opened read-only and never changed.`;

/** The one entry a run id or digest names (USAGE_ERROR when a run id names several). */
function onlyEntry(store: Ledger, key: string): LedgerEntry {
  const entries = store.show(key);
  if (entries.length > 1) {
    throw new EnvelopeError(
      'USAGE_ERROR',
      `${entries.length} records have run id ${key}: name one by its record digest (${entries.map((entry) => `sha256:${entry.record_digest}`).join(', ')})`,
      { key },
    );
  }
  return entries[0] as LedgerEntry;
}

/** Collects a repeatable option's values (commander keeps only the last otherwise). */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

export async function readCheckpoint(file: string, io: CliIo): Promise<Checkpoint> {
  return parseCheckpoint((await readInputBytes(file, io)).toString('utf8'));
}

/**
 * withLedger for reading, except that a file emptied or replaced when a
 * checkpoint says it held entries is tampering (LEDGER_TAMPERED), not a file
 * that was never a ledger.
 */
async function withCheckpointedLedger<T>(
  io: CliIo,
  file: string | undefined,
  checkpoint: Checkpoint | undefined,
  body: (ledger: Ledger) => Promise<T> | T,
): Promise<T> {
  try {
    return await withLedger(io, file, 'read', body);
  } catch (error) {
    if (
      checkpoint !== undefined &&
      checkpoint.size > 0 &&
      error instanceof EnvelopeError &&
      (error.code === 'LEDGER_NOT_A_LEDGER' || error.code === 'LEDGER_NOT_FOUND')
    ) {
      throw new EnvelopeError(
        'LEDGER_TAMPERED',
        `The checkpoint ${checkpoint.origin} says the ledger held ${checkpoint.size} entries, but ${error.message}: the ledger was wiped or replaced`,
        { ...error.details, checkpoint_size: checkpoint.size },
        { cause: error },
      );
    }
    throw error;
  }
}

function logLines(audit: LogAudit): string[] {
  const lines = audit.problems.map(
    (problem) => `TAMPERED ${problem.message}${problem.column ? ` [column ${problem.column}]` : ''}`,
  );
  const anchors = audit.checkpoints.map(
    (check) =>
      `${check.source} checkpoint ${check.origin} at size ${check.size}: ${check.consistent ? 'consistent' : 'NOT consistent'}, ${check.signed === null ? 'signature not checked (no --public-key)' : check.signed ? 'signed by the given key' : 'NOT signed by the given key'}`,
  );
  const entries = `log: ${audit.size} ${audit.size === 1 ? 'entry' : 'entries'}`;
  // Without a checkpoint the root proves nothing to anyone: it is printed when one anchors it.
  const summary =
    audit.checkpoints.length === 0
      ? `${entries}, no checkpoint anchors it (ledger checkpoint writes one)`
      : `${entries}, root ${audit.root}`;
  // An empty log that nothing anchors says nothing: the closing line already says NOTHING VERIFIED.
  if (audit.size === 0 && audit.checkpoints.length === 0 && audit.ok) return [];
  return [...lines, ...anchors, `${audit.ok ? '' : 'FAIL '}${summary}`];
}

function registerVerify(ledger: Command, invocation: Invocation): void {
  ledger
    .command('verify')
    .description(
      'recompute every stored record digest and verify each record; exit 1 when any fails or the ledger is empty',
    )
    .addHelpText('after', VERIFY_LIMITS)
    .argument('[key]', 'only the records with this run id or record digest')
    .option('--db <file>', DB_HELP)
    .option(
      '--artifacts <dir>',
      "folder holding artifact content to re-digest (as verify takes it; the gateway's artifacts.dir too)",
    )
    // The earlier spelling, kept working.
    .addOption(new Option('--artifacts-dir <dir>').hideHelp())
    .option(
      '--public-key <file>',
      'Ed25519 public key (SPKI PEM): every record must carry a signature it verifies, and every checkpoint too',
    )
    .option(
      '--checkpoint <file>',
      'a checkpoint taken earlier (ledger checkpoint): the log must still have its root at its size',
    )
    .action(
      runs(
        invocation,
        async (
          { io },
          key: string | undefined,
          options: DbOption & {
            artifacts?: string;
            artifactsDir?: string;
            publicKey?: string;
            checkpoint?: string;
          },
        ) => {
          const artifacts = options.artifacts ?? options.artifactsDir;
          const publicKey =
            options.publicKey === undefined
              ? undefined
              : loadPublicKey(await readInputBytes(options.publicKey, io));
          const given =
            options.checkpoint === undefined ? undefined : await readCheckpoint(options.checkpoint, io);
          let log: LogAudit | undefined;
          const report = await withCheckpointedLedger(io, options.db, given, async (store) => {
            const logOptions = {
              ...(publicKey ? { publicKey } : {}),
              ...(given ? { checkpoint: given } : {}),
            };
            const records = await verifyLedger(store, key, {
              ...(artifacts === undefined ? {} : { artifactsDir: resolve(io.cwd, artifacts) }),
              ...(publicKey ? { publicKey } : {}),
            });
            // Without a key, the whole log; with one, those rows against their leaves and their
            // inclusion in the checkpoint (verifying some records says nothing of the others).
            log =
              key === undefined
                ? auditLog(store, logOptions)
                : auditEntries(
                    store,
                    records.entries.map((entry) => entry.seq),
                    logOptions,
                  );
            return records;
          });
          const lines = report.entries.map((entry) => {
            const failed = entry.checks.filter((check) => check.status === 'fail');
            // Says what was checked: a record without digests is "nothing to verify", not "verified".
            const verdict = entry.coverage.verdict.replaceAll('_', ' ');
            const head = `${entry.ok ? 'ok  ' : 'FAIL'} ${String(entry.seq).padStart(5)} ${entry.run_id} ${entry.tool} (${verdict})`;
            return [head, ...failed.map((check) => `       ${check.check}: ${check.message}`)].join('\n');
          });
          const audit = log as LogAudit | undefined;
          if (audit !== undefined) lines.push(...logLines(audit));
          lines.push(ledgerVerdictLine(report));
          // The last line says the outcome: records that verified do not make a tampered ledger pass.
          if (audit !== undefined && !audit.ok) {
            lines.push(
              `LEDGER TAMPERED: ${audit.problems.length} problem${audit.problems.length === 1 ? '' : 's'} in the transparency log (TAMPERED lines above)`,
            );
          }
          // An empty ledger with no checkpoint is "nothing verified", as before the log; with one it is a wipe.
          const ok = report.ok && (audit === undefined || audit.ok);
          return {
            exitCode: ok ? EXIT.ok : EXIT.checkFailed,
            human: lines.join('\n'),
            json: { ...report, ok, ...(audit === undefined ? {} : { log: audit }) },
          };
        },
      ),
    );
}

function registerCheckpoint(ledger: Command, invocation: Invocation): void {
  ledger
    .command('checkpoint')
    .description(
      "sign a checkpoint of the ledger's transparency log (C2SP tlog-checkpoint), keep it in the ledger and print it",
    )
    .option('--db <file>', DB_HELP)
    .requiredOption(
      '--private-key <file>',
      "Ed25519 private key (PKCS#8 PEM): the one the ledger's records are signed with",
    )
    .option('--origin <origin>', "the log's name in the checkpoint (default: mcp-envelope/<the ledger's id>)")
    .action(
      runs(invocation, async ({ io }, options: DbOption & { privateKey: string; origin?: string }) => {
        const key = loadPrivateKey(await readInputBytes(options.privateKey, io));
        const checkpoint = await withLedger(io, options.db, 'write', (store) =>
          writeCheckpoint(store, key, options.origin === undefined ? {} : { origin: options.origin }),
        );
        return {
          exitCode: EXIT.ok,
          raw: checkpoint.text,
          json: {
            origin: checkpoint.origin,
            tree_size: checkpoint.size,
            root_hash: checkpoint.root.toString('base64'),
            checkpoint: checkpoint.text,
          },
        };
      }),
    );
}

function registerProve(ledger: Command, invocation: Invocation): void {
  ledger
    .command('prove')
    .description('print the inclusion proof (JSON) of one record in the tree a signed checkpoint vouches for')
    .argument('<key>', 'run id, or record digest (hex or sha256:hex)')
    .option('--db <file>', DB_HELP)
    .option('--checkpoint <file>', 'prove against this checkpoint (default: the newest the ledger kept)')
    .action(
      runs(invocation, async ({ io }, key: string, options: DbOption & { checkpoint?: string }) => {
        const given =
          options.checkpoint === undefined ? undefined : await readCheckpoint(options.checkpoint, io);
        const proof = await withLedger(io, options.db, 'read', (store) =>
          proveInclusion(store, onlyEntry(store, key), given ?? latestCheckpoint(store)),
        );
        return { exitCode: EXIT.ok, raw: `${JSON.stringify(proof, null, 2)}\n`, json: proof };
      }),
    );
}

function registerBundle(ledger: Command, invocation: Invocation): void {
  ledger
    .command('bundle')
    .description(
      "print one result's offline bundle (JSON): its envelope, record, artifact digests, a DSSE envelope over the record, the inclusion proof and checkpoint, and consistency proofs from older checkpoints; check it with verify --bundle",
    )
    .argument('<key>', 'run id, or record digest (hex or sha256:hex)')
    .option('--db <file>', DB_HELP)
    .option('--checkpoint <file>', 'prove inclusion in this checkpoint (default: the newest the ledger kept)')
    .option(
      '--private-key <file>',
      'Ed25519 private key (PKCS#8 PEM) to sign the DSSE envelope over the record with; repeatable (without one the bundle carries no DSSE envelope)',
      collect,
    )
    .option(
      '--since <file>',
      `also prove consistency from this older checkpoint (the newest ${BUNDLE_CONSISTENCY_PROOFS} the ledger kept are always included); repeatable`,
      collect,
    )
    .action(
      runs(
        invocation,
        async (
          { io },
          key: string,
          options: DbOption & { checkpoint?: string; privateKey?: string[]; since?: string[] },
        ) => {
          const checkpoint =
            options.checkpoint === undefined ? undefined : await readCheckpoint(options.checkpoint, io);
          const since: Checkpoint[] = [];
          for (const file of options.since ?? []) since.push(await readCheckpoint(file, io));
          const signers: KeyObject[] = [];
          for (const file of options.privateKey ?? [])
            signers.push(loadPrivateKey(await readInputBytes(file, io)));
          const bundle = await withLedger(io, options.db, 'read', (store) =>
            buildBundle(store, onlyEntry(store, key), {
              ...(checkpoint ? { checkpoint } : {}),
              signers,
              since,
            }),
          );
          return { exitCode: EXIT.ok, raw: `${JSON.stringify(bundle, null, 2)}\n`, json: bundle };
        },
      ),
    );
}

function registerConsistency(ledger: Command, invocation: Invocation): void {
  ledger
    .command('consistency')
    .description(
      "prove from the ledger's tree that an older checkpoint's log is a prefix of a newer one's; print the proof (JSON)",
    )
    .argument('<old>', 'the older checkpoint file')
    .argument('<new>', 'the newer checkpoint file')
    .option('--db <file>', DB_HELP)
    .option('--public-key <file>', 'Ed25519 public key (SPKI PEM): both checkpoints must be signed by it')
    .action(
      runs(
        invocation,
        async ({ io }, older: string, newer: string, options: DbOption & { publicKey?: string }) => {
          const first = await readCheckpoint(older, io);
          const second = await readCheckpoint(newer, io);
          if (options.publicKey !== undefined) {
            const publicKey = loadPublicKey(await readInputBytes(options.publicKey, io));
            for (const [file, checkpoint] of [
              [older, first],
              [newer, second],
            ] as const) {
              if (!checkpointSignedBy(checkpoint, publicKey)) {
                throw new EnvelopeError(
                  'LEDGER_TAMPERED',
                  `Checkpoint ${file} is not signed by the given public key`,
                  { file },
                );
              }
            }
          }
          const proof = await withLedger(io, options.db, 'read', (store) =>
            proveConsistency(store, first, second),
          );
          return { exitCode: EXIT.ok, raw: `${JSON.stringify(proof, null, 2)}\n`, json: proof };
        },
      ),
    );
}

function registerAdd(ledger: Command, invocation: Invocation): void {
  ledger
    .command('add')
    .description(
      'store a prov.record.v0.1 (or the record in an mcp.envelope.v0.1); creates the ledger if missing',
    )
    .argument('<file>', 'record or envelope file, or - for stdin')
    .option('--db <file>', DB_HELP)
    .option('--tool <name>', 'tool name to file it under (default: the record’s tool.name)')
    .option('--upstream <name>', 'upstream it came from')
    .action(
      runs(
        invocation,
        async ({ io }, file: string, options: DbOption & { tool?: string; upstream?: string }) => {
          const value = await readJsonInputExact(file, io);
          const { entry, inserted } = await withLedger(io, options.db, 'write', (store) =>
            store.insert(value, {
              ...(options.tool === undefined ? {} : { tool: options.tool }),
              ...(options.upstream === undefined ? {} : { upstream: options.upstream }),
            }),
          );
          return {
            exitCode: EXIT.ok,
            human: `${inserted ? 'stored' : 'already stored'}: ${line(entry)}`,
            json: { inserted, entry: summary(entry) },
          };
        },
      ),
    );
}

export const registerLedger: Registrar = (program, invocation) => {
  const ledger = program
    .command('ledger')
    .description(
      'list, show, verify and add provenance records in a ledger database; checkpoint and prove its transparency log; bundle one result for offline verification; serve it to a browser',
    )
    .action(() => {
      throw new EnvelopeError(
        'USAGE_ERROR',
        'ledger needs a command: list, show, verify, add, checkpoint, prove, consistency, bundle or serve',
      );
    });
  registerList(ledger, invocation);
  registerShow(ledger, invocation);
  registerVerify(ledger, invocation);
  registerAdd(ledger, invocation);
  registerCheckpoint(ledger, invocation);
  registerProve(ledger, invocation);
  registerConsistency(ledger, invocation);
  registerBundle(ledger, invocation);
  registerServe(ledger, invocation, DB_HELP, DEFAULT_LEDGER_DB);
};
