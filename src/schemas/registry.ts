import type { AnySchema, ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { digestValue } from '../canonical/digest.ts';
import { EnvelopeError } from '../errors/index.ts';
import { escapeToken } from '../pointer/json-pointer.ts';
import { BUNDLED_SCHEMAS } from './catalog.ts';

// ajv-formats is CommonJS with a default export that TypeScript sees as the module.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export interface SchemaIssue {
  /** JSON Pointer of the offending value (for an unexpected member: the member itself). */
  pointer: string;
  message: string;
  keyword: string;
  schemaPath: string;
  params: Record<string, unknown>;
}

export type ValidationResult = { valid: true; issues: [] } | { valid: false; issues: SchemaIssue[] };

export type Validator = ((value: unknown) => ValidationResult) & { readonly fingerprint: string };

function toIssue(error: ErrorObject): SchemaIssue {
  let pointer = error.instancePath;
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    pointer += `/${escapeToken(params.additionalProperty)}`;
  }
  let message = error.message ?? error.keyword;
  if (error.keyword === 'required')
    message = `is missing required member "${String(params.missingProperty)}"`;
  if (error.keyword === 'additionalProperties')
    message = 'is not allowed here (additionalProperties is false)';
  if (error.keyword === 'const') message = `must equal ${JSON.stringify(params.allowedValue)}`;
  if (error.keyword === 'enum') message = `must be one of ${JSON.stringify(params.allowedValues)}`;
  return { pointer, message, keyword: error.keyword, schemaPath: error.schemaPath, params };
}

/**
 * Compiled JSON Schema 2020-12 validators, compiled once and cached by the
 * SHA-256 of the schema's canonical form (so equal schemas from different
 * sources share one validator). All bundled schemas are registered up front,
 * so `$ref`s between them resolve; compilation itself is lazy.
 */
export class SchemaRegistry {
  private readonly ajv: Ajv2020;
  private readonly byFingerprint = new Map<string, Validator>();
  private readonly byObject = new WeakMap<object, Validator>();
  private readonly byId = new Map<string, Validator>();

  constructor(options: { bundled?: boolean } = {}) {
    this.ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true, validateFormats: true });
    addFormats(this.ajv);
    if (options.bundled !== false) {
      for (const { schema } of BUNDLED_SCHEMAS) this.ajv.addSchema(schema);
    }
  }

  /** Registers a schema under its `$id` so that others can `$ref` it. */
  register(schema: Record<string, unknown> & { $id: string }): void {
    if (!this.ajv.getSchema(schema.$id)) this.ajv.addSchema(schema);
  }

  has(id: string): boolean {
    return this.ajv.getSchema(id) !== undefined;
  }

  /** The validator for a registered schema id. Throws SCHEMA_NOT_FOUND for an unknown id. */
  validatorFor(id: string): Validator {
    const cached = this.byId.get(id);
    if (cached) return cached;
    let compiled: ValidateFunction | undefined;
    try {
      compiled = this.ajv.getSchema(id);
    } catch (error) {
      throw new EnvelopeError(
        'SCHEMA_INVALID',
        `Schema ${id} does not compile: ${(error as Error).message}`,
        {
          schema: id,
        },
      );
    }
    if (!compiled)
      throw new EnvelopeError('SCHEMA_NOT_FOUND', `No schema is registered as "${id}"`, { schema: id });
    const validator = wrap(compiled, digestValue(compiled.schema).value);
    this.byId.set(id, validator);
    return validator;
  }

  /**
   * The validator for a schema given as a value (a tool's inputSchema, say).
   * Cached by object identity first, then by fingerprint.
   */
  validatorForSchema(schema: AnySchema): Validator {
    if (typeof schema === 'object' && schema !== null) {
      const known = this.byObject.get(schema);
      if (known) return known;
    }
    const fingerprint = digestValue(schema).value;
    let validator = this.byFingerprint.get(fingerprint);
    if (!validator) {
      let compiled: ValidateFunction;
      try {
        compiled = this.ajv.compile(stripId(schema));
      } catch (error) {
        throw new EnvelopeError('SCHEMA_INVALID', `Schema does not compile: ${(error as Error).message}`, {
          fingerprint,
        });
      }
      validator = wrap(compiled, fingerprint);
      this.byFingerprint.set(fingerprint, validator);
    }
    if (typeof schema === 'object' && schema !== null) this.byObject.set(schema, validator);
    return validator;
  }

  validate(id: string, value: unknown): ValidationResult {
    return this.validatorFor(id)(value);
  }

  /** Throws SCHEMA_INVALID with every issue when `value` does not match. */
  assertValid(id: string, value: unknown, what = id): void {
    const result = this.validate(id, value);
    if (!result.valid) throw schemaError(what, result.issues);
  }
}

/**
 * Schemas given as values are compiled anonymously: two different tools may
 * ship schemas with the same `$id`, and Ajv refuses a second schema per id.
 */
function stripId(schema: AnySchema): AnySchema {
  if (typeof schema !== 'object' || schema === null || !('$id' in schema)) return schema;
  const { $id: _ignored, ...rest } = schema as Record<string, unknown>;
  return rest;
}

function wrap(compiled: ValidateFunction, fingerprint: string): Validator {
  const validator = (value: unknown): ValidationResult =>
    compiled(value)
      ? { valid: true, issues: [] }
      : { valid: false, issues: (compiled.errors ?? []).map(toIssue) };
  return Object.assign(validator, { fingerprint });
}

export function schemaError(what: string, issues: readonly SchemaIssue[]): EnvelopeError {
  const first = issues[0];
  const summary = first ? `${first.pointer || '/'} ${first.message}` : 'does not match';
  return new EnvelopeError('SCHEMA_INVALID', `Not a valid ${what}: ${summary}`, {
    pointer: first?.pointer ?? '',
    issues: issues.map(({ pointer, message, keyword }) => ({ pointer, message, keyword })),
  });
}

let shared: SchemaRegistry | undefined;

/** The process-wide registry with every bundled schema. */
export function defaultRegistry(): SchemaRegistry {
  shared ??= new SchemaRegistry();
  return shared;
}
