import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseJsonBytes } from '../canonical/json-text.ts';
import { EnvelopeError } from '../errors/index.ts';

/**
 * The prov-spec vector layout: a root with one folder per method id (or
 * `method_id_syntax`), each holding any of `input.json` + `expected.json` (the
 * main case), `positive/*.json` and `negative/*.json` (cases carrying
 * `_vector_meta: {id, expect: "pass"|"fail", reason}` beside their payload).
 */

/** The vectors shipped with the package (prov-spec's, plus the ones the spec names but does not ship). */
export const BUNDLED_VECTORS_DIR = fileURLToPath(new URL('../../vectors/', import.meta.url));

export interface VectorCase {
  /** `<folder>` for the main case, `<folder>/<positive|negative>/<name>` otherwise. */
  id: string;
  folder: string;
  kind: 'main' | 'positive' | 'negative';
  expect: 'pass' | 'fail';
  reason?: string;
  /** For the main case: the input and expected documents. */
  input?: unknown;
  expected?: unknown;
  /** For positive/negative cases: the document minus `_vector_meta`. */
  payload?: Record<string, unknown>;
  /** Set when the case file itself is unusable (unreadable, not JSON, bad meta). */
  loadError?: string;
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function readJson(path: string): Promise<unknown> {
  return parseJsonBytes(await readFile(path));
}

/** Folder names under a vectors root that hold at least one case, sorted. */
export async function listVectorFolders(root: string): Promise<string[]> {
  if (!(await isDir(root))) {
    throw new EnvelopeError('INPUT_UNREADABLE', `Vectors folder ${root} does not exist or is not a folder`, {
      path: root,
    });
  }
  const entries = await readdir(root, { withFileTypes: true });
  const folders: string[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const dir = join(root, entry.name);
    if (
      (await isFile(join(dir, 'input.json'))) ||
      (await isDir(join(dir, 'positive'))) ||
      (await isDir(join(dir, 'negative')))
    ) {
      folders.push(entry.name);
    }
  }
  return folders.sort();
}

async function loadCaseFile(
  folder: string,
  kind: 'positive' | 'negative',
  path: string,
  name: string,
): Promise<VectorCase> {
  const id = `${folder}/${kind}/${name.replace(/\.json$/, '')}`;
  const fallback: VectorCase = { id, folder, kind, expect: kind === 'positive' ? 'pass' : 'fail' };
  let document: unknown;
  try {
    document = await readJson(path);
  } catch (error) {
    return { ...fallback, loadError: (error as Error).message };
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return { ...fallback, loadError: 'case file is not a JSON object' };
  }
  const { _vector_meta: meta, ...payload } = document as Record<string, unknown>;
  const vectorMeta = (typeof meta === 'object' && meta !== null ? meta : {}) as Record<string, unknown>;
  const expect = vectorMeta.expect ?? fallback.expect;
  if (expect !== 'pass' && expect !== 'fail') {
    return {
      ...fallback,
      loadError: `_vector_meta.expect must be "pass" or "fail", got ${JSON.stringify(expect)}`,
    };
  }
  // A case filed under negative/ that says it should pass (or the reverse) is a broken vector.
  if ((kind === 'negative' && expect === 'pass') || (kind === 'positive' && expect === 'fail')) {
    return { ...fallback, loadError: `case under ${kind}/ declares expect "${expect}"` };
  }
  const result: VectorCase = {
    id: typeof vectorMeta.id === 'string' ? vectorMeta.id : id,
    folder,
    kind,
    expect,
    payload,
  };
  if (typeof vectorMeta.reason === 'string') result.reason = vectorMeta.reason;
  return result;
}

/** Every case of one vector folder: the main case first, then positive and negative cases by name. */
export async function loadVectorFolder(root: string, folder: string): Promise<VectorCase[]> {
  const dir = join(root, folder);
  if (folder.includes('/') || folder.includes('\\') || folder === '..' || !(await isDir(dir))) {
    throw new EnvelopeError('VECTOR_NOT_FOUND', `No test vector "${folder}" under ${root}`, {
      vector: folder,
    });
  }
  const cases: VectorCase[] = [];
  const inputPath = join(dir, 'input.json');
  const expectedPath = join(dir, 'expected.json');
  if ((await isFile(inputPath)) || (await isFile(expectedPath))) {
    const main: VectorCase = { id: folder, folder, kind: 'main', expect: 'pass' };
    try {
      main.input = await readJson(inputPath);
      main.expected = await readJson(expectedPath);
    } catch (error) {
      main.loadError = `input.json and expected.json must both be readable JSON: ${(error as Error).message}`;
    }
    cases.push(main);
  }
  for (const kind of ['positive', 'negative'] as const) {
    const sub = join(dir, kind);
    if (!(await isDir(sub))) continue;
    const names = (await readdir(sub)).filter((name) => name.endsWith('.json')).sort();
    for (const name of names) cases.push(await loadCaseFile(folder, kind, join(sub, name), name));
  }
  if (cases.length === 0) {
    throw new EnvelopeError('VECTOR_NOT_FOUND', `Vector folder "${folder}" holds no cases`, {
      vector: folder,
    });
  }
  return cases;
}
