/**
 * Where definition pins are kept: the tables of `definitionPinsMigration` in
 * an SQLite file (the ledger's, or a pins file of their own when the ledger
 * is off), or in memory when neither is configured (pins then last as long
 * as the gateway). The gateway and the `tools` CLI each open their own
 * connection; the CLI's acceptance bumps a counter that the gateway checks
 * (behind SQLite's own `data_version`, which moves only when another
 * connection wrote) before it trusts the pins it holds.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { EnvelopeError } from '../../errors/index.ts';
import { definitionPinsMigration } from '../../ledger/migrations.ts';
import { type DefinitionDigests, type DefinitionKind, digestsOf } from './definitions.ts';

export interface Pin {
  upstream: string;
  server: string;
  kind: DefinitionKind;
  name: string;
  digest: string;
  content_digest: string;
  shape_digest: string;
  definition: string;
  pinned_at: string;
  accepted_at: string | null;
}

/** Why a definition differs from what was pinned. */
export type ChangeReason = 'changed' | 'renamed' | 'server-changed';

export interface Pending {
  upstream: string;
  server: string;
  kind: DefinitionKind;
  name: string;
  digest: string;
  pinned_digest: string | null;
  reason: ChangeReason;
  renamed_from: string | null;
  definition: string;
  first_seen: string;
}

/** Who a definition belongs to: the configured upstream and the server name it gave at initialize. */
export interface Owner {
  upstream: string;
  server: string;
}

const SQLITE_BUSY_MS = 5_000;

export function pinKey(upstream: string, server: string, kind: DefinitionKind, name: string): string {
  return `${upstream}\u0000${server}\u0000${kind}\u0000${name}`;
}

/** Which pins or pending definitions to read: by upstream, kind and name, each when given. */
export interface PinFilter {
  upstream?: string;
  kind?: DefinitionKind;
  name?: string;
}

export class PinStore {
  readonly path: string | undefined;
  readonly #db: DatabaseSync;
  readonly #now: () => Date;
  readonly #dataVersion: StatementSync;
  readonly #version: StatementSync;
  #seenDataVersion = -1;
  #seenVersion = -1;
  /** The pins as last read, by `pinKey`; and by upstream, kind and name across servers. */
  #pins = new Map<string, Pin>();

  private constructor(db: DatabaseSync, path: string | undefined, now: () => Date) {
    this.#db = db;
    this.path = path;
    this.#now = now;
    this.#dataVersion = db.prepare('PRAGMA data_version');
    this.#version = db.prepare('SELECT version FROM definition_pin_state WHERE id = 1');
  }

  /**
   * Opens the pins at `path` (its tables made when missing), or in memory.
   * `create: false` (the CLI): the file must exist and hold pins already;
   * `readOnly` (the CLI's reading commands) implies it and writes nothing.
   */
  static open(
    path: string | undefined,
    options: { readOnly?: boolean; create?: boolean; now?: () => Date } = {},
  ): PinStore {
    const now = options.now ?? (() => new Date());
    if (path === undefined) return PinStore.#init(new DatabaseSync(':memory:'), undefined, now);
    const create = !options.readOnly && (options.create ?? true);
    if (!create && !existsSync(path))
      throw new EnvelopeError('PINS_NOT_FOUND', `No pins file at ${path}`, { path });
    if (create) mkdirSync(dirname(path), { recursive: true });
    let db: DatabaseSync;
    try {
      db = new DatabaseSync(path, { readOnly: options.readOnly ?? false, timeout: SQLITE_BUSY_MS });
      if (!create) {
        const has = db
          .prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name = 'definition_pin_state'")
          .get() as { n: number };
        if (Number(has.n) === 0) {
          db.close();
          throw new EnvelopeError(
            'PINS_NOT_FOUND',
            `${path} holds no definition pins (no gateway with pinning on has written to it)`,
            { path },
          );
        }
      }
    } catch (error) {
      if (error instanceof EnvelopeError) throw error;
      throw new EnvelopeError('PINS_NOT_FOUND', `Cannot read pins at ${path}: ${(error as Error).message}`, {
        path,
      });
    }
    return options.readOnly ? new PinStore(db, path, now) : PinStore.#init(db, path, now);
  }

  static #init(db: DatabaseSync, path: string | undefined, now: () => Date): PinStore {
    if (path !== undefined) db.exec('PRAGMA journal_mode = WAL');
    db.exec(definitionPinsMigration());
    return new PinStore(db, path, now);
  }

  close(): void {
    this.#db.close();
  }

  /**
   * The pin counter as another process may have moved it: read only when
   * SQLite says some other connection wrote to the file since the last look.
   */
  get version(): number {
    const data = Number((this.#dataVersion.get() as { data_version: number }).data_version);
    if (data !== this.#seenDataVersion) {
      this.#seenDataVersion = data;
      const version = Number((this.#version.get() as { version: number }).version);
      if (version !== this.#seenVersion) {
        this.#seenVersion = version;
        this.#reload();
      }
    }
    return this.#seenVersion;
  }

  #reload(): void {
    const pins = new Map<string, Pin>();
    for (const row of this.#db.prepare('SELECT * FROM definition_pins').iterate()) {
      const pin = row as unknown as Pin;
      pins.set(pinKey(pin.upstream, pin.server, pin.kind, pin.name), pin);
    }
    this.#pins = pins;
  }

  #bump(): void {
    this.#db.prepare('UPDATE definition_pin_state SET version = version + 1 WHERE id = 1').run();
    // Our own write: what we hold is current.
    this.#seenVersion = Number((this.#version.get() as { version: number }).version);
    this.#seenDataVersion = Number((this.#dataVersion.get() as { data_version: number }).data_version);
  }

  /** The pin of one definition, as of the last `version` check. */
  pin(owner: Owner, kind: DefinitionKind, name: string): Pin | undefined {
    return this.#pins.get(pinKey(owner.upstream, owner.server, kind, name));
  }

  /** Every pin of an upstream (any server) of one kind, as of the last `version` check. */
  pinsOf(upstream: string, kind: DefinitionKind): Pin[] {
    return [...this.#pins.values()].filter((pin) => pin.upstream === upstream && pin.kind === kind);
  }

  /** Pins definitions seen for the first time (one transaction). */
  pinFirstSeen(owner: Owner, kind: DefinitionKind, seen: readonly DefinitionDigests[]): void {
    if (seen.length === 0) return;
    const at = this.#now().toISOString();
    const insert = this.#db.prepare(
      `INSERT OR IGNORE INTO definition_pins
         (upstream, server, kind, name, digest, content_digest, shape_digest, definition, pinned_at, accepted_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
    );
    this.#transaction(() => {
      for (const item of seen)
        insert.run(
          owner.upstream,
          owner.server,
          kind,
          item.name,
          item.digest,
          item.content,
          item.shape,
          JSON.stringify(item.definition),
          at,
        );
      this.#bump();
    });
    this.#reload();
  }

  /** Notes a definition that differs from its pin; true when it was not noted before (a new change). */
  notePending(
    owner: Owner,
    kind: DefinitionKind,
    item: DefinitionDigests,
    change: { reason: ChangeReason; pinned: string | null; renamedFrom?: string },
  ): boolean {
    const result = this.#db
      .prepare(
        `INSERT OR IGNORE INTO definition_pending
           (upstream, server, kind, name, digest, pinned_digest, reason, renamed_from, definition, first_seen)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        owner.upstream,
        owner.server,
        kind,
        item.name,
        item.digest,
        change.pinned,
        change.reason,
        change.renamedFrom ?? null,
        JSON.stringify(item.definition),
        this.#now().toISOString(),
      );
    return Number(result.changes) > 0;
  }

  /** Forgets what was pending for one definition: its upstream serves the pinned one again. */
  clearPending(owner: Owner, kind: DefinitionKind, name: string): void {
    this.#db
      .prepare('DELETE FROM definition_pending WHERE upstream = ? AND server = ? AND kind = ? AND name = ?')
      .run(owner.upstream, owner.server, kind, name);
  }

  /** Definitions waiting for an operator, oldest first; filtered by upstream, kind and name when given. */
  pending(filter: PinFilter = {}): Pending[] {
    return this.#filtered(
      'definition_pending',
      'first_seen, upstream, kind, name',
      filter,
    ) as unknown as Pending[];
  }

  /** Every pin, filtered like `pending`, read from the file (the CLI's view). */
  list(filter: PinFilter = {}): Pin[] {
    return this.#filtered('definition_pins', 'upstream, kind, name, server', filter) as unknown as Pin[];
  }

  /** The rows of one of the pin tables that match the filter, in the order given. */
  #filtered(table: 'definition_pins' | 'definition_pending', order: string, filter: PinFilter): unknown[] {
    return this.#db
      .prepare(
        `SELECT * FROM ${table}
          WHERE (:upstream IS NULL OR upstream = :upstream)
            AND (:kind IS NULL OR kind = :kind)
            AND (:name IS NULL OR name = :name)
          ORDER BY ${order}`,
      )
      .all({ upstream: filter.upstream ?? null, kind: filter.kind ?? null, name: filter.name ?? null });
  }

  /**
   * Makes a pending definition the pin (replacing the one before) and forgets
   * the other pending versions of that name. The gateway sees it at its next check.
   */
  accept(pending: Pending): void {
    const at = this.#now().toISOString();
    const digests = digestsOf(pending.kind, JSON.parse(pending.definition) as Record<string, unknown>);
    if (!digests)
      throw new EnvelopeError('PINS_NOT_FOUND', `The pending ${pending.kind} ${pending.name} has no name`);
    this.#transaction(() => {
      this.#db
        .prepare(
          `INSERT INTO definition_pins
             (upstream, server, kind, name, digest, content_digest, shape_digest, definition, pinned_at, accepted_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (upstream, server, kind, name) DO UPDATE SET
             digest = excluded.digest, content_digest = excluded.content_digest,
             shape_digest = excluded.shape_digest, definition = excluded.definition,
             pinned_at = excluded.pinned_at, accepted_at = excluded.accepted_at`,
        )
        .run(
          pending.upstream,
          pending.server,
          pending.kind,
          pending.name,
          pending.digest,
          digests.content,
          digests.shape,
          pending.definition,
          at,
          at,
        );
      this.#db
        .prepare('DELETE FROM definition_pending WHERE upstream = ? AND server = ? AND kind = ? AND name = ?')
        .run(pending.upstream, pending.server, pending.kind, pending.name);
      this.#bump();
    });
    this.#reload();
  }

  #transaction(body: () => void): void {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      body();
      this.#db.exec('COMMIT');
    } catch (error) {
      this.#db.exec('ROLLBACK');
      throw error;
    }
  }
}
