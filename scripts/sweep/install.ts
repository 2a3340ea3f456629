/**
 * Installs each server of the sweep at its pinned version into its own folder
 * of the scratch directory (`npm install --prefix <scratch>/<name> pkg@version`),
 * skipping those already there at that version. Nothing lands in the repository.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerSpec } from './servers.ts';

export function packageDir(prefix: string, spec: ServerSpec): string {
  return join(prefix, 'node_modules', ...spec.package.split('/'));
}

export function installedVersion(prefix: string, spec: ServerSpec): string | null {
  const file = join(packageDir(prefix, spec), 'package.json');
  if (!existsSync(file)) return null;
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

/** Installs one server unless present; resolves to what was done. Bounded to 5 minutes. */
export function install(prefix: string, spec: ServerSpec): Promise<'present' | 'installed'> {
  if (installedVersion(prefix, spec) === spec.version) return Promise.resolve('present');
  mkdirSync(prefix, { recursive: true });
  const args = [
    'install',
    '--prefix',
    prefix,
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    `${spec.package}@${spec.version}`,
  ];
  return new Promise((resolve, reject) => {
    execFile('npm', args, { timeout: 300_000, maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => {
      if (error)
        reject(new Error(`npm install ${spec.package}@${spec.version} failed: ${stderr || error.message}`));
      else if (installedVersion(prefix, spec) !== spec.version) {
        reject(new Error(`npm install ${spec.package}@${spec.version} left another version in ${prefix}`));
      } else resolve('installed');
    });
  });
}
