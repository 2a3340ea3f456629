import { lstat, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { openRegularFile } from '../canonical/digest.ts';
import { EnvelopeError } from '../errors/index.ts';
import type { Artifact } from './record.ts';

/**
 * Reads artifact content from one folder an auditor supplies, and from nowhere
 * else: locators are confined to the folder (no `..`, no link that resolves
 * outside it), and non-file locators (URLs) are never fetched.
 *
 * Where content is looked for, in order:
 * 1. a `file:` locator or a bare path, taken relative to the folder (an
 *    absolute path is re-rooted at the folder: `file:/tmp/x.json` → `<folder>/tmp/x.json`);
 * 2. the locator's file name directly in the folder;
 * 3. a file named exactly as the artifact id, when the id is a plain file name;
 * 4. for an artifact with a sha256 digest, `blobs/<2 hex>/<sha256>`: where the
 *    gateway's artifact store (its `artifacts.dir`) keeps bytes, so that folder
 *    can be given as it is.
 */

export const MAX_ARTIFACT_BYTES = 512 * 1024 * 1024;

export type ArtifactLookup =
  | { found: true; path: string; size: number }
  | { found: false; reason: string }
  | { found: false; unsafe: true; reason: string };

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
const PLAIN_FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._@+=-]*$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

function locatorPath(locator: string): { path: string } | { unsupported: string } | { unsafe: string } {
  let path = locator;
  const scheme = SCHEME.exec(locator)?.[1]?.toLowerCase();
  if (scheme !== undefined && !(scheme.length === 1 && /^[a-z]$/.test(scheme))) {
    if (scheme !== 'file')
      return { unsupported: `locator scheme "${scheme}:" is not read (no network access)` };
    path = locator.slice('file:'.length);
    if (path.startsWith('//')) {
      // file://host/path: only an empty host or localhost is local.
      const slash = path.indexOf('/', 2);
      const host = path.slice(2, slash < 0 ? undefined : slash);
      if (host !== '' && host !== 'localhost') return { unsupported: `file locator names host "${host}"` };
      path = slash < 0 ? '/' : path.slice(slash);
    }
    try {
      path = decodeURIComponent(path);
    } catch {
      return { unsafe: 'locator has malformed percent-encoding' };
    }
  }
  if (path.includes('\0')) return { unsafe: 'locator contains a NUL byte' };
  const segments = path.split(/[\\/]+/);
  if (segments.includes('..')) return { unsafe: `locator "${locator}" contains a ".." segment` };
  return { path };
}

export class ArtifactFolder {
  readonly root: string;
  private resolvedRoot: string | undefined;

  constructor(root: string) {
    this.root = root;
  }

  private async realRoot(): Promise<string> {
    if (this.resolvedRoot === undefined) {
      try {
        this.resolvedRoot = await realpath(this.root);
      } catch (error) {
        throw new EnvelopeError(
          'INPUT_UNREADABLE',
          `Cannot read the artifacts folder ${this.root}`,
          undefined,
          {
            cause: error,
          },
        );
      }
    }
    return this.resolvedRoot;
  }

  /** A path inside the root when `candidate` exists and resolves (links included) inside it. */
  private async confined(candidate: string): Promise<ArtifactLookup | undefined> {
    const root = await this.realRoot();
    let real: string;
    try {
      await lstat(candidate);
      real = await realpath(candidate);
    } catch {
      return undefined;
    }
    const inside = relative(root, real);
    if (inside === '' || inside.startsWith(`..${sep}`) || inside === '..' || isAbsolute(inside)) {
      return { found: false, unsafe: true, reason: `${candidate} resolves outside the artifacts folder` };
    }
    let opened: Awaited<ReturnType<typeof openRegularFile>>;
    try {
      // Never a plain open: on a named pipe it waits for a writer, and verify with it, forever.
      opened = await openRegularFile(real);
    } catch (error) {
      const reason = error instanceof EnvelopeError ? error.message : String(error);
      return { found: false, reason };
    }
    await opened.handle.close();
    if (opened.size > MAX_ARTIFACT_BYTES) {
      return { found: false, reason: `${candidate} is larger than ${MAX_ARTIFACT_BYTES} bytes` };
    }
    return { found: true, path: real, size: opened.size };
  }

  /** Finds an artifact's content file, or says why it is not obtainable (or unsafe). */
  async locate(artifact: Pick<Artifact, 'artifact_id' | 'locator' | 'digest'>): Promise<ArtifactLookup> {
    const root = await this.realRoot();
    const candidates: string[] = [];
    if (artifact.locator !== undefined) {
      const parsed = locatorPath(artifact.locator);
      if ('unsafe' in parsed) return { found: false, unsafe: true, reason: parsed.unsafe };
      if ('unsupported' in parsed) return { found: false, reason: parsed.unsupported };
      const relativePath = parsed.path.replace(/^[/\\]+/, '');
      if (relativePath !== '') candidates.push(join(root, relativePath));
      const base = relativePath.split(/[\\/]/).pop();
      if (base && base !== relativePath) candidates.push(join(root, base));
    }
    if (PLAIN_FILE_NAME.test(artifact.artifact_id)) candidates.push(join(root, artifact.artifact_id));
    // The store's layout (src/artifacts/folder-store.ts); the digest is checked against the bytes all the same.
    const digest = artifact.digest;
    if (digest?.alg === 'sha256' && SHA256_HEX.test(digest.value)) {
      candidates.push(join(root, 'blobs', digest.value.slice(0, 2), digest.value));
    }
    for (const candidate of candidates) {
      const found = await this.confined(candidate);
      if (found) return found;
    }
    return {
      found: false,
      reason:
        candidates.length === 0
          ? 'artifact has no locator and its id is not a plain file name'
          : `not found in the artifacts folder (looked for ${candidates.map((c) => relative(root, c)).join(', ')})`,
    };
  }
}
