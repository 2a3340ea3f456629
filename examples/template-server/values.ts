/**
 * Checks the values a caller gives fill_template against the template's
 * fields and turns them into what the renderer writes. Values are data: they
 * are never parsed as template syntax (docxtemplater writes them as text), and
 * everything that could not be written into a well-formed document is refused
 * here, with the field it concerns.
 */
import type { FieldDefinition, Template } from './catalog.ts';
import { ToolFailure } from './failure.ts';

/**
 * Size limits, so that one call cannot make the server build a huge document:
 * a text value holds at most 10,000 characters, a list at most 200 items of at
 * most 1,000 characters each.
 */
export const LIMITS = Object.freeze({ textChars: 10_000, listItems: 200, itemChars: 1_000 });

/** What the renderer receives: one entry per field of the template, nothing else. */
export type RenderData = Record<string, string | string[]>;

export interface CheckedValues {
  data: RenderData;
  /** Fields the caller gave a value for. */
  filled: string[];
  /** Optional fields the caller left out (their default, or nothing, is written). */
  missing: string[];
}

interface Issue {
  path: string;
  message: string;
  [detail: string]: unknown;
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** Whether a string holds a character XML 1.0 cannot (C0 controls but tab, line feed and carriage return; U+FFFE, U+FFFF). */
function hasCharacterXmlCannotHold(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (
      (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) ||
      code === 0xfffe ||
      code === 0xffff
    ) {
      return true;
    }
  }
  return false;
}

/** Why a string cannot be written into the document, if it cannot. */
function unwritable(text: string): string | undefined {
  if (!text.isWellFormed()) return 'contains a lone UTF-16 surrogate';
  if (hasCharacterXmlCannotHold(text)) return 'contains a control character a document cannot hold';
  return undefined;
}

/** `YYYY-MM-DD`, a real calendar date, as "24 November 2026"; undefined when it is not one. */
export function formatDate(value: string): string | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    return undefined;
  }
  return `${day} ${MONTHS[month - 1]} ${year}`;
}

/** A given value is empty when it says nothing: null, blank text, an empty list. */
function isEmpty(value: unknown): boolean {
  return (
    value === null ||
    (typeof value === 'string' && value.trim() === '') ||
    (Array.isArray(value) && value.length === 0)
  );
}

function checkText(field: FieldDefinition, value: unknown, issues: Issue[]): string | undefined {
  const path = `values.${field.name}`;
  if (typeof value !== 'string') {
    issues.push({ path, message: `${field.name} must be a string (${field.type} field)` });
    return undefined;
  }
  if (value.length > LIMITS.textChars) {
    issues.push({
      path,
      message: `${field.name} is longer than ${LIMITS.textChars} characters`,
      limit: LIMITS.textChars,
    });
    return undefined;
  }
  const why = unwritable(value);
  if (why) {
    issues.push({ path, message: `${field.name} ${why}` });
    return undefined;
  }
  return value;
}

function checkValue(field: FieldDefinition, value: unknown, issues: Issue[]): string | string[] | undefined {
  const path = `values.${field.name}`;
  switch (field.type) {
    case 'text':
      return checkText(field, value, issues);
    case 'date': {
      if (typeof value !== 'string') {
        issues.push({ path, message: `${field.name} must be an ISO 8601 date string (YYYY-MM-DD)` });
        return undefined;
      }
      const formatted = formatDate(value);
      if (formatted === undefined)
        issues.push({ path, message: `${field.name} is not an ISO 8601 calendar date (YYYY-MM-DD)` });
      return formatted;
    }
    case 'list': {
      if (!Array.isArray(value)) {
        issues.push({ path, message: `${field.name} must be an array of strings (list field)` });
        return undefined;
      }
      if (value.length > LIMITS.listItems) {
        issues.push({
          path,
          message: `${field.name} has more than ${LIMITS.listItems} items`,
          limit: LIMITS.listItems,
        });
        return undefined;
      }
      const items: string[] = [];
      for (const [index, item] of value.entries()) {
        const itemPath = `${path}.${index}`;
        if (typeof item !== 'string') {
          issues.push({ path: itemPath, message: `${field.name}[${index}] must be a string` });
        } else if (item.length > LIMITS.itemChars) {
          issues.push({
            path: itemPath,
            message: `${field.name}[${index}] is longer than ${LIMITS.itemChars} characters`,
            limit: LIMITS.itemChars,
          });
        } else {
          const why = unwritable(item);
          if (why) issues.push({ path: itemPath, message: `${field.name}[${index}] ${why}` });
          else items.push(item);
        }
      }
      return items;
    }
  }
}

/** The value written for a field the caller left out. */
function defaultOf(field: FieldDefinition): string | string[] {
  if (field.type === 'list') return [];
  if (field.default === null) return '';
  return field.type === 'date' ? (formatDate(field.default) ?? field.default) : field.default;
}

/**
 * Checks `values` (the caller's object, as parsed from JSON) against the
 * template: a value of the wrong kind, too large, not writable, or for a field
 * the template does not have is INVALID_ARGUMENT (every issue listed in
 * `details.issues`); required fields without a value are MISSING_REQUIRED_FIELDS
 * (`details.missing_fields`).
 */
/** Issues an INVALID_ARGUMENT answer lists at most; `issues_total` then says how many there were. */
export const MAX_ISSUES_LISTED = 20;

export function checkValues(template: Template, values: Record<string, unknown>): CheckedValues {
  const issues: Issue[] = [];
  const fields = new Map(template.fields.map((field) => [field.name, field]));
  // Own keys only (a `__proto__` key from JSON is an own key like any other): none is looked up on a prototype.
  for (const key of Object.keys(values)) {
    if (!fields.has(key)) {
      const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
      issues.push({
        path: `values.${shown}`,
        message: `${template.template_id} has no field named ${JSON.stringify(shown)}`,
      });
    }
  }
  // The renderer resolves tags in this object only: no prototype, so no inherited member can answer a tag.
  const data: RenderData = Object.create(null);
  const filled: string[] = [];
  const missing: string[] = [];
  const missingRequired: string[] = [];
  for (const field of template.fields) {
    const given = Object.hasOwn(values, field.name) ? values[field.name] : undefined;
    if (given === undefined || isEmpty(given)) {
      if (field.required) missingRequired.push(field.name);
      else missing.push(field.name);
      data[field.name] = defaultOf(field);
      continue;
    }
    const checked = checkValue(field, given, issues);
    if (checked !== undefined) {
      data[field.name] = checked;
      filled.push(field.name);
    }
  }
  if (issues.length > 0) {
    const [first] = issues;
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    // The answer is bounded whatever the question: a million unknown keys in gave 15 MiB of issues out.
    const listed = issues.slice(0, MAX_ISSUES_LISTED);
    throw new ToolFailure(
      'INVALID_ARGUMENT',
      `Invalid values for ${template.template_id}: ${first?.message}${more}`,
      {
        issues: listed,
        ...(issues.length > listed.length ? { issues_total: issues.length } : {}),
        limits: LIMITS,
      },
    );
  }
  if (missingRequired.length > 0) {
    throw new ToolFailure(
      'MISSING_REQUIRED_FIELDS',
      `Missing required fields: ${missingRequired.join(', ')}`,
      {
        missing_fields: missingRequired,
      },
    );
  }
  return { data, filled, missing };
}
