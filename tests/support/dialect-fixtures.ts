import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DIALECT_FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'dialects');

/** Parsed fixture files whose names start with `prefix` (e.g. "scalpel-v1."). */
export function fixtures(prefix: string): { name: string; value: unknown }[] {
  return readdirSync(DIALECT_FIXTURES)
    .filter((name) => name.startsWith(prefix) && name.endsWith('.json'))
    .sort()
    .map((name) => ({ name, value: JSON.parse(readFileSync(join(DIALECT_FIXTURES, name), 'utf8')) }));
}
