import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EnvelopeError } from '../errors/index.ts';

/**
 * Secrets a configuration reads from the environment (`tokenEnv`, `keyEnv`,
 * `headersFromEnv`, `envFromEnv`, `clientSecretEnv`) must not stay where an upstream can read
 * them. Removing them from `process.env` is not enough on Linux:
 * `/proc/<pid>/environ` shows the environment the process was started with,
 * and any process of the same user (an upstream, a tool it runs) may read it.
 * So the gateway replaces itself (execve: same pid, same stdio, same
 * arguments) with an environment without them, and hands the values over in
 * a file only its user can read, in a folder only its user can enter, which
 * the new image reads and deletes before anything else starts.
 */

/** The variable that names the hand-over file in the replaced process; it holds a path, never a secret. */
export const HANDOVER_VARIABLE = 'MCP_ENVELOPE_SECRETS_FILE';

/** An environment that notes every variable read from it, by name. */
export function noting(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; read: Set<string> } {
  const read = new Set<string>();
  const proxy = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return Reflect.get(target, name);
    },
  });
  return { env: proxy, read };
}

/**
 * The secrets the process this one replaced handed over, removed as they are
 * taken: the file and its folder deleted, the variable unset. Empty when
 * nothing was handed over.
 */
export function takeHandedOver(env: NodeJS.ProcessEnv): Record<string, string> {
  const file = env[HANDOVER_VARIABLE];
  if (file === undefined) return {};
  delete env[HANDOVER_VARIABLE];
  try {
    const secrets = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    return secrets;
  } catch (error) {
    throw new EnvelopeError(
      'CONFIG_INVALID',
      `The secrets handed over at start could not be read from ${file}: ${(error as Error).message}`,
    );
  } finally {
    rmSync(dirname(file), { recursive: true, force: true });
  }
}

/**
 * Replaces this process with itself, its environment without `names` (their
 * values handed over in a private file). Returns false, changing nothing,
 * where a process cannot replace itself (Windows, a Node without
 * process.execve).
 */
export function replaceWithout(names: readonly string[], env: NodeJS.ProcessEnv): boolean {
  if (process.platform === 'win32' || typeof process.execve !== 'function') return false;
  const secrets: Record<string, string> = {};
  const rest: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (names.includes(name)) secrets[name] = value;
    else rest[name] = value;
  }
  const folder = mkdtempSync(join(tmpdir(), 'mcp-envelope-secrets-'));
  const file = join(folder, 'secrets.json');
  writeFileSync(file, JSON.stringify(secrets), { mode: 0o600, flag: 'wx' });
  rest[HANDOVER_VARIABLE] = file;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], rest);
  return true;
}
