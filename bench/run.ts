/** Runs every bench/*.bench.ts in name order (`npm run bench`). */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const files = readdirSync(import.meta.dirname)
  .filter((name) => name.endsWith('.bench.ts'))
  .sort();
for (const name of files) {
  console.log(`\n== ${name} ==`);
  await import(pathToFileURL(join(import.meta.dirname, name)).href);
}
