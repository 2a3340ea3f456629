import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import PizZip from 'pizzip';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentXml, writeTemplate } from '../../examples/template-server/make-templates.ts';
import { Keyring, signDownloadId } from '../../src/artifacts/index.ts';
import { defaultRegistry, SCHEMA_IDS } from '../../src/schemas/index.ts';
import { type Connected, connectExample, EXAMPLES, firstText } from './spawn.ts';

/**
 * examples/template-server over stdio, as the gateway runs it: a real child
 * process, the official SDK client, a real artifact folder in a temp dir.
 */

const SERVER = `${EXAMPLES}template-server/server.ts`;
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
/** LibreOffice's command, looked up on PATH as a shell would; undefined when it is not installed. */
const SOFFICE = onPath('soffice');
/** CI installs LibreOffice (.ci/run): there its check must run, never be skipped. */
const REQUIRE_SOFFICE = Boolean(process.env.CI);

function onPath(command: string): string | undefined {
  const names = process.platform === 'win32' ? [`${command}.exe`, `${command}.com`] : [command];
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter((entry) => entry !== '')) {
    for (const name of names) {
      const candidate = join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here, or not executable: the next folder.
      }
    }
  }
  return undefined;
}

/** What JSON.parse gives: the tests read members the envelope schema already checked. */
type Json = ReturnType<typeof JSON.parse>;

interface Envelope {
  ok: boolean;
  tool: string;
  schema_version: string;
  data?: Record<string, Json>;
  error?: { code: string; message: string; retriable: boolean; details?: Record<string, Json> };
}

const temps: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `template-server-${prefix}-`));
  temps.push(dir);
  return dir;
}

async function startServer(env: Record<string, string>): Promise<Connected> {
  return connectExample({
    command: process.execPath,
    args: [SERVER],
    env: { PATH: process.env.PATH ?? '', ...env },
  });
}

/** Calls a tool; checks the envelope is a valid Hosted v2 envelope carried alike in text and structuredContent. */
async function call(server: Connected, name: string, args: Record<string, unknown>) {
  const result = await server.client.callTool({ name, arguments: args });
  const envelope = JSON.parse(firstText(result)) as Envelope;
  expect(result.structuredContent).toEqual(envelope);
  expect(defaultRegistry().validate(SCHEMA_IDS.hostedEnvelope, envelope).issues).toEqual([]);
  expect(envelope.tool).toBe(name);
  expect(result.isError === true).toBe(!envelope.ok);
  return envelope;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/** The paragraphs of a .docx's word/document.xml, as text. */
function paragraphsOf(docx: Buffer): string[] {
  const xml = new PizZip(docx).file('word/document.xml')?.asText() ?? '';
  return [...xml.matchAll(/<w:p[ >][\s\S]*?<\/w:p>/g)].map((paragraph) =>
    decodeEntities([...paragraph[0].matchAll(/<w:t(?: [^>]*)?>([^<]*)<\/w:t>/g)].map((t) => t[1]).join('')),
  );
}

const MINUTES = {
  meeting_title: 'Quarterly review',
  meeting_date: '2026-11-24',
  attendees: ['Ada Lovelace', 'Grace Hopper'],
  decisions: ['Ship the template server'],
};

afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe('examples/template-server over stdio', () => {
  let server: Connected;
  let artifacts: string;

  beforeAll(async () => {
    artifacts = tempDir('stdio');
    server = await startServer({
      TEMPLATE_SERVER_ARTIFACTS_DIR: artifacts,
      TEMPLATE_SERVER_DOWNLOAD_URL: 'http://127.0.0.1:8787/api/download',
    });
  });

  afterAll(async () => {
    await server?.client.close();
  });

  it('lists the four tools with their argument schemas and the Hosted v2 envelope as outputSchema', async () => {
    const { tools } = await server.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'download_filled',
      'fill_template',
      'get_template',
      'list_templates',
    ]);
    const fill = tools.find((tool) => tool.name === 'fill_template');
    expect(fill?.inputSchema.properties).toHaveProperty('return_mode.enum', [
      'url',
      'base64_docx',
      'mcp_resource',
    ]);
    expect(fill?.outputSchema).toMatchObject({ type: 'object' });
    const { resourceTemplates } = await server.client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual([
      'templates://filled/{download_id}',
    ]);
  });

  it('lists every template with its fields in full mode, with null rate metadata and auth', async () => {
    const envelope = await call(server, 'list_templates', {});
    expect(envelope).toMatchObject({ ok: true, schema_version: '2026-02-19' });
    // The rate metadata is the tool's own, in data, as the real servers put it: nothing at the top level.
    expect(Object.keys(envelope).sort()).toEqual(['data', 'ok', 'schema_version', 'tool']);
    const data = envelope.data as Record<string, Json>;
    expect(data.templates.map((template: { template_id: string }) => template.template_id)).toEqual([
      'consulting-sow',
      'meeting-minutes',
      'mutual-nda-cover',
    ]);
    expect(data).toMatchObject({ mode: 'full', total_count: 3, next_cursor: null, auth: null });
    expect(data.rate_limit).toEqual({ limit: null, remaining: null, reset_at: null });
    const nda = data.templates[2];
    expect(Object.keys(nda).sort()).toEqual(['description', 'fields', 'name', 'template_id']);
    expect(nda.fields.map((field: { type: string }) => field.type).sort()).toEqual([
      'date',
      'list',
      'text',
      'text',
      'text',
      'text',
    ]);
    for (const field of nda.fields) {
      expect(Object.keys(field).sort()).toEqual(['default', 'description', 'name', 'required', 'type']);
    }
  });

  it('pages with an opaque cursor until next_cursor is null, in compact mode too', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const envelope = await call(server, 'list_templates', {
        mode: 'compact',
        limit: 2,
        ...(cursor === undefined ? {} : { cursor }),
      });
      const data = envelope.data as Record<string, Json>;
      expect(data.total_count).toBe(3);
      for (const entry of data.templates) {
        expect(Object.keys(entry).sort()).toEqual(['field_count', 'name', 'template_id']);
        expect(entry.field_count).toBe(6);
        seen.push(entry.template_id);
      }
      cursor = data.next_cursor ?? undefined;
      pages += 1;
    } while (cursor !== undefined && pages < 10);
    expect(pages).toBe(2);
    expect(seen).toEqual(['consulting-sow', 'meeting-minutes', 'mutual-nda-cover']);
  });

  it('refuses a bad cursor, a bad limit, a bad mode and unknown arguments with INVALID_ARGUMENT', async () => {
    for (const args of [
      { cursor: 'not-a-cursor' },
      { cursor: Buffer.from('{"after":"zzz-beyond"}').toString('base64url') },
      { cursor: Buffer.from('after:consulting-sow').toString('base64url') },
      { limit: 0 },
      { limit: 101 },
      { limit: 1.5 },
      { mode: 'tiny' },
      { page: 2 },
    ]) {
      const envelope = await call(server, 'list_templates', args);
      expect(envelope.error, JSON.stringify(args)).toMatchObject({
        code: 'INVALID_ARGUMENT',
        retriable: false,
      });
    }
  });

  it('gets one template, and answers TEMPLATE_NOT_FOUND and INVALID_ARGUMENT', async () => {
    const found = await call(server, 'get_template', { template_id: 'consulting-sow' });
    expect(found.data?.template).toMatchObject({
      template_id: 'consulting-sow',
      name: 'Consulting statement of work',
    });
    expect(found.data?.template.fields).toContainEqual({
      name: 'deliverables',
      type: 'list',
      required: true,
      description: 'What the consultant delivers.',
      default: null,
    });
    const unknown = await call(server, 'get_template', { template_id: 'no-such-template' });
    expect(unknown.error).toMatchObject({ code: 'TEMPLATE_NOT_FOUND', retriable: false });
    const missing = await call(server, 'get_template', {});
    expect(missing.error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { issues: [{ path: 'template_id' }] },
    });
    const wrongType = await call(server, 'get_template', { template_id: 7 });
    expect(wrongType.error?.code).toBe('INVALID_ARGUMENT');
  });

  it('fills a template (url mode by default) whose download_filled bytes hold every value', async () => {
    const filled = await call(server, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
    const data = filled.data as Record<string, Json>;
    expect(Object.keys(data).sort()).toEqual(
      ['auth', 'download_id', 'download_url', 'expires_at', 'metadata', 'rate_limit', 'return_mode'].sort(),
    );
    expect(data.return_mode).toBe('url');
    expect(data.download_url).toBe(
      `http://127.0.0.1:8787/api/download?id=${encodeURIComponent(data.download_id)}`,
    );
    expect(Date.parse(data.expires_at)).toBeGreaterThan(Date.now());
    expect(data.metadata).toMatchObject({
      template: 'meeting-minutes',
      filename: 'meeting-minutes.docx',
      filledFieldCount: 4,
      totalFieldCount: 6,
      missingFields: ['action_items', 'notes'],
    });
    const downloaded = await call(server, 'download_filled', { download_id: data.download_id });
    expect(downloaded.data).toMatchObject({
      content_type: DOCX,
      download_id: data.download_id,
      download_expires_at: data.expires_at,
      metadata: { template: 'meeting-minutes', sha256: data.metadata.sha256, bytes: data.metadata.bytes },
      rate_limit: { limit: null, remaining: null, reset_at: null },
      auth: null,
    });
    const paragraphs = paragraphsOf(Buffer.from(downloaded.data?.docx_base64, 'base64'));
    expect(paragraphs).toContain('Minutes: Quarterly review');
    expect(paragraphs).toContain('Date: 24 November 2026');
    expect(paragraphs).toContain('\u2022 Ada Lovelace');
    expect(paragraphs).toContain('\u2022 Grace Hopper');
    expect(paragraphs).toContain('\u2022 Ship the template server');
    // Loop markers leave no paragraph behind, and no tag is left unfilled.
    expect(paragraphs.join('\n')).not.toMatch(/[{}]/);
  });

  it('accepts the earlier argument name `template`, template_id winning when both are given', async () => {
    const values = {
      client_name: 'Acme',
      consultant_name: 'Bea',
      start_date: '2026-12-01',
      deliverables: ['Audit'],
    };
    const legacy = await call(server, 'fill_template', { template: 'consulting-sow', values });
    expect(legacy.data?.metadata.template).toBe('consulting-sow');
    const both = await call(server, 'fill_template', {
      template_id: 'consulting-sow',
      template: 'no-such-template',
      values,
    });
    expect(both.ok).toBe(true);
  });

  it('returns the bytes inline in base64_docx mode', async () => {
    const envelope = await call(server, 'fill_template', {
      template_id: 'mutual-nda-cover',
      values: {
        party_1_name: 'Acme Ltd',
        party_2_name: 'Beta LLC',
        effective_date: '2026-01-31',
        confidential_topics: ['Pricing', 'Roadmap'],
      },
      return_mode: 'base64_docx',
    });
    const data = envelope.data as Record<string, Json>;
    expect(Object.keys(data).sort()).toEqual(
      ['auth', 'content_type', 'docx_base64', 'metadata', 'rate_limit', 'return_mode'].sort(),
    );
    expect(data).toMatchObject({ content_type: DOCX, return_mode: 'base64_docx' });
    const paragraphs = paragraphsOf(Buffer.from(data.docx_base64, 'base64'));
    expect(paragraphs).toContain('Party 1: Acme Ltd');
    expect(paragraphs).toContain('Effective date: 31 January 2026');
    // An optional field left out is written with its default.
    expect(paragraphs).toContain('Governing law: England and Wales');
    expect(paragraphs).toContain('\u2022 Roadmap');
  });

  it('answers mcp_resource mode with a templates:// resource that resources/read serves', async () => {
    const envelope = await call(server, 'fill_template', {
      template_id: 'meeting-minutes',
      values: MINUTES,
      return_mode: 'mcp_resource',
    });
    const data = envelope.data as Record<string, Json>;
    expect(Object.keys(data).sort()).toEqual(
      [
        'auth',
        'content_type',
        'download_id',
        'download_url',
        'expires_at',
        'metadata',
        'rate_limit',
        'resource_uri',
        'return_mode',
      ].sort(),
    );
    expect(data.resource_uri).toBe(`templates://filled/${data.download_id}`);
    const read = await server.client.readResource({ uri: data.resource_uri });
    const [content] = read.contents as { uri: string; mimeType: string; blob: string }[];
    expect(content?.mimeType).toBe(DOCX);
    const downloaded = await call(server, 'download_filled', { download_id: data.download_id });
    expect(content?.blob).toBe(downloaded.data?.docx_base64);
    await expect(server.client.readResource({ uri: 'templates://filled/not-an-id' })).rejects.toThrow(
      /Malformed download_id/,
    );
  });

  it('answers MISSING_REQUIRED_FIELDS with the fields, and INVALID_ARGUMENT for values of the wrong kind', async () => {
    const missing = await call(server, 'fill_template', {
      template_id: 'meeting-minutes',
      values: { meeting_title: 'Only a title', attendees: [] },
    });
    expect(missing.error).toMatchObject({
      code: 'MISSING_REQUIRED_FIELDS',
      retriable: false,
      details: { missing_fields: ['meeting_date', 'attendees'] },
    });
    for (const values of [
      { ...MINUTES, attendees: 'Ada Lovelace' },
      { ...MINUTES, attendees: ['Ada', 7] },
      { ...MINUTES, meeting_date: '24/11/2026' },
      { ...MINUTES, meeting_date: '2026-02-30' },
      { ...MINUTES, meeting_title: { text: 'x' } },
    ]) {
      const envelope = await call(server, 'fill_template', { template_id: 'meeting-minutes', values });
      expect(envelope.error, JSON.stringify(values)).toMatchObject({
        code: 'INVALID_ARGUMENT',
        retriable: false,
      });
      expect(envelope.error?.details?.issues[0].path).toMatch(
        /^values\.(attendees|meeting_date|meeting_title)/,
      );
    }
    const unknown = await call(server, 'fill_template', { template_id: 'no-such-template', values: {} });
    expect(unknown.error?.code).toBe('TEMPLATE_NOT_FOUND');
    const noTemplate = await call(server, 'fill_template', { values: MINUTES });
    expect(noTemplate.error?.code).toBe('INVALID_ARGUMENT');
    const badMode = await call(server, 'fill_template', {
      template_id: 'meeting-minutes',
      values: MINUTES,
      return_mode: 'pdf',
    });
    expect(badMode.error?.code).toBe('INVALID_ARGUMENT');
  });

  it('tells download ids apart: malformed and forged are INVALID, expired EXPIRED, unknown NOT_FOUND', async () => {
    const filled = await call(server, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
    const id = filled.data?.download_id as string;
    const keyring = Keyring.inFolder({ dir: artifacts });
    const cases: [string, string, string][] = [
      ['malformed', 'not-a-download-id', 'DOWNLOAD_LINK_INVALID'],
      ['forged signature', `${id.slice(0, -2)}${id.endsWith('AA') ? 'BB' : 'AA'}`, 'DOWNLOAD_LINK_INVALID'],
      [
        'forged expiry',
        id.replace(/\.(\d+)\./, (_, seconds) => `.${Number(seconds) + 3600}.`),
        'DOWNLOAD_LINK_INVALID',
      ],
      ['expired', signDownloadId(id.slice(0, 32), Date.now() - 60_000, keyring), 'DOWNLOAD_LINK_EXPIRED'],
      [
        'unknown grant',
        signDownloadId(randomBytes(16).toString('hex'), Date.now() + 60_000, keyring),
        'DOWNLOAD_LINK_NOT_FOUND',
      ],
    ];
    for (const [what, downloadId, code] of cases) {
      const envelope = await call(server, 'download_filled', { download_id: downloadId });
      expect(envelope.error, what).toMatchObject({ code, retriable: false });
    }
    const missing = await call(server, 'download_filled', {});
    expect(missing.error?.code).toBe('INVALID_ARGUMENT');
  });

  it('writes values as text: tag-like values stay literal, never parsed or run', async () => {
    const hostile = [
      '{x}',
      '{#attendees}{.}{/attendees}',
      '{constructor.constructor("return process")()}',
      '<w:p>&amp; "quotes"</w:p>',
    ];
    const envelope = await call(server, 'fill_template', {
      template_id: 'meeting-minutes',
      values: { ...MINUTES, meeting_title: hostile[0], attendees: hostile, notes: 'line one\nline two' },
      return_mode: 'base64_docx',
    });
    const paragraphs = paragraphsOf(Buffer.from(envelope.data?.docx_base64, 'base64'));
    expect(paragraphs).toContain('Minutes: {x}');
    for (const value of hostile) expect(paragraphs).toContain(`\u2022 ${value}`);
    const xml = new PizZip(Buffer.from(envelope.data?.docx_base64, 'base64'))
      .file('word/document.xml')
      ?.asText();
    expect(xml).toContain('line one</w:t></w:r><w:r><w:br/>');
  });

  it('refuses hostile values with INVALID_ARGUMENT: __proto__ and other unknown keys, lone surrogates, control characters, huge values', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        '__proto__ key',
        JSON.parse(`{"__proto__": {"polluted": "yes"}, "meeting_title": "x"}`),
        /no field named "__proto__"/,
      ],
      ['constructor key', { constructor: 'x' }, /no field named "constructor"/],
      ['lone surrogate', { meeting_title: 'bad \uD800 text' }, /lone UTF-16 surrogate/],
      [
        'lone surrogate in a list',
        { attendees: ['ok', '\uDC00'] },
        /attendees\[1\] contains a lone UTF-16 surrogate/,
      ],
      ['control character', { notes: 'bell \u0007' }, /control character/],
      ['5 MB value', { notes: 'x'.repeat(5 * 1024 * 1024) }, /longer than 10000 characters/],
      [
        'too many items',
        { attendees: Array.from({ length: 201 }, (_, i) => `p${i}`) },
        /more than 200 items/,
      ],
    ];
    for (const [what, values, message] of cases) {
      const envelope = await call(server, 'fill_template', {
        template_id: 'meeting-minutes',
        values: { ...MINUTES, ...values },
      });
      expect(envelope.error?.code, what).toBe('INVALID_ARGUMENT');
      expect(envelope.error?.message, what).toMatch(message);
    }
    const huge = await call(server, 'fill_template', {
      template_id: 'meeting-minutes',
      values: { ...MINUTES, notes: 'x'.repeat(5 * 1024 * 1024) },
    });
    expect(huge.error?.details).toMatchObject({ issues: [{ path: 'values.notes', limit: 10_000 }] });
    // However many unknown keys come in, the answer lists a bounded few and says how many there were.
    const flood = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`unknown_${i}`, 'x']));
    const bounded = await call(server, 'fill_template', {
      template_id: 'meeting-minutes',
      values: { ...MINUTES, ...flood },
    });
    expect(bounded.error?.details?.issues).toHaveLength(20);
    expect(bounded.error?.details).toMatchObject({ issues_total: 20_000 });
    expect(JSON.stringify(bounded).length).toBeLessThan(16_384);
    // The server is still well: nothing was polluted, and it fills as before.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const after = await call(server, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
    expect(after.ok).toBe(true);
  });

  /** fill_template on consulting-sow, the bytes inline. */
  async function filledSow(): Promise<Buffer> {
    const envelope = await call(server, 'fill_template', {
      template_id: 'consulting-sow',
      values: {
        client_name: 'Acme Ltd',
        consultant_name: 'Bea Consulting',
        start_date: '2026-12-01',
        end_date: '2027-02-28',
        deliverables: ['Security audit', 'Final report'],
      },
      return_mode: 'base64_docx',
    });
    return Buffer.from(envelope.data?.docx_base64, 'base64');
  }

  const SOW_LINES = [
    'Client: Acme Ltd',
    'Consultant: Bea Consulting',
    'Start date: 1 December 2026',
    'End date: 28 February 2027',
    '\u2022 Security audit',
    '\u2022 Final report',
    'Fee: As agreed in writing.',
  ];

  it('produces documents whose text holds every filled value, one paragraph each', async () => {
    // A DOCX is a ZIP; its word/document.xml holds the paragraphs, read here as a word processor reads them.
    const docx = await filledSow();
    const zip = new PizZip(docx);
    expect(zip.file('[Content_Types].xml')?.asText()).toContain(
      DOCX.replace(/\.document$/, '.document.main+xml'),
    );
    expect(paragraphsOf(docx)).toEqual(expect.arrayContaining(SOW_LINES));
  });

  // The same, through LibreOffice, where it is installed: proof that a person can open the file.
  // CI installs it (.ci/run), so there a missing soffice fails instead of skipping.
  const convertible = SOFFICE !== undefined || REQUIRE_SOFFICE;
  it.skipIf(!convertible)(
    convertible
      ? 'produces documents LibreOffice opens: its text conversion holds every filled value'
      : 'produces documents LibreOffice opens (skipped: LibreOffice (soffice) not installed)',
    async () => {
      if (SOFFICE === undefined) {
        throw new Error(
          'CI is set and LibreOffice (soffice) is not on PATH: .ci/run installs libreoffice-writer-nogui, so this check must run',
        );
      }
      const dir = tempDir('soffice');
      const file = join(dir, 'filled.docx');
      writeFileSync(file, await filledSow());
      const converted = spawnSync(
        SOFFICE,
        [
          `-env:UserInstallation=file://${join(dir, 'profile')}`,
          '--headless',
          '--convert-to',
          'txt:Text',
          '--outdir',
          dir,
          file,
        ],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(converted.status, converted.stderr).toBe(0);
      const text = readFileSync(join(dir, 'filled.txt'), 'utf8');
      for (const expected of SOW_LINES) expect(text).toContain(expected);
    },
    150_000,
  );
});

describe('examples/template-server with hostile templates', () => {
  it('writes a tag that looks like an expression back as it stands, without running it', async () => {
    const templates = tempDir('hostile-templates');
    writeTemplate(
      templates,
      {
        template_id: 'expressions',
        name: 'Expressions',
        description: 'Tags that would run code under an expression parser.',
        fields: [{ name: 'name', type: 'text', required: true, description: 'A name.', default: null }],
      },
      documentXml([
        { kind: 'line', text: 'Name: {name}' },
        { kind: 'line', text: 'A: {constructor.constructor("return process.exit(7)")()}' },
        { kind: 'line', text: 'B: {a+b}' },
        { kind: 'line', text: 'C: {name.constructor}' },
        { kind: 'line', text: 'D: {__proto__}' },
      ]),
    );
    const server = await startServer({
      TEMPLATE_SERVER_TEMPLATES_DIR: templates,
      TEMPLATE_SERVER_ARTIFACTS_DIR: tempDir('hostile-artifacts'),
    });
    try {
      const envelope = await call(server, 'fill_template', {
        template_id: 'expressions',
        values: { name: 'Ada' },
        return_mode: 'base64_docx',
      });
      const paragraphs = paragraphsOf(Buffer.from(envelope.data?.docx_base64, 'base64'));
      expect(paragraphs).toEqual([
        'Name: Ada',
        'A: {constructor.constructor("return process.exit(7)")()}',
        'B: {a+b}',
        'C: {name.constructor}',
        'D: {__proto__}',
      ]);
      // Had the expression run, the process would have exited: it still answers.
      expect((await call(server, 'list_templates', {})).ok).toBe(true);
    } finally {
      await server.client.close();
    }
  });

  /** Starts the server on a templates folder it must refuse; resolves with its exit code and stderr. */
  async function refusedStart(templates: string): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [SERVER], {
      env: { PATH: process.env.PATH ?? '', TEMPLATE_SERVER_TEMPLATES_DIR: templates },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    return { code, stderr };
  }

  it('refuses to start with a template that does not compile, saying which', async () => {
    const templates = tempDir('broken-templates');
    writeTemplate(
      templates,
      { template_id: 'broken', name: 'Broken', description: 'An unclosed loop.', fields: [] },
      documentXml([{ kind: 'line', text: '{#items} never closed' }]),
    );
    const { code, stderr } = await refusedStart(templates);
    expect(code).toBe(1);
    expect(stderr).toMatch(/Template broken cannot be compiled/);
  });

  it('refuses to start with a field named __proto__ (field names are plain identifiers)', async () => {
    const templates = tempDir('proto-templates');
    writeTemplate(
      templates,
      {
        template_id: 'proto',
        name: 'Proto',
        description: 'A field name that would reach the prototype.',
        fields: [{ name: '__proto__', type: 'text', required: true, description: 'x', default: null }],
      },
      documentXml([{ kind: 'line', text: '{__proto__}' }]),
    );
    const { code, stderr } = await refusedStart(templates);
    expect(code).toBe(1);
    expect(stderr).toMatch(/proto\.json: a field name is not an identifier/);
  });
});

describe('examples/template-server when its store fails', () => {
  it('answers ARTIFACT_STORE_UNAVAILABLE (retriable) without local paths, and keeps serving', async () => {
    const parent = tempDir('store-gone');
    const server = await startServer({ TEMPLATE_SERVER_ARTIFACTS_DIR: join(parent, 'artifacts') });
    try {
      const fill = () => call(server, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
      expect((await fill()).ok).toBe(true);
      // The folder disappears, and cannot come back: a file stands where it was.
      rmSync(parent, { recursive: true, force: true });
      writeFileSync(parent, 'not a folder');
      const failed = await fill();
      expect(failed.error).toMatchObject({ code: 'ARTIFACT_STORE_UNAVAILABLE', retriable: true });
      expect(failed.error?.message).not.toContain(parent);
      // What needs no store still works: the catalog, and a fill with the bytes inline.
      expect((await call(server, 'list_templates', { mode: 'compact' })).ok).toBe(true);
      const inline = await call(server, 'fill_template', {
        template_id: 'meeting-minutes',
        values: MINUTES,
        return_mode: 'base64_docx',
      });
      expect(inline.data?.docx_base64).toEqual(expect.any(String));
    } finally {
      await server.client.close();
    }
  });
});

describe('examples/template-server with a fill limit', () => {
  it('counts fill_template calls per minute and answers RATE_LIMITED (retriable) past the limit', async () => {
    const server = await startServer({
      TEMPLATE_SERVER_ARTIFACTS_DIR: tempDir('limited'),
      TEMPLATE_SERVER_FILL_LIMIT: '2',
    });
    try {
      const fill = () => call(server, 'fill_template', { template_id: 'meeting-minutes', values: MINUTES });
      const first = await fill();
      expect(first.data?.rate_limit).toMatchObject({ limit: 2, remaining: 1, bucket: 'templates:fill' });
      expect(Date.parse(first.data?.rate_limit.reset_at)).toBeGreaterThan(Date.now() - 1000);
      const second = await fill();
      expect(second.data?.rate_limit).toMatchObject({ limit: 2, remaining: 0 });
      const third = await fill();
      expect(third.error).toMatchObject({
        code: 'RATE_LIMITED',
        retriable: true,
        details: { rate_limit: { limit: 2, remaining: 0, bucket: 'templates:fill' } },
      });
      expect(Date.parse(third.error?.details?.rate_limit.reset_at)).toBeGreaterThan(Date.now());
      // Only fill_template is limited.
      const listed = await call(server, 'list_templates', { mode: 'compact' });
      expect(listed.data?.rate_limit).toEqual({ limit: null, remaining: null, reset_at: null });
    } finally {
      await server.client.close();
    }
  });
});
