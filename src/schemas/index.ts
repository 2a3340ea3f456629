/**
 * mcp-envelope/schemas: the bundled JSON Schemas and the compiled-validator
 * registry. `schemaError` turns a failed validation into the library's error
 * (SCHEMA_INVALID, every issue in its details), as the library itself reports one.
 */
export { BUNDLED_SCHEMAS, type BundledSchema, SCHEMA_IDS } from './catalog.ts';
export {
  defaultRegistry,
  type SchemaIssue,
  SchemaRegistry,
  schemaError,
  type ValidationResult,
  type Validator,
} from './registry.ts';
