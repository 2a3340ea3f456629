/**
 * A readable difference between a pinned definition and the one seen since:
 * per member that changed, the lines of its pretty-printed JSON, kept (`  `),
 * removed (`- `) or added (`+ `).
 */
import { canonicalize } from '../../canonical/index.ts';

function same(a: unknown, b: unknown): boolean {
  try {
    return canonicalize(a) === canonicalize(b);
  } catch {
    return JSON.stringify(a) === JSON.stringify(b);
  }
}

function linesOf(value: unknown): string[] {
  return value === undefined ? [] : (JSON.stringify(value, null, 2) ?? 'undefined').split('\n');
}

/** The lines of `before` and `after`, aligned on their longest common subsequence. */
export function lineDiff(before: readonly string[], after: readonly string[]): string[] {
  const n = before.length;
  const m = after.length;
  // lengths[i][j]: the longest common subsequence of before[i..] and after[j..].
  const lengths = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      (lengths[i] as number[])[j] =
        before[i] === after[j]
          ? ((lengths[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lengths[i + 1] as number[])[j] as number, (lengths[i] as number[])[j + 1] as number);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && before[i] === after[j]) {
      out.push(`  ${before[i]}`);
      i++;
      j++;
    } else if (
      i < n &&
      (j === m || ((lengths[i + 1] as number[])[j] as number) >= ((lengths[i] as number[])[j + 1] as number))
    ) {
      // Removals before additions, as diff(1) shows them.
      out.push(`- ${before[i]}`);
      i++;
    } else {
      out.push(`+ ${after[j]}`);
      j++;
    }
  }
  return out;
}

/** The members of the two definitions that differ, each with its line diff, in member order. */
export function definitionDiff(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown>,
): { member: string; lines: string[] }[] {
  const old = before ?? {};
  const members = [...new Set([...Object.keys(old), ...Object.keys(after)])].sort();
  return members
    .filter((member) => !same(old[member], after[member]))
    .map((member) => ({ member, lines: lineDiff(linesOf(old[member]), linesOf(after[member])) }));
}
