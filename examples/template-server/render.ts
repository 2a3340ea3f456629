/**
 * Fills a template's .docx with docxtemplater. Templates cannot run code: the
 * default parser only looks a tag up as an own member of the data (no
 * expressions, no angular-expressions, no prototype), and the data object has
 * no prototype. A tag the data does not answer is written back as it stands in
 * the template (`{a+b}` stays `{a+b}`), so a template that tries an
 * expression shows it instead of running it. Values are written as text,
 * never parsed as tags.
 */
import Docxtemplater from 'docxtemplater';
import PizZip from 'pizzip';
import type { Template } from './catalog.ts';
import { ToolFailure } from './failure.ts';
import type { RenderData } from './values.ts';

export const DOCX_MEDIA_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

interface TagPart {
  value: string;
  module?: string;
}

function options() {
  return {
    // `{#items}` and `{/items}` alone in their paragraphs repeat the paragraphs between them.
    paragraphLoop: true,
    // A line break in a text value is a line break in the document.
    linebreaks: true,
    // Only placeholders (no loop module): the tag as written; a loop without data: nothing.
    nullGetter: (part: TagPart) => (part.module ? '' : `{${part.value}}`),
    errorLogging: false,
  };
}

function explain(error: unknown): string {
  const properties = (
    error as { properties?: { errors?: { properties?: { explanation?: string } }[]; explanation?: string } }
  ).properties;
  const first = properties?.errors?.[0]?.properties?.explanation ?? properties?.explanation;
  return first ?? (error instanceof Error ? error.message : String(error));
}

/** Compiles a template once (at startup), so a broken one is found before any call. */
export function assertRenderable(template: Template): void {
  try {
    new Docxtemplater(new PizZip(template.docx), options());
  } catch (error) {
    throw new Error(`Template ${template.template_id} cannot be compiled: ${explain(error)}`);
  }
}

/** The filled document's bytes. */
export function renderDocx(template: Template, data: RenderData): Buffer {
  try {
    const doc = new Docxtemplater(new PizZip(template.docx), options());
    doc.render(data);
    return doc.getZip().generate({ type: 'nodebuffer', compression: 'DEFLATE' });
  } catch (error) {
    throw new ToolFailure(
      'INVALID_ARGUMENT',
      `Template ${template.template_id} could not be filled: ${explain(error)}`,
    );
  }
}
