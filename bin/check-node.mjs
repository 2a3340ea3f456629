// Which Node.js versions mcp-envelope runs on. The one source is package.json's
// engines.node; the launcher (bin/mcp-envelope) checks it before loading the
// CLI, and `npm test` / `npm start` run this file first (`node bin/check-node.mjs`),
// so an unsupported Node stops at once with one line naming both versions.
//
// Plain, old syntax on purpose (no ?., ??, top-level await, import attributes):
// it has to run, and say why, on a Node far older than the one it asks for.
// It lives in bin/ because the launcher needs it and only bin/ is published.
//
// Ranges are the subset of npm's syntax that engines uses here: `||` between
// sets of space-separated comparators (>=, >, <=, <, = or none), with partial
// versions (`<23` is `<23.0.0`). Anything else (^, ~, x, -) throws, so a range
// this file would misread is caught by its test, not by users.

import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const PACKAGE_JSON = new URL('../package.json', import.meta.url);

/** `v22.12.0`, `22.12`, `24.0.0-nightly…` → [22, 12, 0]; null when it is no version. */
export function parseVersion(text) {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(String(text).trim());
  if (!match) return null;
  return [Number(match[1]), Number(match[2] || 0), Number(match[3] || 0)];
}

/** -1, 0 or 1 as version a is lower than, equal to or higher than version b. */
export function compareVersions(a, b) {
  const x = typeof a === 'string' ? parseVersion(a) : a;
  const y = typeof b === 'string' ? parseVersion(b) : b;
  if (!x || !y) throw new Error(`not a version: ${!x ? a : b}`);
  for (let i = 0; i < 3; i++) {
    if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

function parseRange(range) {
  const sets = String(range)
    .split('||')
    .map((set) =>
      set
        .trim()
        .split(/\s+/)
        .filter((part) => part !== '')
        .map((part) => {
          const match = /^(>=|<=|>|<|=)?(.*)$/.exec(part);
          const version = parseVersion(match[2]);
          if (!version) throw new Error(`unsupported version range "${range}" (at "${part}")`);
          return { op: match[1] || '=', version: version, text: match[2] };
        }),
    );
  if (sets.some((set) => set.length === 0)) throw new Error(`unsupported version range "${range}"`);
  return sets;
}

function holds(comparator, version) {
  const order = compareVersions(version, comparator.version);
  if (comparator.op === '>=') return order >= 0;
  if (comparator.op === '>') return order > 0;
  if (comparator.op === '<=') return order <= 0;
  if (comparator.op === '<') return order < 0;
  return order === 0;
}

/** Whether a version (e.g. `22.18.0` or `v24.3.0`) is in a range (e.g. `>=22.18.0 <23 || >=24.3.0`). */
export function satisfies(version, range) {
  const parsed = parseVersion(version);
  if (!parsed) throw new Error(`not a version: ${version}`);
  return parseRange(range).some((set) => set.every((comparator) => holds(comparator, parsed)));
}

/** A range in words: `>=22.18.0 <23 || >=24.3.0` → `22.18.0 or a later 22.x, or 24.3.0 or newer`. */
export function describeRange(range) {
  return parseRange(range)
    .map((set) => {
      const low = set[0];
      if (set.length === 1 && low.op === '>=') return `${low.text} or newer`;
      const high = set[1];
      if (
        set.length === 2 &&
        low.op === '>=' &&
        high.op === '<' &&
        high.version[0] === low.version[0] + 1 &&
        high.version[1] === 0 &&
        high.version[2] === 0
      ) {
        return `${low.text} or a later ${low.version[0]}.x`;
      }
      return set.map((comparator) => comparator.op + comparator.text).join(' ');
    })
    .join(', or ');
}

/** package.json's engines.node. */
export function requiredRange() {
  const range = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')).engines.node;
  if (typeof range !== 'string') throw new Error('package.json has no engines.node');
  return range;
}

/** The one-line message for a Node outside the range, or null when it is inside. */
export function nodeVersionProblem(version, range) {
  const running = version === undefined ? process.versions.node : version;
  const required = range === undefined ? requiredRange() : range;
  if (satisfies(running, required)) return null;
  const shown = String(running).charAt(0) === 'v' ? running : `v${running}`;
  return `error[USAGE_ERROR]: mcp-envelope needs Node.js ${describeRange(required)} (package.json engines: "${required}"); this is Node.js ${shown}`;
}

/** Exit with code 2 and the message when the running Node is outside package.json's range. */
export function exitIfUnsupported() {
  let problem;
  try {
    problem = nodeVersionProblem();
  } catch (error) {
    problem = `error[INTERNAL_ERROR]: cannot check the Node.js version: ${error instanceof Error ? error.message : error}`;
  }
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(2);
  }
}

function isMain() {
  try {
    return (
      process.argv[1] !== undefined &&
      realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
    );
  } catch (_error) {
    return false;
  }
}

if (isMain()) exitIfUnsupported();
