import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { EnvelopeError } from '../../errors/index.ts';
import { CONFIG_DEFAULTS } from '../../gateway/operations/config.ts';
import { Ledger, type LedgerEntry, verifyLedger } from '../../ledger/index.ts';
import { ledgerVerdictLine } from '../../ledger/verify.ts';
import { loadPublicKey } from '../../provenance/index.ts';
import { type Invocation, type Registrar, runs } from '../command.ts';
import { readInputBytes, readJsonInputExact } from '../input.ts';
import { type CliIo, EXIT } from '../output.ts';

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
        return {
          exitCode: EXIT.ok,
          human: full.map((entry) => JSON.stringify(entry, null, 2)).join('\n'),
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

What it does not prove: unless the gateway signs its records (its \`signing\`
setting) and --public-key is given, a rewrite that keeps each row consistent
(record and digest recomputed) passes; with both, it fails. Records are not
chained, so deleted rows, and changed tool, upstream or created_at columns (no
digest covers them), pass either way. The file is opened read-only and never
changed.`;

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
      'Ed25519 public key (SPKI PEM): every record must carry a signature it verifies',
    )
    .action(
      runs(
        invocation,
        async (
          { io },
          key: string | undefined,
          options: DbOption & { artifacts?: string; artifactsDir?: string; publicKey?: string },
        ) => {
          const artifacts = options.artifacts ?? options.artifactsDir;
          const publicKey =
            options.publicKey === undefined
              ? undefined
              : loadPublicKey(await readInputBytes(options.publicKey, io));
          const report = await withLedger(io, options.db, 'read', (store) =>
            verifyLedger(store, key, {
              ...(artifacts === undefined ? {} : { artifactsDir: resolve(io.cwd, artifacts) }),
              ...(publicKey ? { publicKey } : {}),
            }),
          );
          const lines = report.entries.map((entry) => {
            const failed = entry.checks.filter((check) => check.status === 'fail');
            // Says what was checked: a record without digests is "nothing to verify", not "verified".
            const verdict = entry.coverage.verdict.replaceAll('_', ' ');
            const head = `${entry.ok ? 'ok  ' : 'FAIL'} ${String(entry.seq).padStart(5)} ${entry.run_id} ${entry.tool} (${verdict})`;
            return [head, ...failed.map((check) => `       ${check.check}: ${check.message}`)].join('\n');
          });
          lines.push(ledgerVerdictLine(report));
          return { exitCode: report.ok ? EXIT.ok : EXIT.checkFailed, human: lines.join('\n'), json: report };
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
    .description('list, show, verify and add provenance records in a ledger database')
    .action(() => {
      throw new EnvelopeError('USAGE_ERROR', 'ledger needs a command: list, show, verify or add');
    });
  registerList(ledger, invocation);
  registerShow(ledger, invocation);
  registerVerify(ledger, invocation);
  registerAdd(ledger, invocation);
};
