import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { EnvelopeError } from '../../errors/index.ts';
import { DEFINITION_KINDS, type DefinitionKind } from '../../gateway/pinning/definitions.ts';
import { definitionDiff } from '../../gateway/pinning/diff.ts';
import { type Pending, type Pin, PinStore } from '../../gateway/pinning/pin-store.ts';
import { type Invocation, type Registrar, runs } from '../command.ts';
import { type CliIo, EXIT } from '../output.ts';
import { DEFAULT_LEDGER_DB } from './ledger.ts';

interface Filter {
  db?: string;
  upstream?: string;
  tool?: string;
  kind: DefinitionKind;
}

const DB_HELP = `the ledger (or pinning.file) the gateway keeps its pins in (default: ${DEFAULT_LEDGER_DB})`;

const kindOption = () =>
  new Option('--kind <kind>', 'which kind of definition').choices([...DEFINITION_KINDS]).default('tool');

/** `list` and `diff` narrow what they show alike. */
function filtered(command: Command): Command {
  return command
    .option('--db <file>', DB_HELP)
    .option('--upstream <name>', 'only this upstream')
    .option('--tool <name>', 'only definitions of this name')
    .addOption(kindOption());
}

/** The store's filter a command's options say. */
function storeFilter(options: Filter): { kind: DefinitionKind; upstream?: string; name?: string } {
  return {
    kind: options.kind,
    ...(options.upstream === undefined ? {} : { upstream: options.upstream }),
    ...(options.tool === undefined ? {} : { name: options.tool }),
  };
}

/** Opens the pins for one command and always closes them; reading never creates or changes the file. */
async function withPins<T>(
  io: CliIo,
  file: string | undefined,
  mode: 'read' | 'write',
  body: (store: PinStore) => T,
): Promise<T> {
  const store = PinStore.open(
    resolve(io.cwd, file ?? DEFAULT_LEDGER_DB),
    mode === 'read' ? { readOnly: true } : { create: false },
  );
  try {
    return body(store);
  } finally {
    store.close();
  }
}

function parsed(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

/** The pin a pending definition is compared with: its own name's, else the one it took content from or another server's. */
function pinFor(store: PinStore, pending: Pending): Pin | undefined {
  const pins = store.list({ upstream: pending.upstream, kind: pending.kind });
  return (
    pins.find((pin) => pin.server === pending.server && pin.name === pending.name) ??
    pins.find((pin) => pin.server === pending.server && pin.name === pending.renamed_from) ??
    pins.find((pin) => pin.digest === pending.pinned_digest)
  );
}

function describe(pending: Pending): string {
  const why =
    pending.reason === 'renamed'
      ? `new name over the pinned definition of ${pending.renamed_from}`
      : pending.reason === 'server-changed'
        ? `the upstream's server is now named "${pending.server}"`
        : 'changed';
  return `${pending.upstream} ${pending.kind} ${pending.name}: ${why} (seen ${pending.first_seen})\n  pinned  ${pending.pinned_digest ?? 'none'}\n  pending ${pending.digest}`;
}

function registerDiff(tools: Command, invocation: Invocation): void {
  filtered(
    tools
      .command('diff')
      .description('show each pending definition against its pin (exit 1 while any is pending)'),
  ).action(
    runs(invocation, async ({ io }, options: Filter) => {
      const shown = await withPins(io, options.db, 'read', (store) =>
        store.pending(storeFilter(options)).map((pending) => {
          const pin = pinFor(store, pending);
          const changes = definitionDiff(
            pin ? parsed(pin.definition) : undefined,
            parsed(pending.definition),
          );
          return { pending, pin, changes };
        }),
      );
      const human = shown.map(({ pending, changes }) =>
        [
          describe(pending),
          ...changes.flatMap(({ member, lines }) => [`  ${member}:`, ...lines.map((line) => `    ${line}`)]),
        ].join('\n'),
      );
      return {
        exitCode: shown.length === 0 ? EXIT.ok : EXIT.checkFailed,
        human:
          shown.length === 0 ? 'nothing pending: every definition seen matches its pin' : human.join('\n\n'),
        json: {
          pending: shown.map(({ pending, pin, changes }) => ({
            upstream: pending.upstream,
            server: pending.server,
            kind: pending.kind,
            name: pending.name,
            reason: pending.reason,
            renamed_from: pending.renamed_from,
            pinned: pending.pinned_digest,
            digest: pending.digest,
            first_seen: pending.first_seen,
            pinned_definition: pin ? parsed(pin.definition) : null,
            definition: parsed(pending.definition),
            changed_members: changes.map(({ member }) => member),
          })),
        },
      };
    }),
  );
}

function registerAccept(tools: Command, invocation: Invocation): void {
  tools
    .command('accept')
    .description('make a pending definition the pin; a running gateway serves it at its next check')
    .option('--db <file>', DB_HELP)
    .requiredOption('--upstream <name>', 'the configured upstream')
    .requiredOption('--tool <name>', "the definition's name (a resource template's: its URI template)")
    .option('--digest <digest>', 'the pending digest to accept (needed when several are pending)')
    .addOption(kindOption())
    .action(
      runs(
        invocation,
        async ({ io }, options: Filter & { upstream: string; tool: string; digest?: string }) => {
          const accepted = await withPins(io, options.db, 'write', (store) => {
            const pending = store.pending({
              upstream: options.upstream,
              kind: options.kind,
              name: options.tool,
            });
            const wanted =
              options.digest === undefined
                ? pending
                : pending.filter(
                    (each) => each.digest === options.digest || each.digest === `sha256:${options.digest}`,
                  );
            if (wanted.length === 0)
              throw new EnvelopeError(
                'PINS_NOT_FOUND',
                `No pending ${options.kind} ${options.tool} of upstream ${options.upstream}${options.digest === undefined ? '' : ` with digest ${options.digest}`} (mcp-envelope tools diff lists what is pending)`,
                {
                  upstream: options.upstream,
                  name: options.tool,
                  pending: pending.map((each) => each.digest),
                },
              );
            if (wanted.length > 1)
              throw new EnvelopeError(
                'USAGE_ERROR',
                `${wanted.length} definitions of ${options.kind} ${options.tool} are pending: name one with --digest (${wanted.map((each) => each.digest).join(', ')})`,
                { pending: wanted.map((each) => each.digest) },
              );
            const chosen = wanted[0] as Pending;
            store.accept(chosen);
            return chosen;
          });
          return {
            exitCode: EXIT.ok,
            human: `accepted ${accepted.upstream} ${accepted.kind} ${accepted.name} ${accepted.digest}`,
            json: {
              accepted: {
                upstream: accepted.upstream,
                server: accepted.server,
                kind: accepted.kind,
                name: accepted.name,
                digest: accepted.digest,
              },
            },
          };
        },
      ),
    );
}

function registerListPins(tools: Command, invocation: Invocation): void {
  filtered(tools.command('list').description('list the pinned definitions')).action(
    runs(invocation, async ({ io }, options: Filter) => {
      const pins = await withPins(io, options.db, 'read', (store) => store.list(storeFilter(options)));
      return {
        exitCode: EXIT.ok,
        human:
          pins.length === 0
            ? 'no pins'
            : pins
                .map((pin) =>
                  [
                    pin.upstream,
                    pin.server,
                    pin.kind,
                    pin.name,
                    pin.digest,
                    pin.accepted_at ?? pin.pinned_at,
                  ].join('  '),
                )
                .join('\n'),
        json: {
          pins: pins.map((pin) => ({
            upstream: pin.upstream,
            server: pin.server,
            kind: pin.kind,
            name: pin.name,
            digest: pin.digest,
            pinned_at: pin.pinned_at,
            accepted_at: pin.accepted_at,
          })),
        },
      };
    }),
  );
}

export const registerTools: Registrar = (program, invocation) => {
  const tools = program
    .command('tools')
    .description(
      "the gateway's pins of upstream tool definitions: list them, see what changed, accept a change",
    );
  registerListPins(tools, invocation);
  registerDiff(tools, invocation);
  registerAccept(tools, invocation);
};
