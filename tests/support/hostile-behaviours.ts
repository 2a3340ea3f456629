import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { HOSTILE_SECRETS } from './hostile-secrets.ts';

/**
 * The misbehaviours of tests/fixtures/servers/hostile.ts, each with what a
 * passthrough gateway must answer: the text of a result, or the canonical code
 * of a JSON-RPC error. Shared by the example tests and the property tests.
 */

export const HOSTILE = fileURLToPath(new URL('../fixtures/servers/hostile.ts', import.meta.url));

export interface Misbehaviour {
  tool: string;
  args: Record<string, unknown>;
  /** The result's first text, or the error's canonical code. */
  expect: { text: string } | { code: string };
}

export const MISBEHAVIOURS = {
  hang: { tool: 'hang', args: {}, expect: { code: 'TIMEOUT' } },
  flood: { tool: 'flood', args: { count: 500, size: 512 }, expect: { text: 'flooded 500' } },
  huge: { tool: 'huge', args: { mb: 3 }, expect: { text: 'h'.repeat(3 * 1024 * 1024) } },
  // structuredContent/d sits two levels under the result: 998 arrays reach the 1,000 limit.
  deepAtLimit: { tool: 'deep', args: { levels: 998 }, expect: { text: '' } },
  deepPastLimit: { tool: 'deep', args: { levels: 1_500 }, expect: { code: 'ADAPTER.EXECUTION.FAILED' } },
  garbage: { tool: 'garbage', args: {}, expect: { text: 'after garbage' } },
  nonUtf8: { tool: 'non_utf8', args: {}, expect: { code: 'ADAPTER.EXECUTION.FAILED' } },
  unknownId: { tool: 'unknown_id', args: {}, expect: { text: 'mine' } },
  twice: { tool: 'twice', args: {}, expect: { text: 'first' } },
  redos: { tool: 'redos', args: { text: `${'a'.repeat(40)}!` }, expect: { text: 'matched' } },
  crash: { tool: 'crash', args: { code: 3 }, expect: { code: 'ADAPTER.EXECUTION.FAILED' } },
} satisfies Record<string, Misbehaviour>;

interface Answer {
  result?: unknown;
  error?: { data?: unknown };
}

/** What the one answer a misbehaving call got must be, and that nothing secret is in it. */
export function expectOutcome(behaviour: Misbehaviour, answers: readonly Answer[], raw: string): void {
  const context = `${behaviour.tool}: ${raw.slice(0, 400)}`;
  expect(answers, context).toHaveLength(1);
  const [answer] = answers as [Answer];
  for (const secret of HOSTILE_SECRETS) expect(raw, context).not.toContain(secret);
  if ('code' in behaviour.expect) {
    expect((answer.error?.data as { canonical_code?: unknown } | undefined)?.canonical_code, context).toBe(
      behaviour.expect.code,
    );
    return;
  }
  expect(answer.error, context).toBeUndefined();
  const content = (answer.result as { content?: { text?: string }[] } | undefined)?.content;
  expect(content?.[0]?.text ?? '', behaviour.tool).toBe(behaviour.expect.text);
}
