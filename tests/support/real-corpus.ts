import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The corpus of tool results captured from real MCP servers
 * (tests/fixtures/real/<server>/, each folder's README names the source).
 */

export interface RealCase {
  /** `<folder>/<file>` without `.json`: unique, and a valid tool name once sanitised. */
  id: string;
  server: string;
  source: Record<string, unknown>;
  request: { name: string; arguments?: Record<string, unknown> };
  result: {
    content: unknown[];
    structuredContent?: Record<string, unknown>;
    isError?: boolean;
    _meta?: Record<string, unknown>;
  };
  expect: {
    dialect: string;
    version: string | null;
    ok: boolean;
    code: string | null;
    retriable: boolean | null;
    reset_at?: string | null;
  };
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'real');

/** Every captured tools/call result (tools/list captures and JSON-RPC errors are left out). */
export function realCases(): RealCase[] {
  const cases: RealCase[] = [];
  for (const server of readdirSync(ROOT, { withFileTypes: true })) {
    if (!server.isDirectory()) continue;
    for (const file of readdirSync(join(ROOT, server.name)).sort()) {
      if (!file.endsWith('.json')) continue;
      const path = join(ROOT, server.name, file);
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<RealCase>;
      if (!parsed.expect || !parsed.result || !parsed.request) continue;
      cases.push({
        ...(parsed as RealCase),
        id: relative(ROOT, path).replace(/\.json$/, ''),
        server: server.name,
      });
    }
  }
  return cases;
}

/** The payload a client would take from a result: structuredContent, else the one text block. */
export function payloadText(result: RealCase['result']): string {
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  const [block] = result.content as { type: string; text?: string }[];
  return block?.text ?? '';
}
