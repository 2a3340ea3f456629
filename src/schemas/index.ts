export { BUNDLED_SCHEMAS, type BundledSchema, SCHEMA_IDS } from './catalog.ts';
export {
  defaultRegistry,
  type SchemaIssue,
  SchemaRegistry,
  schemaError,
  type ValidationResult,
  type Validator,
} from './registry.ts';
