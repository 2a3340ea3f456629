/**
 * Writes the example templates: each a minimal WordprocessingML document
 * (`<id>.docx`, docxtemplater tags in plain runs) and its field metadata
 * (`<id>.json`) beside it. The output is deterministic (fixed ZIP dates), so
 * running it again leaves the committed files unchanged.
 *
 *   node examples/template-server/make-templates.ts [outDir]
 *
 * Tags: `{field}` for text and dates, and for a list a paragraph loop
 * (`{#field}` and `{/field}` alone in their paragraphs, `{.}` the item).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import PizZip from 'pizzip';
import type { TemplateDefinition } from './catalog.ts';

export type Block =
  | { kind: 'title'; text: string }
  | { kind: 'heading'; text: string }
  | { kind: 'line'; label?: string; text: string }
  | { kind: 'list'; field: string };

interface TemplateSource extends TemplateDefinition {
  blocks: Block[];
}

const TEMPLATES: TemplateSource[] = [
  {
    template_id: 'mutual-nda-cover',
    name: 'Mutual NDA cover page',
    description:
      'Cover page of a mutual non-disclosure agreement: the parties, the effective date, the purpose and the topics covered.',
    fields: [
      {
        name: 'party_1_name',
        type: 'text',
        required: true,
        description: 'First party (legal name).',
        default: null,
      },
      {
        name: 'party_2_name',
        type: 'text',
        required: true,
        description: 'Second party (legal name).',
        default: null,
      },
      {
        name: 'effective_date',
        type: 'date',
        required: true,
        description: 'Date the agreement takes effect.',
        default: null,
      },
      {
        name: 'purpose',
        type: 'text',
        required: false,
        description: 'Why information is exchanged.',
        default: 'Evaluating a possible business relationship between the parties.',
      },
      {
        name: 'governing_law',
        type: 'text',
        required: false,
        description: 'Law that governs the agreement.',
        default: 'England and Wales',
      },
      {
        name: 'confidential_topics',
        type: 'list',
        required: false,
        description: 'Topics the confidential information covers.',
        default: null,
      },
    ],
    blocks: [
      { kind: 'title', text: 'Mutual Non-Disclosure Agreement — Cover Page' },
      { kind: 'line', label: 'Party 1: ', text: '{party_1_name}' },
      { kind: 'line', label: 'Party 2: ', text: '{party_2_name}' },
      { kind: 'line', label: 'Effective date: ', text: '{effective_date}' },
      { kind: 'line', label: 'Purpose: ', text: '{purpose}' },
      { kind: 'line', label: 'Governing law: ', text: '{governing_law}' },
      { kind: 'heading', text: 'Confidential topics' },
      { kind: 'list', field: 'confidential_topics' },
      { kind: 'line', text: 'Each party signs to accept the standard terms this cover page refers to.' },
    ],
  },
  {
    template_id: 'consulting-sow',
    name: 'Consulting statement of work',
    description:
      'Statement of work for a consulting engagement: the parties, the dates, the deliverables and the fee.',
    fields: [
      {
        name: 'client_name',
        type: 'text',
        required: true,
        description: 'Client (legal name).',
        default: null,
      },
      {
        name: 'consultant_name',
        type: 'text',
        required: true,
        description: 'Consultant (legal name).',
        default: null,
      },
      {
        name: 'start_date',
        type: 'date',
        required: true,
        description: 'First day of the engagement.',
        default: null,
      },
      {
        name: 'end_date',
        type: 'date',
        required: false,
        description: 'Last day of the engagement.',
        default: null,
      },
      {
        name: 'deliverables',
        type: 'list',
        required: true,
        description: 'What the consultant delivers.',
        default: null,
      },
      {
        name: 'fee',
        type: 'text',
        required: false,
        description: 'Fee and how it is paid.',
        default: 'As agreed in writing.',
      },
    ],
    blocks: [
      { kind: 'title', text: 'Statement of Work' },
      { kind: 'line', label: 'Client: ', text: '{client_name}' },
      { kind: 'line', label: 'Consultant: ', text: '{consultant_name}' },
      { kind: 'line', label: 'Start date: ', text: '{start_date}' },
      { kind: 'line', label: 'End date: ', text: '{end_date}' },
      { kind: 'heading', text: 'Deliverables' },
      { kind: 'list', field: 'deliverables' },
      { kind: 'line', label: 'Fee: ', text: '{fee}' },
    ],
  },
  {
    template_id: 'meeting-minutes',
    name: 'Meeting minutes',
    description:
      'Minutes of a meeting: its title and date, who attended, what was decided and who does what next.',
    fields: [
      {
        name: 'meeting_title',
        type: 'text',
        required: true,
        description: 'What the meeting was.',
        default: null,
      },
      {
        name: 'meeting_date',
        type: 'date',
        required: true,
        description: 'Date of the meeting.',
        default: null,
      },
      { name: 'attendees', type: 'list', required: true, description: 'Who attended.', default: null },
      { name: 'decisions', type: 'list', required: false, description: 'What was decided.', default: null },
      {
        name: 'action_items',
        type: 'list',
        required: false,
        description: 'Who does what next.',
        default: null,
      },
      {
        name: 'notes',
        type: 'text',
        required: false,
        description: 'Anything else worth keeping.',
        default: '',
      },
    ],
    blocks: [
      { kind: 'title', text: 'Minutes: {meeting_title}' },
      { kind: 'line', label: 'Date: ', text: '{meeting_date}' },
      { kind: 'heading', text: 'Attendees' },
      { kind: 'list', field: 'attendees' },
      { kind: 'heading', text: 'Decisions' },
      { kind: 'list', field: 'decisions' },
      { kind: 'heading', text: 'Action items' },
      { kind: 'list', field: 'action_items' },
      { kind: 'heading', text: 'Notes' },
      { kind: 'line', text: '{notes}' },
    ],
  },
];

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function run(text: string, props = ''): string {
  const rPr = props ? `<w:rPr>${props}</w:rPr>` : '';
  return `<w:r>${rPr}<w:t xml:space="preserve">${escapeXml(text)}</w:t></w:r>`;
}

function paragraph(runs: string, spacingAfter = 120): string {
  return `<w:p><w:pPr><w:spacing w:after="${spacingAfter}"/></w:pPr>${runs}</w:p>`;
}

function blockXml(block: Block): string {
  switch (block.kind) {
    case 'title':
      return paragraph(run(block.text, '<w:b/><w:sz w:val="36"/>'), 360);
    case 'heading':
      return paragraph(run(block.text, '<w:b/><w:sz w:val="28"/>'), 120);
    case 'line':
      return paragraph((block.label ? run(block.label, '<w:b/>') : '') + run(block.text));
    case 'list':
      // A paragraph loop: the middle paragraph is repeated once per item.
      return [
        paragraph(run(`{#${block.field}}`), 0),
        paragraph(run('\u2022 {.}'), 60),
        paragraph(run(`{/${block.field}}`), 0),
      ].join('');
  }
}

export function documentXml(blocks: Block[]): string {
  return (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
    `<w:document xmlns:w="${W}"><w:body>` +
    blocks.map(blockXml).join('') +
    '<w:sectPr><w:pgSz w:w="11906" w:h="16838"/>' +
    '<w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/>' +
    '</w:sectPr></w:body></w:document>'
  );
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
  '</Types>';

const PACKAGE_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
  '</Relationships>';

const DOCUMENT_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>';

/** A fixed date for every ZIP entry, so the bytes depend on the content only. */
const ZIP_DATE = new Date(Date.UTC(2026, 0, 1));

/** The bytes of a .docx whose body is `xml` (a whole word/document.xml). */
export function docxBytes(xml: string): Buffer {
  const zip = new PizZip();
  const options = { date: ZIP_DATE, createFolders: false };
  zip.file('[Content_Types].xml', CONTENT_TYPES, options);
  zip.file('_rels/.rels', PACKAGE_RELS, options);
  zip.file('word/document.xml', xml, options);
  zip.file('word/_rels/document.xml.rels', DOCUMENT_RELS, options);
  return zip.generate({ type: 'nodebuffer', compression: 'DEFLATE' });
}

/** Writes `<id>.docx` and `<id>.json` for a template given as its document.xml and metadata. */
export function writeTemplate(dir: string, definition: TemplateDefinition, xml: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${definition.template_id}.docx`), docxBytes(xml));
  writeFileSync(join(dir, `${definition.template_id}.json`), `${JSON.stringify(definition, null, 2)}\n`);
}

if (import.meta.main) {
  const outDir = process.argv[2] ?? new URL('./templates/', import.meta.url).pathname;
  for (const { blocks, ...definition } of TEMPLATES) {
    writeTemplate(outDir, definition, documentXml(blocks));
    process.stdout.write(`wrote ${join(outDir, definition.template_id)}.docx and .json\n`);
  }
}
