/**
 * The template catalog: every `<id>.json` of the templates folder with the
 * `<id>.docx` beside it, loaded once at startup, sorted by template_id, and
 * the pages list_templates answers with.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The kinds of field a template can have:
 * - `text`: a string, written as given (line breaks kept);
 * - `date`: an ISO 8601 calendar date (`YYYY-MM-DD`), written as "24 November 2026";
 * - `list`: an array of strings, written one paragraph per item.
 */
export const FIELD_TYPES = ['text', 'date', 'list'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface FieldDefinition {
  name: string;
  type: FieldType;
  required: boolean;
  description: string;
  /** What is written when the caller gives no value (null: nothing). */
  default: string | null;
}

export interface TemplateDefinition {
  template_id: string;
  name: string;
  description: string;
  fields: FieldDefinition[];
}

export interface Template extends TemplateDefinition {
  docx: Buffer;
}

/** Template ids and field names: plain identifiers, so no tag or path can hide in one. */
const TEMPLATE_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;
const FIELD_NAME = /^[a-z][a-z0-9_]{0,63}$/;

function checkedDefinition(value: unknown, file: string): TemplateDefinition {
  const fail = (why: string): never => {
    throw new Error(`${file}: ${why}`);
  };
  if (typeof value !== 'object' || value === null) return fail('not a JSON object');
  const { template_id, name, description, fields } = value as Record<string, unknown>;
  if (typeof template_id !== 'string' || !TEMPLATE_ID.test(template_id))
    fail('template_id is not an identifier');
  if (typeof name !== 'string' || typeof description !== 'string')
    fail('name and description must be strings');
  if (!Array.isArray(fields)) return fail('fields must be an array');
  const seen = new Set<string>();
  for (const field of fields as Record<string, unknown>[]) {
    if (typeof field.name !== 'string' || !FIELD_NAME.test(field.name))
      fail('a field name is not an identifier');
    if (seen.has(field.name as string)) fail(`field ${field.name} appears twice`);
    seen.add(field.name as string);
    if (!FIELD_TYPES.includes(field.type as FieldType)) fail(`field ${field.name} has an unknown type`);
    if (typeof field.required !== 'boolean' || typeof field.description !== 'string')
      fail(`field ${field.name} needs required and description`);
    if (field.default !== null && typeof field.default !== 'string')
      fail(`field ${field.name}: default must be a string or null`);
  }
  return value as TemplateDefinition;
}

/** Loads every template of `dir`; a malformed one stops the server at startup rather than at a call. */
export function loadCatalog(dir: string): Catalog {
  const templates: Template[] = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.json'))) {
    const definition = checkedDefinition(JSON.parse(readFileSync(join(dir, file), 'utf8')), file);
    if (`${definition.template_id}.json` !== file)
      throw new Error(`${file}: template_id must match the file name`);
    templates.push({ ...definition, docx: readFileSync(join(dir, `${definition.template_id}.docx`)) });
  }
  templates.sort((a, b) => (a.template_id < b.template_id ? -1 : 1));
  return new Catalog(templates);
}

export class InvalidCursorError extends Error {}

export interface Page {
  templates: Template[];
  next_cursor: string | null;
  total_count: number;
}

/** Largest page list_templates returns, and the one it returns when not told. */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 25;
const MAX_CURSOR_CHARS = 512;

export class Catalog {
  readonly templates: readonly Template[];
  readonly #byId: Map<string, Template>;
  constructor(templates: readonly Template[]) {
    this.templates = templates;
    this.#byId = new Map(templates.map((template) => [template.template_id, template]));
  }

  get(templateId: string): Template | undefined {
    return this.#byId.get(templateId);
  }

  /**
   * One page after the position a cursor names. The cursor is opaque to callers:
   * base64url of `{"after":"<template_id>"}`, the last id of the previous page, so a
   * page stays correct when templates are added between calls.
   */
  page(cursor: string | undefined, limit: number): Page {
    let start = 0;
    if (cursor !== undefined) {
      const after = decodeCursor(cursor);
      start = this.templates.findIndex((template) => template.template_id > after);
      if (start === -1) throw new InvalidCursorError('Invalid cursor: points beyond the end of the catalog');
    }
    const templates = this.templates.slice(start, start + limit);
    const last = templates.at(-1);
    const more = last !== undefined && start + templates.length < this.templates.length;
    return {
      templates,
      next_cursor: more ? encodeCursor(last.template_id) : null,
      total_count: this.templates.length,
    };
  }
}

function encodeCursor(after: string): string {
  return Buffer.from(JSON.stringify({ after }), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw new InvalidCursorError('Invalid cursor: not a cursor this server issued');
  }
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError('Invalid cursor: malformed payload');
  }
  const after = (decoded as { after?: unknown } | null)?.after;
  if (typeof after !== 'string' || !TEMPLATE_ID.test(after)) {
    throw new InvalidCursorError('Invalid cursor: malformed payload');
  }
  return after;
}
