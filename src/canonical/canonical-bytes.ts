/**
 * The canonical form as a Node Buffer, apart from canonicalize.ts so that
 * module stays free of Node globals: the ledger's record page runs it in the
 * browser (src/ledger/web/browser).
 */
import { canonicalize } from './canonicalize.ts';
import type { JsonValue } from './json-value.ts';

/** The canonical form as UTF-8 bytes. */
export function canonicalBytes(value: JsonValue | unknown): Buffer {
  return Buffer.from(canonicalize(value), 'utf8');
}
