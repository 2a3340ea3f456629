import type { AnySchema, ErrorObject, SchemaValidateFunction, ValidateFunction } from 'ajv';
import { Ajv } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Options as AjvOptions } from 'ajv/dist/core.js';
import draft06MetaSchema from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types/index.js';
import AjvDraft04Module from 'ajv-draft-04';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';
import { digestValue } from '../canonical/digest.ts';
import { EnvelopeError } from '../errors/index.ts';
import { escapeToken } from '../pointer/json-pointer.ts';
import { BUNDLED_SCHEMAS } from './catalog.ts';

// ajv-formats and ajv-draft-04 are CommonJS with a default export that TypeScript sees as the module.
const addFormats = addFormatsModule as unknown as (ajv: AjvCore) => AjvCore;
const AjvDraft04 = AjvDraft04Module as unknown as new (options: AjvOptions) => AjvCore;

/** What every draft's Ajv class shares (they all extend Ajv's core). */
type AjvCore = Ajv | Ajv2019 | Ajv2020;

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

/** The longest `pattern` (or `patternProperties` name) a schema from outside may hold. */
export const MAX_SCHEMA_PATTERN_CHARS = 4096;

/** Every `pattern` and `patternProperties` name in a schema, walked iteratively. */
function patternsIn(schema: unknown, into: Set<string>): void {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== 'object' || current === null) continue;
    const object = current as Record<string, unknown>;
    if (!Array.isArray(current)) {
      if (typeof object.pattern === 'string') into.add(object.pattern);
      const named = object.patternProperties;
      if (typeof named === 'object' && named !== null) for (const name of Object.keys(named)) into.add(name);
    }
    for (const child of Object.values(object)) stack.push(child);
  }
}

/**
 * The regular expression engine for every schema the registry compiles. A
 * pattern of this package's own schemas runs on V8's RegExp. Any other pattern
 * (a tool's inputSchema comes from an upstream) runs on RE2 (re2js, pure
 * JavaScript), whose matching is linear in the input: on V8's backtracking
 * engine `^(a+)+$` takes seconds for 30 characters, and the event loop with
 * it. A pattern RE2 cannot run (backreferences, lookahead) or a longer one
 * than MAX_SCHEMA_PATTERN_CHARS is refused, so its schema does not compile.
 */
function patternEngine(trusted: ReadonlySet<string>): RegExpEngine {
  const engine = (pattern: string, flags: string): RegExpLike => {
    if (trusted.has(pattern)) return new RegExp(pattern, flags);
    if (pattern.length > MAX_SCHEMA_PATTERN_CHARS) {
      throw new EnvelopeError(
        'SCHEMA_INVALID',
        `The pattern is longer than ${MAX_SCHEMA_PATTERN_CHARS} characters; it is refused`,
        { reason: 'pattern_too_long', max_pattern_chars: MAX_SCHEMA_PATTERN_CHARS },
      );
    }
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(RE2JS.translateRegExp(pattern), RE2JS.LOOKBEHINDS);
    } catch (error) {
      throw new EnvelopeError(
        'SCHEMA_INVALID',
        `The pattern ${JSON.stringify(pattern)} cannot be matched in linear time (${(error as Error).message}); it is refused`,
        { reason: 'pattern_unsafe', pattern },
      );
    }
    // Ajv shares compiled patterns by their toString(): it must tell patterns apart.
    const key = `re2:/${pattern}/${flags}`;
    const like: RegExpLike & { toString(): string } = {
      test: (text) => compiled.test(text),
      toString: () => key,
    };
    return like;
  };
  return Object.assign(engine, { code: 'mcpEnvelopeRe2' });
}

/** The JSON Schema drafts a schema from outside may be written in, chosen by its `$schema`. */
export type SchemaDraft = 'draft-04' | 'draft-06' | 'draft-07' | '2019-09' | '2020-12';

/** Meta-schema URIs, without the empty fragment and scheme-insensitive, to the draft they name. */
const DRAFT_BY_URI: ReadonlyMap<string, SchemaDraft> = new Map([
  ['json-schema.org/draft-04/schema', 'draft-04'],
  ['json-schema.org/draft-06/schema', 'draft-06'],
  ['json-schema.org/draft-07/schema', 'draft-07'],
  ['json-schema.org/draft/2019-09/schema', '2019-09'],
  ['json-schema.org/draft/2020-12/schema', '2020-12'],
]);

/**
 * The draft a schema is written in: its `$schema`, else 2020-12 (the MCP
 * specification's default). A `$schema` naming no draft is undefined.
 */
export function schemaDraftOf(schema: unknown): SchemaDraft | undefined {
  if (typeof schema !== 'object' || schema === null || !('$schema' in schema)) return '2020-12';
  const uri = (schema as { $schema: unknown }).$schema;
  if (typeof uri !== 'string') return undefined;
  const key = uri
    .trim()
    .replace(/^https?:\/\//, '')
    .replace(/#$/, '');
  return DRAFT_BY_URI.get(key);
}

/** Options every Ajv instance shares: every error, lenient about unknown keywords, formats checked. */
const AJV_OPTIONS = { allErrors: true, strict: false, allowUnionTypes: true, validateFormats: true } as const;

/**
 * A key equal for exactly the values JSON Schema calls equal: members in any
 * order, numbers by value (JSON.parse already made 1.0 and 1 one number).
 */
function equalityKey(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(equalityKey).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${equalityKey(object[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/**
 * `uniqueItems` in linear time. Ajv compares every pair of items of an
 * array of objects: 40,000 items took 18 s on the one event loop, every
 * other client waiting. Keyed by equalityKey instead, the check is one pass.
 */
function linearUniqueItems(ajv: AjvCore): void {
  ajv.removeKeyword('uniqueItems');
  const validate: SchemaValidateFunction = (unique: boolean, data: unknown[]) => {
    validate.errors = [];
    if (!unique) return true;
    const seen = new Map<string, number>();
    for (let i = 0; i < data.length; i++) {
      const key = equalityKey(data[i]);
      const j = seen.get(key);
      if (j !== undefined) {
        validate.errors = [
          {
            keyword: 'uniqueItems',
            message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
            params: { i, j },
          },
        ];
        return false;
      }
      seen.set(key, i);
    }
    return true;
  };
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate });
}

/** An Ajv instance for schemas from outside in one draft; nothing it compiles is kept by `$id`. */
function externalAjv(draft: SchemaDraft, engine: RegExpEngine): AjvCore {
  // addUsedSchema off: two tools may declare the same `$id` inside their schemas.
  const options: AjvOptions = { ...AJV_OPTIONS, addUsedSchema: false, code: { regExp: engine } };
  let ajv: AjvCore;
  if (draft === 'draft-04') ajv = new AjvDraft04(options);
  else if (draft === '2019-09') ajv = new Ajv2019(options);
  else if (draft === '2020-12') ajv = new Ajv2020(options);
  else {
    ajv = new Ajv(options);
    if (draft === 'draft-06') ajv.addMetaSchema(draft06MetaSchema);
  }
  addFormats(ajv);
  linearUniqueItems(ajv);
  return ajv;
}

/**
 * Compiled JSON Schema validators, compiled once and cached by the SHA-256 of
 * the schema's canonical form (so equal schemas from different sources share
 * one validator). The package's own schemas are 2020-12, all registered up
 * front so that `$ref`s between them resolve; compilation itself is lazy.
 * Schemas given as values (a tool's, from an upstream) are compiled in the
 * draft their `$schema` names (draft-04, -06, -07, 2019-09, 2020-12; 2020-12
 * when absent), each draft on its own Ajv instance, and never fetch a remote
 * `$ref`. A schema that does not compile fails the same way every time.
 */
export class SchemaRegistry {
  private readonly ajv: Ajv2020;
  /** One instance per draft for schemas from outside, made when first needed. */
  private readonly external = new Map<SchemaDraft, AjvCore>();
  private readonly byFingerprint = new Map<string, Validator>();
  /** Schemas that did not compile, with why: Ajv caches a schema before it checks it, so a retry could pass. */
  private readonly refusedByFingerprint = new Map<string, EnvelopeError>();
  private readonly byObject = new WeakMap<object, Validator | EnvelopeError>();
  private readonly byId = new Map<string, Validator>();
  /** The patterns of the schemas registered by id: this package's own, run on V8's RegExp. */
  private readonly trustedPatterns = new Set<string>();
  private readonly untrustedPatterns = patternEngine(new Set());

  constructor(options: { bundled?: boolean } = {}) {
    this.ajv = new Ajv2020({ ...AJV_OPTIONS, code: { regExp: patternEngine(this.trustedPatterns) } });
    addFormats(this.ajv);
    if (options.bundled !== false) {
      for (const { schema } of BUNDLED_SCHEMAS) {
        patternsIn(schema, this.trustedPatterns);
        this.ajv.addSchema(schema);
      }
    }
  }

  /**
   * Registers a schema under its `$id` so that others can `$ref` it. Its patterns
   * are trusted (run on V8's RegExp): register the package's own schemas, or
   * ones the caller vouches for, never a schema from outside.
   */
  register(schema: Record<string, unknown> & { $id: string }): void {
    if (this.ajv.getSchema(schema.$id)) return;
    patternsIn(schema, this.trustedPatterns);
    this.ajv.addSchema(schema);
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
   * The validator for a schema given as a value (a tool's inputSchema, say),
   * compiled in the draft its `$schema` names. Cached by object identity
   * first, then by fingerprint; a schema that does not compile throws
   * SCHEMA_INVALID (with `reason` and `draft` in its details), every time.
   */
  validatorForSchema(schema: AnySchema): Validator {
    const object = typeof schema === 'object' && schema !== null ? schema : undefined;
    const known = object ? this.byObject.get(object) : undefined;
    if (known instanceof EnvelopeError) throw known;
    if (known) return known;
    const fingerprint = digestValue(schema).value;
    const outcome =
      this.byFingerprint.get(fingerprint) ??
      this.refusedByFingerprint.get(fingerprint) ??
      this.compileExternal(schema, fingerprint);
    if (object) this.byObject.set(object, outcome);
    if (outcome instanceof EnvelopeError) throw outcome;
    return outcome;
  }

  private compileExternal(schema: AnySchema, fingerprint: string): Validator | EnvelopeError {
    const draft = schemaDraftOf(schema);
    if (draft === undefined) {
      const named = JSON.stringify((schema as { $schema?: unknown }).$schema);
      return this.refuse(
        fingerprint,
        new EnvelopeError('SCHEMA_INVALID', `Schema names an unknown JSON Schema draft: ${named}`, {
          reason: 'unknown_draft',
          fingerprint,
        }),
      );
    }
    let ajv = this.external.get(draft);
    if (!ajv) {
      ajv = externalAjv(draft, this.untrustedPatterns);
      this.external.set(draft, ajv);
    }
    const anonymous = stripId(schema, draft);
    try {
      const validator = withPatternBudget(wrap(ajv.compile(anonymous), fingerprint), schema);
      this.byFingerprint.set(fingerprint, validator);
      return validator;
    } catch (error) {
      // Ajv kept the schema before it failed to compile it; forget it.
      if (typeof anonymous === 'object' && anonymous !== null) ajv.removeSchema(anonymous);
      const refused = error instanceof EnvelopeError ? error.details : undefined;
      return this.refuse(
        fingerprint,
        new EnvelopeError(
          'SCHEMA_INVALID',
          `Schema (${draft}) does not compile: ${(error as Error).message}`,
          {
            reason: 'does_not_compile',
            ...refused,
            draft,
            fingerprint,
          },
        ),
      );
    }
  }

  private refuse(fingerprint: string, error: EnvelopeError): EnvelopeError {
    this.refusedByFingerprint.set(fingerprint, error);
    return error;
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
 * ship schemas with the same `$id` (draft-04: `id`), and Ajv refuses a second schema per id.
 */
function stripId(schema: AnySchema, draft: SchemaDraft): AnySchema {
  const key = draft === 'draft-04' ? 'id' : '$id';
  if (typeof schema !== 'object' || schema === null || !(key in schema)) return schema;
  const { [key]: _ignored, ...rest } = schema as Record<string, unknown>;
  return rest;
}

/**
 * Most key-against-pattern tests one validation may cost: each member of an
 * object is tested against every `patternProperties` name of the schema, so
 * 200 patterns against 50,000 members held the event loop for 1.9 s. About a
 * tenth of a second of RE2 work.
 */
export const MAX_PATTERN_TESTS = 500_000;

/** How many `patternProperties` names a schema holds, in all its subschemas. */
function patternPropertiesCount(schema: unknown): number {
  let count = 0;
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    const named = (node as Record<string, unknown>).patternProperties;
    if (!Array.isArray(node) && typeof named === 'object' && named !== null)
      count += Object.keys(named).length;
    for (const child of Object.values(node)) stack.push(child);
  }
  return count;
}

/** The most members any one object in `value` has, walked iteratively; stops once past `limit`. */
function widestObject(value: unknown, limit: number): number {
  let widest = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && widest <= limit) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    const children = Array.isArray(node) ? node : Object.values(node);
    if (!Array.isArray(node)) widest = Math.max(widest, children.length);
    for (const child of children) if (typeof child === 'object' && child !== null) stack.push(child);
  }
  return widest;
}

/**
 * A value whose widest object, tested against every `patternProperties` name
 * of the schema, would cost more than MAX_PATTERN_TESTS is refused before Ajv
 * runs, as invalid, with the counts that say why: the check's cost is bounded
 * by the schema's patterns, not by what a caller sends.
 */
function withPatternBudget(validator: Validator, schema: unknown): Validator {
  const patterns = patternPropertiesCount(schema);
  if (patterns === 0) return validator;
  const maxMembers = Math.floor(MAX_PATTERN_TESTS / patterns);
  const bounded = (value: unknown): ValidationResult => {
    const widest = widestObject(value, maxMembers);
    if (widest <= maxMembers) return validator(value);
    return {
      valid: false,
      issues: [
        {
          pointer: '',
          keyword: 'patternProperties',
          schemaPath: '#',
          message: `has an object of more than ${maxMembers} members, more than can be checked against the schema's ${patterns} property patterns`,
          params: { patterns, max_members: maxMembers },
        },
      ],
    };
  };
  return Object.assign(bounded, { fingerprint: validator.fingerprint });
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
