/**
 * The real MCP servers the sweep runs, each at a pinned version from npm, all
 * of them working offline and without an API key. Every server is installed
 * into its own folder of the scratch directory (never into this repository)
 * and started with this process's Node over stdio.
 *
 * `reset` puts the server's scratch state back before every pass (the direct
 * runs and every gateway mode×transport) so that each pass starts from the
 * same files; `arguments` gives meaningful input to tools whose minimal
 * schema-generated arguments would do nothing useful; `skip` names tools the
 * sweep does not call, with the reason.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/** Where one server lives and works inside the scratch directory. */
export interface Scratch {
  /** The scratch directory itself. */
  root: string;
  /** `npm install --prefix` folder of this server. */
  prefix: string;
  /** A folder of its own for files the server reads and writes. */
  work: string;
}

export type ToolArguments = Record<string, unknown>;

export interface ServerSpec {
  /** Short name: the folder in the scratch directory, the fixture file name, the table row. */
  name: string;
  package: string;
  /** Exact version installed. */
  version: string;
  /** The entry script inside the package, run with this process's Node. */
  entry: string;
  args?: (at: Scratch) => string[];
  /** Variables the server needs (the gateway gets them as --env). */
  env?: (at: Scratch) => Record<string, string>;
  /** Restores the server's scratch files; runs before every pass. */
  reset?: (at: Scratch) => void;
  /**
   * Arguments for tools that need meaningful input (a list: one call each);
   * the other tools get minimal schema-valid arguments.
   */
  arguments?: (at: Scratch) => Record<string, ToolArguments | ToolArguments[]>;
  /** Members added to every tool's arguments when its input schema has them (a repository path). */
  common?: (at: Scratch) => ToolArguments;
  /** Calls (`tool` or `tool#2`) left out of fixtures, with the reason (too big to keep). */
  noCapture?: Record<string, string>;
  /** Tools not called, with the reason. */
  skip?: Record<string, string>;
  /** What this server brings to the sweep (documentation). */
  covers: string;
}

/** Code for code-runner: a number no double holds, and a text that looks like an envelope. */
export const BIG_INTEGER = '18446744073709551616';
export const ENVELOPE_LOOKALIKE = '{"schema_version":"mcp.envelope.v0.1","result":{"a":1}}';

function fresh(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', args, {
    cwd,
    stdio: 'ignore',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Sweep',
      GIT_AUTHOR_EMAIL: 'sweep@example.invalid',
      GIT_COMMITTER_NAME: 'Sweep',
      GIT_COMMITTER_EMAIL: 'sweep@example.invalid',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
    },
  });
}

/** The smallest well-formed one-page PDF with a line of text (offsets computed, not guessed). */
export function tinyPdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(body.length);
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

/** A 1×1 PNG. */
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

/** A 10 ms mono 8 kHz 8-bit WAV: a square wave. */
export function tinyWav(): Buffer {
  const samples = Buffer.alloc(80);
  for (let i = 0; i < samples.length; i++) samples[i] = i % 16 < 8 ? 0xa0 : 0x60;
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + samples.length, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(8000, 28);
  header.writeUInt16LE(1, 32);
  header.writeUInt16LE(8, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]);
}

/** 256 KiB of numbered lines: a big output. */
function bigText(): string {
  const lines: string[] = [];
  for (let i = 1; lines.join('\n').length < 256 * 1024 && i < 100_000; i += 1) {
    lines.push(`line ${String(i).padStart(5, '0')}: the quick brown fox jumps over the lazy dog`);
  }
  return `${lines.join('\n')}\n`;
}

const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'Sweep',
  GIT_AUTHOR_EMAIL: 'sweep@example.invalid',
  GIT_COMMITTER_NAME: 'Sweep',
  GIT_COMMITTER_EMAIL: 'sweep@example.invalid',
  GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
};

const dataUri = (text: string) => `data:text/plain;base64,${Buffer.from(text).toString('base64')}`;

export const SERVERS: readonly ServerSpec[] = [
  {
    name: 'everything',
    package: '@modelcontextprotocol/server-everything',
    version: '2026.8.31',
    entry: 'dist/index.js',
    args: () => ['stdio'],
    covers:
      'reference server: annotated text, image (with annotations), embedded text and blob resources, ' +
      'resource_link blocks, outputSchema + structuredContent, progress, logging, and the tools it registers ' +
      'only for a client with roots, sampling and elicitation (draft-07 schemas)',
    arguments: () => ({
      echo: { message: 'hello from the sweep' },
      'get-annotated-message': [{ messageType: 'error' }, { messageType: 'success', includeImage: true }],
      'get-resource-links': { count: 3 },
      'get-resource-reference': [
        { resourceType: 'Text', resourceId: 1 },
        { resourceType: 'Blob', resourceId: 2 },
      ],
      'get-structured-content': { location: 'Chicago' },
      'get-sum': { a: 1, b: 2 },
      'gzip-file-as-resource': [
        { name: 'hello.txt.gz', data: dataUri('hello, sweep\n'), outputType: 'resource' },
        { name: 'hello-link.txt.gz', data: dataUri('hello, sweep\n'), outputType: 'resourceLink' },
      ],
      'trigger-long-running-operation': { duration: 1, steps: 2 },
      'trigger-sampling-request': { prompt: 'Say hello.', maxTokens: 16 },
      'simulate-research-query': { topic: 'envelopes' },
    }),
    skip: {
      'get-env':
        "prints the server process's whole environment: differs by design between a direct run and the " +
        "gateway's safe base, and would put environment values into fixtures",
    },
  },
  {
    name: 'filesystem',
    package: '@modelcontextprotocol/server-filesystem',
    version: '2026.8.31',
    entry: 'dist/index.js',
    args: (at) => [join(at.work, 'root')],
    covers:
      'outputSchema on every tool (structuredContent.content), image and audio blocks (read_media_file on a ' +
      'PNG and a WAV), a 256 KiB text (big output), writes confined to a scratch root',
    reset: (at) => {
      const root = join(at.work, 'root');
      fresh(root);
      writeFileSync(join(root, 'hello.txt'), 'Hello, sweep.\nSecond line.\n');
      writeFileSync(join(root, 'notes.md'), '# Notes\n\none\ntwo\n');
      writeFileSync(join(root, 'move-me.txt'), 'to be moved\n');
      writeFileSync(join(root, 'pixel.png'), Buffer.from(PNG_BASE64, 'base64'));
      writeFileSync(join(root, 'beep.wav'), tinyWav());
      writeFileSync(join(root, 'big.txt'), bigText());
      mkdirSync(join(root, 'sub'));
      writeFileSync(join(root, 'sub', 'inner.txt'), 'inner\n');
    },
    arguments: (at) => {
      const root = join(at.work, 'root');
      return {
        read_file: { path: join(root, 'hello.txt') },
        read_text_file: [{ path: join(root, 'hello.txt'), head: 1 }, { path: join(root, 'big.txt') }],
        read_media_file: [{ path: join(root, 'pixel.png') }, { path: join(root, 'beep.wav') }],
        read_multiple_files: { paths: [join(root, 'hello.txt'), join(root, 'notes.md')] },
        write_file: { path: join(root, 'written.txt'), content: 'written by the sweep\n' },
        edit_file: {
          path: join(root, 'notes.md'),
          edits: [{ oldText: 'one', newText: 'uno' }],
          dryRun: true,
        },
        create_directory: { path: join(root, 'made') },
        list_directory: { path: root },
        list_directory_with_sizes: { path: root },
        directory_tree: { path: join(root, 'sub') },
        move_file: { source: join(root, 'move-me.txt'), destination: join(root, 'moved.txt') },
        search_files: { path: root, pattern: 'inner' },
        get_file_info: { path: join(root, 'hello.txt') },
      };
    },
    noCapture: { 'read_text_file#2': 'a 256 KiB text (the big-output case), not kept in the fixture' },
  },
  {
    name: 'memory',
    package: '@modelcontextprotocol/server-memory',
    version: '2026.8.31',
    entry: 'dist/index.js',
    env: (at) => ({ MEMORY_FILE_PATH: join(at.work, 'memory.jsonl') }),
    covers:
      'outputSchema + structuredContent with nested arrays of objects, a knowledge graph kept in a scratch file',
    reset: (at) => {
      fresh(at.work);
      const lines = [
        { type: 'entity', name: 'Alice', entityType: 'person', observations: ['writes envelopes'] },
        { type: 'entity', name: 'Bob', entityType: 'person', observations: ['reads envelopes'] },
        { type: 'relation', from: 'Alice', to: 'Bob', relationType: 'knows' },
      ];
      writeFileSync(
        join(at.work, 'memory.jsonl'),
        `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`,
      );
    },
    arguments: () => ({
      create_entities: { entities: [{ name: 'Carol', entityType: 'person', observations: ['likes tea'] }] },
      create_relations: { relations: [{ from: 'Carol', to: 'Alice', relationType: 'knows' }] },
      add_observations: { observations: [{ entityName: 'Alice', contents: ['plays chess'] }] },
      delete_entities: { entityNames: ['Bob'] },
      delete_observations: { deletions: [{ entityName: 'Alice', observations: ['plays chess'] }] },
      delete_relations: { relations: [{ from: 'Carol', to: 'Alice', relationType: 'knows' }] },
      search_nodes: { query: 'Alice' },
      open_nodes: { names: ['Alice', 'Carol'] },
    }),
  },
  {
    name: 'sequential-thinking',
    package: '@modelcontextprotocol/server-sequential-thinking',
    version: '2026.8.31',
    entry: 'dist/index.js',
    env: () => ({ DISABLE_THOUGHT_LOGGING: 'true' }),
    covers: 'one tool with outputSchema and a JSON text mirroring structuredContent',
    arguments: () => ({
      sequentialthinking: {
        thought: 'Check that the envelope keeps every block.',
        nextThoughtNeeded: false,
        thoughtNumber: 1,
        totalThoughts: 1,
      },
    }),
  },
  {
    name: 'pdf',
    package: '@modelcontextprotocol/server-pdf',
    version: '2.0.4',
    entry: 'dist/index.js',
    args: (at) => ['--stdio', join(at.work, 'pdfs')],
    covers:
      'MCP App server: 2020-12 schemas, tool _meta (ui resourceUri, app-only visibility), result _meta, ' +
      'structuredContent, base64 bytes in structuredContent, a local PDF made by the sweep',
    reset: (at) => {
      fresh(join(at.work, 'pdfs'));
      writeFileSync(join(at.work, 'pdfs', 'sample.pdf'), tinyPdf('Hello from the sweep'));
    },
    arguments: (at) => {
      const file = join(at.work, 'pdfs', 'sample.pdf');
      return {
        read_pdf_bytes: { url: file },
        display_pdf: { url: file },
        submit_page_data: { requestId: 'sweep-unknown', pages: [{ page: 1, text: 'x' }] },
        save_pdf: { url: file, data: tinyPdf('Saved by the sweep').toString('base64') },
      };
    },
    skip: {
      interact:
        'drives a live PDF viewer (an MCP App iframe) and waits for it to answer: no viewer runs here',
      poll_pdf_commands: "long-polls for a viewer's commands: answers after more than 20 s when none come",
    },
  },
  {
    name: 'system-monitor',
    package: '@modelcontextprotocol/server-system-monitor',
    version: '2.0.3',
    entry: 'dist/index.js',
    args: () => ['--stdio'],
    covers:
      'MCP App server: 2020-12 schemas, outputSchema, tool _meta, volatile numbers (load, memory, uptime)',
  },
  {
    name: 'calc',
    package: '@coo-quack/calc-mcp',
    version: '2.1.1',
    entry: 'dist/index.js',
    covers:
      '21 small tools with draft-07 schemas, plain text answers, big integers (base conversion of 2^64-1, ' +
      'exact arithmetic), random values (volatile)',
    arguments: () => ({
      random: { type: 'uuid' },
      hash: { input: 'sweep', algorithm: 'sha256' },
      base64: { input: 'sweep', action: 'encode' },
      encode: { input: 'a b&c', action: 'encode', type: 'url' },
      datetime: { action: 'format', datetime: '2026-01-01T00:00:00Z', timezone: 'UTC' },
      count: { text: 'héllo wörld' },
      math: [{ expression: '2^64' }, { expression: '18446744073709551615 + 1' }],
      date: { action: 'add', date: '2026-01-01', amount: 1, unit: 'days' },
      regex: { pattern: 'a+', text: 'caaat', action: 'match' },
      base: { value: '18446744073709551615', from: 10, to: 16 },
      diff: { text1: 'kitten', text2: 'sitting', action: 'distance' },
      format_validate: { input: '{"a":1}', format: 'json' },
      cron_parse: { expression: '0 12 * * 1', count: 2, timezone: 'UTC' },
      luhn: { number: '79927398713' },
      ip: { action: 'info', ip: '127.0.0.1' },
      color: { color: '#ff8800', to: 'rgb' },
      convert: { value: 1, from: 'km', to: 'm', category: 'length' },
      char_info: { char: 'é' },
      jwt_decode: {
        token: 'eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJzd2VlcCIsImlhdCI6MTc2NzIyNTYwMH0.',
      },
      url_parse: { url: 'https://example.invalid/a/b?c=1#d' },
      semver: { action: 'satisfies', version: '1.2.3', range: '^1.0.0' },
    }),
  },
  {
    name: 'time',
    package: 'time-mcp',
    version: '1.0.6',
    entry: 'dist/index.js',
    covers: 'draft-07 schemas, plain text answers, the current time (volatile)',
    arguments: () => ({
      current_time: { format: 'YYYY-MM-DD HH:mm:ss', timezone: 'UTC' },
      relative_time: { time: '2020-01-01 00:00:00' },
      days_in_month: { date: '2024-02-10' },
      get_timestamp: { time: '2024-01-01 00:00:00.000' },
      convert_time: { sourceTimezone: 'UTC', targetTimezone: 'Asia/Tokyo', time: '2024-01-01 12:00:00' },
      get_week_year: { date: '2024-03-23' },
    }),
  },
  {
    name: 'code-runner',
    package: 'mcp-server-code-runner',
    version: '0.1.8',
    entry: 'dist/cli.js',
    env: (at) => ({ TMPDIR: at.work }),
    covers: `texts that are JSON on their own: the number ${BIG_INTEGER} and an envelope look-alike`,
    reset: (at) => fresh(at.work),
    arguments: () => ({
      'run-code': [
        { languageId: 'javascript', code: 'process.stdout.write(String(2n ** 64n));' },
        { languageId: 'javascript', code: `process.stdout.write(${JSON.stringify(ENVELOPE_LOOKALIKE)});` },
      ],
    }),
  },
  {
    name: 'git',
    package: '@cyanheads/git-mcp-server',
    version: '2.15.3',
    entry: 'dist/index.js',
    env: (at) => ({
      MCP_TRANSPORT_TYPE: 'stdio',
      MCP_LOG_LEVEL: 'error',
      OTEL_ENABLED: 'false',
      GIT_SIGN_COMMITS: 'false',
      GIT_BASE_DIR: at.work,
      LOGS_DIR: join(at.work, 'logs'),
      ...GIT_IDENTITY,
    }),
    covers:
      '28 tools with 2020-12 schemas and outputSchema, git output in structuredContent, a scratch repository',
    reset: (at) => {
      fresh(at.work);
      const repo = join(at.work, 'repo');
      mkdirSync(repo);
      git(repo, 'init', '--quiet', '--initial-branch=main');
      writeFileSync(join(repo, 'README.md'), '# Sweep repository\n\nA line to blame.\n');
      git(repo, 'add', 'README.md');
      git(repo, 'commit', '--quiet', '--no-gpg-sign', '-m', 'initial commit');
      writeFileSync(join(repo, 'new.txt'), 'an untracked file\n');
    },
    common: (at) => ({ path: join(at.work, 'repo') }),
    arguments: (at) => ({
      git_add: { paths: ['new.txt'] },
      git_blame: { filePath: 'README.md' },
      git_branch: { mode: 'list' },
      git_changelog_analyze: { reviewTypes: ['features'], maxCommits: 5 },
      git_checkout: { target: 'main' },
      git_clean: { force: true, dryRun: true },
      git_clear_working_dir: { confirm: 'Y' },
      git_clone: { url: join(at.work, 'repo'), path: join(at.work, 'clone') },
      git_commit: { message: 'sweep commit' },
      git_init: { path: join(at.work, 'fresh'), initialBranch: 'main' },
      git_log: { maxCount: 5 },
      git_merge: { branch: 'main' },
      git_reflog: { maxCount: 5 },
      git_remote: { mode: 'list' },
      git_reset: { mode: 'soft', target: 'HEAD' },
      git_show: { object: 'HEAD' },
      git_stash: { mode: 'list' },
      git_tag: { mode: 'list' },
      git_worktree: { mode: 'list' },
      git_wrapup_instructions: { acknowledgement: 'Y' },
    }),
    skip: {
      git_cherry_pick: 'rewrites history; nothing to pick in a one-branch scratch repository',
      git_fetch: 'needs a remote (network)',
      git_pull: 'needs a remote (network)',
      git_push: 'needs a remote (network)',
      git_rebase: 'rewrites history; no upstream to rebase onto',
    },
  },
  {
    name: 'dbhub',
    package: '@bytebase/dbhub',
    version: '1.4.0',
    entry: 'dist/index.js',
    args: (at) => ['--transport', 'stdio', '--dsn', `sqlite://${join(at.work, 'sweep.sqlite')}`],
    covers: '2020-12 schemas, SQL results as JSON text, an integer beyond 2^53 stored in SQLite',
    reset: (at) => {
      fresh(at.work);
      const db = new DatabaseSync(join(at.work, 'sweep.sqlite'));
      db.exec(
        'create table items (id integer primary key, name text, big integer);' +
          "insert into items values (1, 'envelope', 9007199254740993), (2, 'block', 2);",
      );
      db.close();
    },
    arguments: () => ({
      execute_sql: [
        { sql: 'select 1 as one' },
        { sql: 'select id, name, big, cast(big as text) as big_text from items order by id' },
      ],
      search_objects: { object_type: 'table', detail_level: 'summary' },
    }),
  },
];

/** Servers tried and left out of the table, with the reason (README documents them). */
export const NOT_SWEPT: Record<string, string> = {
  '@wonderwhy-er/desktop-commander@0.2.52':
    'telemetry on by default and remote feature flags: it reaches out to the network at start',
  'calc-mcp': 'no such package on npm (the calculator is @coo-quack/calc-mcp)',
  '@theo.foobar/mcp-time': 'no such package on npm (the time server is time-mcp)',
};
