/**
 * The tools' arguments: the JSON Schemas tools/list advertises, and the checks
 * the tools run themselves, so that every refusal is INVALID_ARGUMENT with the
 * argument it concerns (seed 003's taxonomy), as the real hosted server
 * answered, rather than the pipeline's generic INVALID_INPUT.
 */
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './catalog.ts';
import { ToolFailure } from './failure.ts';

export const RETURN_MODES = ['url', 'base64_docx', 'mcp_resource'] as const;
export type ReturnMode = (typeof RETURN_MODES)[number];

type JsonSchema = Record<string, unknown>;

/**
 * A Standard Schema that advertises `schema` and accepts any value: the tool
 * checks its arguments itself (`withEnvelope` runs with input validation off).
 */
function advertised(schema: JsonSchema): StandardSchemaWithJSON<Record<string, unknown>> {
  return {
    '~standard': {
      version: 1,
      vendor: 'template-server',
      validate: (value) => ({ value: value as Record<string, unknown> }),
      jsonSchema: { input: () => schema, output: () => schema },
    },
  };
}

const TEMPLATE_ID = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  description: 'Template id, e.g. "mutual-nda-cover".',
};

export const INPUT_SCHEMAS = {
  list_templates: advertised({
    type: 'object',
    properties: {
      mode: {
        type: 'string',
        enum: ['full', 'compact'],
        description: 'Detail of each entry; default "full".',
      },
      cursor: {
        type: 'string',
        minLength: 1,
        maxLength: 512,
        description: 'next_cursor of the previous page; omit for the first.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_PAGE_SIZE,
        description: `Templates per page; default ${DEFAULT_PAGE_SIZE}.`,
      },
    },
    additionalProperties: false,
  }),
  get_template: advertised({
    type: 'object',
    properties: { template_id: TEMPLATE_ID },
    required: ['template_id'],
    additionalProperties: false,
  }),
  fill_template: advertised({
    type: 'object',
    properties: {
      template_id: TEMPLATE_ID,
      template: {
        ...TEMPLATE_ID,
        description: 'The same as template_id (the name earlier hosted servers used).',
      },
      values: {
        type: 'object',
        description:
          'Field values by field name: text and date (YYYY-MM-DD) fields take strings, list fields arrays of strings.',
        additionalProperties: {
          anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }],
        },
      },
      return_mode: {
        type: 'string',
        enum: [...RETURN_MODES],
        description: 'How the document comes back; default "url".',
      },
    },
    additionalProperties: false,
  }),
  download_filled: advertised({
    type: 'object',
    properties: {
      download_id: { type: 'string', minLength: 1, description: 'download_id from fill_template.' },
    },
    required: ['download_id'],
    additionalProperties: false,
  }),
};

function invalid(tool: string, path: string, message: string): ToolFailure {
  return new ToolFailure('INVALID_ARGUMENT', `Invalid arguments for ${tool}: ${message}`, {
    issues: [{ path, message }],
  });
}

function checkKnown(tool: string, args: Record<string, unknown>, known: readonly string[]): void {
  for (const key of Object.keys(args)) {
    if (!known.includes(key)) {
      const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
      throw invalid(tool, shown, `unknown argument ${JSON.stringify(shown)}`);
    }
  }
}

function optionalString(
  tool: string,
  args: Record<string, unknown>,
  name: string,
  max: number,
): string | undefined {
  const value = args[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw invalid(tool, name, `${name} must be a non-empty string of at most ${max} characters`);
  }
  return value;
}

function requiredString(tool: string, args: Record<string, unknown>, name: string, max: number): string {
  const value = optionalString(tool, args, name, max);
  if (value === undefined) throw invalid(tool, name, `${name} is required`);
  return value;
}

export interface ListArguments {
  mode: 'full' | 'compact';
  cursor: string | undefined;
  limit: number;
}

export function listArguments(args: Record<string, unknown>): ListArguments {
  const tool = 'list_templates';
  checkKnown(tool, args, ['mode', 'cursor', 'limit']);
  const mode = args.mode ?? 'full';
  if (mode !== 'full' && mode !== 'compact') throw invalid(tool, 'mode', 'mode must be "full" or "compact"');
  const limit = args.limit ?? DEFAULT_PAGE_SIZE;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw invalid(tool, 'limit', `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  return { mode, cursor: optionalString(tool, args, 'cursor', 512), limit };
}

export function templateIdArgument(args: Record<string, unknown>): string {
  checkKnown('get_template', args, ['template_id']);
  return requiredString('get_template', args, 'template_id', 64);
}

export interface FillArguments {
  templateId: string;
  values: Record<string, unknown>;
  returnMode: ReturnMode;
}

export function fillArguments(args: Record<string, unknown>): FillArguments {
  const tool = 'fill_template';
  checkKnown(tool, args, ['template_id', 'template', 'values', 'return_mode']);
  // template_id first; `template` is what the earlier hosted servers called it.
  const templateId =
    optionalString(tool, args, 'template_id', 64) ?? optionalString(tool, args, 'template', 64);
  if (templateId === undefined) throw invalid(tool, 'template_id', 'template_id (or template) is required');
  const values = args.values ?? {};
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    throw invalid(tool, 'values', 'values must be an object of field values');
  }
  const returnMode = args.return_mode ?? 'url';
  if (!RETURN_MODES.includes(returnMode as ReturnMode)) {
    throw invalid(tool, 'return_mode', `return_mode must be one of ${RETURN_MODES.join(', ')}`);
  }
  return { templateId, values: values as Record<string, unknown>, returnMode: returnMode as ReturnMode };
}

export function downloadIdArgument(args: Record<string, unknown>): string {
  checkKnown('download_filled', args, ['download_id']);
  return requiredString('download_filled', args, 'download_id', 1024);
}
