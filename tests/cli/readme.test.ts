import { readFileSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.ts';
import { UPSTREAM_DIALECTS } from '../../src/gateway/operations/config.ts';
import { REPO_ROOT, runCli } from '../helpers/cli.ts';

/**
 * The README's shell examples, run as written, in order, in a copy of
 * examples/, so that they cannot drift from what the CLI does. A block is run
 * unless the line before its fence says why not: `<!-- not run: REASON -->`.
 * In a run block every command must be one this test can run: `mcp-envelope …`
 * (in-process), `cd DIR`, or the `alias mcp-envelope=…` that sets it up. Each
 * must exit 0, or the code its comment documents (`# exit 1: why`), and print
 * the output shown under it.
 */

const README = join(REPO_ROOT, 'README.md');
const EXAMPLES = join(REPO_ROOT, 'examples');
const INPUTS = join(EXAMPLES, 'inputs');
const NOT_RUN = /^<!-- not run: \S.* -->$/;
const SHELL_LANGS = new Set(['', 'sh', 'shell', 'bash', 'console']);

interface Block {
  /** Line of the opening fence, 1-based. */
  line: number;
  lang: string;
  body: string[];
  notRun: boolean;
}

interface Step {
  line: number;
  words: string[];
  /** File that stdout goes to (`> FILE`). */
  redirect?: string;
  exit: number;
  /** Output shown under the command, as the README prints it. */
  shown: string[];
}

function blocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const body: string[] = [];
    let end = i + 1;
    while (end < lines.length && lines[end] !== '```') body.push(lines[end++] as string);
    found.push({
      line: i + 1,
      lang: open[1] as string,
      body,
      notRun: i > 0 && NOT_RUN.test((lines[i - 1] as string).trim()),
    });
    i = end;
  }
  return found;
}

/**
 * Shell words of one command line: quotes, backslash escapes, `#` comments and
 * `> FILE`. Anything else a shell would interpret is refused, so the test never
 * runs a line differently from a shell.
 */
function shellWords(text: string): { words: string[]; redirect?: string; comment: string } {
  const words: string[] = [];
  let word: string | undefined;
  let redirect: string | undefined;
  let redirecting = false;
  let i = 0;
  const finish = () => {
    if (word === undefined) return;
    if (redirecting) {
      redirect = word;
      redirecting = false;
    } else words.push(word);
    word = undefined;
  };
  for (; i < text.length; i++) {
    const c = text[i] as string;
    if (c === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) throw new Error(`unclosed ' in: ${text}`);
      word = (word ?? '') + text.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      let j = i + 1;
      let value = '';
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '$' || text[j] === '`') throw new Error(`expansion in "…" is not supported: ${text}`);
        if (text[j] === '\\' && /["\\$`]/.test(text[j + 1] ?? '')) j++;
        value += text[j];
      }
      if (j >= text.length) throw new Error(`unclosed " in: ${text}`);
      word = (word ?? '') + value;
      i = j;
    } else if (c === '\\') {
      word = (word ?? '') + (text[++i] ?? '');
    } else if (c === ' ' || c === '\t') {
      finish();
    } else if (c === '#' && word === undefined) {
      break;
    } else if (c === '>' && word === undefined && !redirecting) {
      redirecting = true;
    } else if (/[|&;<$`*?(){}[\]~]/.test(c)) {
      throw new Error(`shell syntax \`${c}\` is not supported here: ${text}`);
    } else {
      word = (word ?? '') + c;
    }
  }
  finish();
  if (redirecting) throw new Error(`> without a file: ${text}`);
  return { words, ...(redirect === undefined ? {} : { redirect }), comment: text.slice(i + 1).trim() };
}

/** The commands of a block: `$ ` lines in console blocks (output follows them), every line in sh blocks. */
function steps(block: Block): Step[] {
  const console = block.lang === 'console';
  const out: Step[] = [];
  for (let i = 0; i < block.body.length; i++) {
    let text = block.body[i] as string;
    const line = block.line + 1 + i;
    if (console) {
      if (!text.startsWith('$ ')) {
        const last = out.at(-1);
        if (!last) throw new Error(`README line ${line}: output before any command`);
        last.shown.push(text);
        continue;
      }
      text = text.slice(2);
    } else if (text.trim() === '' || text.trim().startsWith('#')) continue;
    while (text.endsWith('\\') && i + 1 < block.body.length) text = `${text.slice(0, -1)} ${block.body[++i]}`;
    // The alias only names the launcher (its "$PWD" is the shell's); the test runs the CLI itself.
    if (/^alias mcp-envelope=\S+(\s+#.*)?$/.test(text)) {
      out.push({ line, words: ['alias'], exit: 0, shown: [] });
      continue;
    }
    let parsed: ReturnType<typeof shellWords>;
    try {
      parsed = shellWords(text);
    } catch (error) {
      throw new Error(
        `README line ${line}: ${(error as Error).message}; mark the block with <!-- not run: REASON --> before its fence`,
      );
    }
    const { words, redirect, comment } = parsed;
    const exit = /^exit (\d+)(?::|$)/.exec(comment);
    out.push({
      line,
      words,
      ...(redirect === undefined ? {} : { redirect }),
      exit: exit ? Number(exit[1]) : 0,
      shown: [],
    });
  }
  return out;
}

/** Top-level names in examples/inputs/.gitignore: what the README's commands may leave there. */
async function ignoredInInputs(): Promise<Set<string>> {
  const text = await readFile(join(INPUTS, '.gitignore'), 'utf8');
  return new Set(
    text
      .split('\n')
      .map((line) => line.trim().replace(/\/$/, ''))
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

/** Output with what differs on every run (fresh keys, random request ids, clock times) masked. */
function steady(text: string): string {
  return text
    .replace(/ed25519:[0-9a-f]{32}/g, 'ed25519:<key id>')
    .replace(/"request_id":"[0-9a-f]{32}"/g, '"request_id":"<random>"')
    .replace(/"request_id":"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"/g, '"request_id":"<random>"')
    .replace(/\breq_[A-Za-z0-9]{20}\b/g, 'req_<random>')
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>');
}

const work = await mkdtemp(join(tmpdir(), 'mcp-envelope-readme-'));
afterAll(() => rm(work, { recursive: true, force: true }));

describe('the README', () => {
  it('runs every shell example that is not marked otherwise, as written', async () => {
    const ignored = await ignoredInInputs();
    // A copy of the clone as a new user has it: examples/ without what earlier runs
    // left there (the gateway's data/ and runs/, README outputs in inputs/).
    await cp(EXAMPLES, join(work, 'examples'), {
      recursive: true,
      filter: (source) => {
        const path = relative(EXAMPLES, source).split(sep);
        if (path[0] === 'data' || path[0] === 'runs') return false;
        return !(path[0] === 'inputs' && path.length > 1 && ignored.has(path[1] as string));
      },
    });
    await cp(join(REPO_ROOT, 'prov-capabilities.json'), join(work, 'prov-capabilities.json'));
    const inputsBefore = new Set(await readdir(join(work, 'examples', 'inputs')));

    const markdown = await readFile(README, 'utf8');
    const run = blocks(markdown).filter((block) => SHELL_LANGS.has(block.lang) && !block.notRun);
    let cwd = work;
    let commands = 0;
    for (const block of run) {
      for (const step of steps(block)) {
        const where = `README line ${step.line}: ${step.words.join(' ')}`;
        const [command, ...args] = step.words;
        if (command === 'cd' && args.length === 1) {
          cwd = resolve(cwd, args[0] as string);
          continue;
        }
        if (command === 'alias') continue;
        if (command !== 'mcp-envelope') {
          throw new Error(
            `${where}: this test cannot run \`${command}\`; mark the block with <!-- not run: REASON --> before its fence`,
          );
        }
        const result = await runCli(args, { cwd });
        commands++;
        expect(result.code, `${where}\n${result.stderr}`).toBe(step.exit);
        if (step.redirect !== undefined) {
          await writeFile(resolve(cwd, step.redirect), result.stdout);
        }
        // Output the README shows must be what the command prints (stdout and stderr as a terminal
        // interleaves them), but for what differs on every run; a command shown without output may print any.
        if (step.shown.length > 0) {
          expect(
            steady(result.output ?? '')
              .trimEnd()
              .split('\n'),
            where,
          ).toEqual(step.shown.map(steady));
        }
      }
    }
    expect(commands).toBeGreaterThan(20);

    // What the examples write stays out of git's way.
    const left = (await readdir(join(work, 'examples', 'inputs'))).filter((name) => !inputsBefore.has(name));
    expect(left.filter((name) => !ignored.has(name))).toEqual([]);
  });

  it('marks the examples it does not run, and runs every other one that calls the CLI', () => {
    const markdown = readFileSync(README, 'utf8');
    const shell = blocks(markdown).filter((block) => SHELL_LANGS.has(block.lang));
    const notRun = shell.filter((block) => block.notRun);
    // At least the proxy walk-through, which serves until stopped.
    expect(notRun.some((block) => block.body.some((line) => line.startsWith('$ mcp-envelope proxy')))).toBe(
      true,
    );
    for (const block of shell.filter((candidate) => !candidate.notRun)) {
      expect(() => steps(block), `README line ${block.line}`).not.toThrow();
    }
  });

  it('lists every command the CLI has, and only those', () => {
    const markdown = readFileSync(README, 'utf8');
    const paragraph = /All commands: ([\s\S]*?)\(`mcp-envelope help/.exec(markdown)?.[1] ?? '';
    const listed = [...paragraph.matchAll(/`([a-z-]+)`/g)].map((match) => match[1]);
    const program = buildProgram({
      io: { stdout: () => {}, stderr: () => {}, stdin: '', env: {}, cwd: REPO_ROOT },
      exitCode: 0,
    });
    expect(listed.sort()).toEqual(program.commands.map((command) => command.name()).sort());
  });
});

describe('examples/README.md', () => {
  const text = readFileSync(join(EXAMPLES, 'README.md'), 'utf8');

  it('describes each upstream of gateway.config.json with its server and dialect', () => {
    const config = JSON.parse(readFileSync(join(EXAMPLES, 'gateway.config.json'), 'utf8')) as {
      upstreams: { name: string; dialect?: string; stdio?: { args?: string[] } }[];
    };
    const section = text.slice(text.indexOf('## gateway.config.json'), text.indexOf('## inputs/'));
    const rows = [...section.matchAll(/^\| `([^`]+)` \| `([^`]+)` \| `([^`]+)`/gm)].map(
      ([, name, server, dialect]) => ({ name, server, dialect }),
    );
    expect(rows).toEqual(
      config.upstreams.map((upstream) => ({
        name: upstream.name,
        server: upstream.stdio?.args?.[0],
        dialect: upstream.dialect ?? 'prov-v0.1',
      })),
    );
    for (const { dialect } of rows) expect(UPSTREAM_DIALECTS).toContain(dialect);
  });

  it('lists every input file the README examples start from', async () => {
    const ignored = await ignoredInInputs();
    const files = (await readdir(INPUTS)).filter((name) => !name.startsWith('.') && !ignored.has(name));
    for (const file of files) expect(text, file).toContain(`| \`${file}\` |`);
  });
});
