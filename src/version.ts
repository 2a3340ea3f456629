import { readFileSync } from 'node:fs';

/**
 * This package's name and version, read once from its package.json (one level
 * above both src/ and dist/), so that no copy of the version can drift.
 */
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
};

export const PACKAGE_NAME: string = manifest.name;
export const PACKAGE_VERSION: string = manifest.version;
