/**
 * The keys download ids are signed with. Either given (configuration: the
 * first signs, the others only verify, until the operator removes them) or
 * kept in `<dir>/keys.json`: generated once (32 random bytes), written
 * atomically with mode 0600, rotated on demand. A rotated-out key keeps
 * verifying until every link it signed has expired (retired_at plus the
 * longest link lifetime), then it is pruned and ids it signed are refused.
 *
 * The file is read again when it changes, so a rotation made by the CLI
 * reaches a running gateway without a restart.
 */
import { createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { EnvelopeError } from '../errors/index.ts';
import { type DownloadIdKeys, KEY_ID_PATTERN, type SigningKey } from './download-ids.ts';

/** Shorter secrets are refused: HMAC-SHA256 wants at least its output size. */
export const MIN_SECRET_BYTES = 32;
export const KEYS_FILE = 'keys.json';
/** The longest link lifetime a keyring assumes when none is given: the gateway's default TTL. */
const DEFAULT_MAX_TTL_MS = 3_600_000;

/** A key given by configuration. */
export interface KeySpec {
  id: string;
  /** At least MIN_SECRET_BYTES bytes (a string counts its UTF-8 bytes). */
  secret: Uint8Array | string | KeyObject;
}

export interface FolderKeyringOptions {
  /** The folder holding keys.json (created with the first key). */
  dir: string;
  /** The longest lifetime of a link signed here: how long a retired key keeps verifying. */
  maxTtlMs?: number;
  /** Epoch milliseconds. */
  now?: () => number;
}

/** One key as the keyring knows it; secrets are KeyObjects so they never print. */
export interface KeyringKey {
  id: string;
  key: KeyObject;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds; absent for the current key and for configured keys. */
  retiredAt?: number;
}

/** What a rotation did. */
export interface Rotation {
  current: string;
  retired: string | undefined;
  /** Keys whose links have all expired, dropped by this rotation. */
  pruned: string[];
}

interface StoredKey {
  id: string;
  secret: string;
  created_at: string;
  retired_at?: string;
}

function secretKey(secret: KeySpec['secret'], id: string): KeyObject {
  const key =
    typeof secret === 'string'
      ? createSecretKey(Buffer.from(secret, 'utf8'))
      : secret instanceof Uint8Array
        ? createSecretKey(Buffer.from(secret))
        : secret;
  if (key.type !== 'secret' || (key.symmetricKeySize ?? 0) < MIN_SECRET_BYTES) {
    throw new EnvelopeError(
      'INVALID_ARGUMENT',
      `Download signing key "${id}" must be a secret of at least ${MIN_SECRET_BYTES} bytes`,
      { kid: id },
    );
  }
  return key;
}

function checkId(id: string): void {
  if (!KEY_ID_PATTERN.test(id)) {
    throw new EnvelopeError(
      'INVALID_ARGUMENT',
      `A key id is 1 to 32 of A-Z a-z 0-9 _ -; got ${JSON.stringify(id)}`,
      {
        kid: id,
      },
    );
  }
}

function unavailable(message: string, path: string, cause?: unknown): EnvelopeError {
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new EnvelopeError(
    'ARTIFACT_STORE_UNAVAILABLE',
    message,
    { path, ...(errno ? { errno } : {}) },
    { cause },
  );
}

/** How long a verification may rely on keys.json as last read before looking at it again. */
const RECHECK_MS = 1000;

export class Keyring implements DownloadIdKeys {
  /** How long a retired key keeps verifying. */
  readonly maxTtlMs: number;
  /** keys.json, when the keys live in a folder. */
  readonly file: string | undefined;
  private keys: KeyringKey[];
  private readonly now: () => number;
  /** Identity of the keys.json last read (inode, size, mtime), to notice another process's rotation. */
  private seen = '';

  private constructor(keys: KeyringKey[], file: string | undefined, maxTtlMs: number, now: () => number) {
    this.keys = keys;
    this.file = file;
    this.maxTtlMs = maxTtlMs;
    this.now = now;
  }

  /** Keys from configuration: the first signs, the rest verify only. */
  static fromKeys(specs: readonly KeySpec[], options: { maxTtlMs?: number } = {}): Keyring {
    if (specs.length === 0) throw new EnvelopeError('INVALID_ARGUMENT', 'A keyring needs at least one key');
    const ids = new Set<string>();
    const keys = specs.map((spec) => {
      checkId(spec.id);
      if (ids.has(spec.id)) throw new EnvelopeError('INVALID_ARGUMENT', `Key id "${spec.id}" is used twice`);
      ids.add(spec.id);
      return { id: spec.id, key: secretKey(spec.secret, spec.id), createdAt: 0 };
    });
    return new Keyring(keys, undefined, options.maxTtlMs ?? DEFAULT_MAX_TTL_MS, Date.now);
  }

  /** Keys kept in `<dir>/keys.json`; the first key is generated when something is first signed. */
  static inFolder(options: FolderKeyringOptions): Keyring {
    const keyring = new Keyring(
      [],
      join(options.dir, KEYS_FILE),
      options.maxTtlMs ?? DEFAULT_MAX_TTL_MS,
      options.now ?? Date.now,
    );
    keyring.reloadIfChanged();
    return keyring;
  }

  /** The keys that verify now (the current one first), without their secrets' bytes. */
  list(): readonly Omit<KeyringKey, 'key'>[] {
    this.reloadIfChanged();
    return this.live().map(({ id, createdAt, retiredAt }) => ({
      id,
      createdAt,
      ...(retiredAt === undefined ? {} : { retiredAt }),
    }));
  }

  signingKey(): SigningKey {
    this.reloadIfChanged();
    const current = this.keys.find((key) => key.retiredAt === undefined);
    if (current) return { id: current.id, key: current.key };
    if (this.file === undefined) throw new EnvelopeError('INTERNAL_ERROR', 'The keyring has no signing key');
    // First use of a folder keyring: make its key and keep it. When there was no file, it is
    // created only if still absent, so two gateways sharing the folder cannot each keep a key of their own.
    const created = this.generate();
    const exclusive = this.seen === 'absent';
    this.keys = [created, ...this.keys];
    if (!this.write(exclusive)) {
      this.seen = '';
      this.reloadIfChanged();
      const theirs = this.keys.find((key) => key.retiredAt === undefined);
      if (!theirs) throw unavailable(`Download keys ${this.file} hold no current key`, this.file);
      return { id: theirs.id, key: theirs.key };
    }
    return { id: created.id, key: created.key };
  }

  verifyingKey(kid: string): KeyObject | undefined {
    // A key removed from keys.json stops verifying within a second, even in a gateway that
    // signs nothing meanwhile (the file is looked at, a stat, at most once a second).
    const now = this.now();
    if (now - this.#checkedAt >= RECHECK_MS || now < this.#checkedAt) {
      this.#checkedAt = now;
      this.reloadIfChanged();
    }
    let found = this.live().find((key) => key.id === kid);
    // A key made by another process (the CLI's rotation) since the file was read.
    if (!found && this.reloadIfChanged()) found = this.live().find((key) => key.id === kid);
    return found?.key;
  }

  /** When keys.json was last looked at for a verification. */
  #checkedAt = Number.NEGATIVE_INFINITY;

  /**
   * Makes a new current key; the old one keeps verifying for maxTtlMs, and
   * keys past that are pruned. Only for keys kept in a folder: configured keys
   * are rotated by editing the configuration.
   */
  rotate(): Rotation {
    if (this.file === undefined) {
      throw new EnvelopeError(
        'INVALID_ARGUMENT',
        'Configured download keys are rotated in the configuration: put the new key first and keep the old one after it until its links expire',
      );
    }
    this.reloadIfChanged();
    const now = this.now();
    const before = this.keys.map((key) => key.id);
    const old = this.keys.find((key) => key.retiredAt === undefined);
    if (old) old.retiredAt = now;
    const created = this.generate();
    this.keys = [created, ...this.live()];
    const kept = new Set(this.keys.map((key) => key.id));
    this.write();
    return {
      current: created.id,
      retired: old?.id,
      pruned: before.filter((id) => !kept.has(id)),
    };
  }

  /** Keys still verifying: every configured one; a retired one until its last link expired. */
  private live(): KeyringKey[] {
    const now = this.now();
    return this.keys.filter((key) => key.retiredAt === undefined || key.retiredAt + this.maxTtlMs > now);
  }

  private generate(): KeyringKey {
    let id: string;
    do id = `k${randomBytes(4).toString('hex')}`;
    while (this.keys.some((key) => key.id === id));
    return { id, key: createSecretKey(randomBytes(32)), createdAt: this.now() };
  }

  /** Reads keys.json again when it changed; true when it did. */
  private reloadIfChanged(): boolean {
    const file = this.file;
    if (file === undefined) return false;
    let identity: string;
    try {
      const stat = statSync(file);
      identity = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') identity = 'absent';
      else throw unavailable(`Download keys ${file} cannot be read`, file, error);
    }
    if (identity === this.seen) return false;
    this.keys = identity === 'absent' ? [] : readKeys(file);
    this.seen = identity;
    return true;
  }

  /**
   * Writes keys.json whole, to a temporary name first, so a reader never sees
   * half a file. `exclusive`: only when no keys.json exists yet (false is
   * returned when one does).
   */
  private write(exclusive = false): boolean {
    const file = this.file as string;
    const stored: StoredKey[] = this.keys.map((key) => ({
      id: key.id,
      secret: key.key.export().toString('base64url'),
      created_at: new Date(key.createdAt).toISOString(),
      ...(key.retiredAt === undefined ? {} : { retired_at: new Date(key.retiredAt).toISOString() }),
    }));
    const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      mkdirSync(dirname(file), { recursive: true });
      const fd = openSync(temporary, 'wx', 0o600);
      try {
        writeSync(fd, `${JSON.stringify({ keys: stored }, null, 2)}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      if (exclusive) {
        try {
          linkSync(temporary, file);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
          unlinkSync(temporary);
          return false;
        }
        unlinkSync(temporary);
      } else renameSync(temporary, file);
    } catch (error) {
      try {
        unlinkSync(temporary);
      } catch {
        // Never created, or already renamed.
      }
      throw unavailable(`Download keys cannot be written to ${file}`, file, error);
    }
    const stat = statSync(file);
    this.seen = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    return true;
  }
}

function readKeys(file: string): KeyringKey[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw unavailable(`Download keys ${file} are not readable JSON`, file, error);
  }
  const list = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list)) throw unavailable(`Download keys ${file} hold no "keys" list`, file);
  return list.map((entry: StoredKey, index) => {
    const createdAt = Date.parse(entry?.created_at);
    const retiredAt = entry?.retired_at === undefined ? undefined : Date.parse(entry.retired_at);
    if (
      typeof entry?.id !== 'string' ||
      !KEY_ID_PATTERN.test(entry.id) ||
      typeof entry.secret !== 'string' ||
      Number.isNaN(createdAt) ||
      (retiredAt !== undefined && Number.isNaN(retiredAt))
    ) {
      throw unavailable(`Download keys ${file}: entry ${index} is not a key`, file);
    }
    const bytes = Buffer.from(entry.secret, 'base64url');
    if (bytes.length < MIN_SECRET_BYTES)
      throw unavailable(`Download keys ${file}: key ${entry.id} is too short`, file);
    return {
      id: entry.id,
      key: createSecretKey(bytes),
      createdAt,
      ...(retiredAt === undefined ? {} : { retiredAt }),
    };
  });
}
