/**
 * The canonical error taxonomy: one table holding every error code the project
 * emits or understands, with its HTTP status, JSON-RPC code and retriable default.
 *
 * Sources, so that a reader can check each row against its origin:
 * - `validation-spec`: the MCP envelope validation spec (five canonical errors).
 * - `hosted-v2`: the Hosted MCP v2 envelope taxonomy and its `/api/download` codes.
 * - `prov-spec`: the mcp.envelope.v0.1 compatibility policy.
 * - `a11y`: the accessibility suite's `mcp.envelope_v0_1` error codes.
 * - `scalpel`: Code Scalpel's V1.0 `error_code` registry (its lower-case spellings
 *   are in DIALECT_SPELLINGS).
 * - `engine`: this project's own input and verification errors.
 */

export type ErrorSource = 'validation-spec' | 'hosted-v2' | 'prov-spec' | 'a11y' | 'scalpel' | 'engine';

/**
 * How a failure should be treated by callers: `input` is the caller's fault
 * (malformed or invalid data, bad usage), `check` means a verification ran and
 * found a violation, `upstream` means a tool or server behind us failed, and
 * `internal` is a defect or an environment failure on our side.
 */
export type ErrorKind = 'input' | 'check' | 'upstream' | 'auth' | 'limit' | 'internal';

export interface ErrorCodeSpec {
  /** The canonical spelling. */
  readonly code: string;
  readonly httpStatus: number;
  readonly jsonRpcCode: number;
  readonly retriable: boolean;
  /** The default human-readable message. */
  readonly message: string;
  readonly kind: ErrorKind;
  readonly source: ErrorSource;
}

/** JSON-RPC codes of the validation spec, reused for the codes that mean the same thing. */
export const JSONRPC = {
  invalidParams: -32602,
  invalidOutput: -32002,
  notFound: -32004,
  unauthorized: -32001,
  internal: -32603,
  /** Not in any seed: the implementation-defined server error range holds it. */
  rateLimited: -32029,
  upstreamFailed: -32003,
  forbidden: -32005,
  timeout: -32006,
  tooLarge: -32007,
} as const;

function row(
  code: string,
  httpStatus: number,
  jsonRpcCode: number,
  retriable: boolean,
  kind: ErrorKind,
  source: ErrorSource,
  message: string,
): ErrorCodeSpec {
  return Object.freeze({ code, httpStatus, jsonRpcCode, retriable, kind, source, message });
}

const J = JSONRPC;

export const ERROR_CODES: readonly ErrorCodeSpec[] = Object.freeze([
  // The envelope validation spec: exactly its table.
  row('INVALID_INPUT', 400, J.invalidParams, false, 'input', 'validation-spec', 'Invalid params'),
  row('INVALID_OUTPUT', 502, J.invalidOutput, false, 'upstream', 'validation-spec', 'Invalid tool output'),
  row('NOT_FOUND', 404, J.notFound, false, 'input', 'validation-spec', 'Resource not found'),
  row('UNAUTHORIZED', 401, J.unauthorized, false, 'auth', 'validation-spec', 'Unauthorized'),
  row('INTERNAL_ERROR', 500, J.internal, false, 'internal', 'validation-spec', 'Internal error'),

  // Hosted MCP v2.
  row(
    'MISSING_REQUIRED_FIELDS',
    400,
    J.invalidParams,
    false,
    'input',
    'hosted-v2',
    'Required fields missing',
  ),
  row('INVALID_ARGUMENT', 400, J.invalidParams, false, 'input', 'hosted-v2', 'Invalid tool arguments'),
  row('AUTH_REQUIRED', 401, J.unauthorized, false, 'auth', 'hosted-v2', 'Authentication required'),
  row('RATE_LIMITED', 429, J.rateLimited, true, 'limit', 'hosted-v2', 'Rate limit exceeded'),
  row('TEMPLATE_NOT_FOUND', 404, J.notFound, false, 'input', 'hosted-v2', 'Template not found'),
  row('DOWNLOAD_LINK_INVALID', 400, J.invalidParams, false, 'input', 'hosted-v2', 'Download link is invalid'),
  row('DOWNLOAD_LINK_EXPIRED', 410, J.notFound, false, 'input', 'hosted-v2', 'Download link expired'),
  row('DOWNLOAD_LINK_NOT_FOUND', 404, J.notFound, false, 'input', 'hosted-v2', 'Download link not found'),
  // Hosted MCP v2 `/api/download`.
  row('DOWNLOAD_ID_MISSING', 400, J.invalidParams, false, 'input', 'hosted-v2', 'Download id is missing'),
  row('DOWNLOAD_ID_MALFORMED', 400, J.invalidParams, false, 'input', 'hosted-v2', 'Download id is malformed'),
  row(
    'DOWNLOAD_SIGNATURE_INVALID',
    403,
    J.forbidden,
    false,
    'auth',
    'hosted-v2',
    'Download signature is invalid',
  ),
  row('DOWNLOAD_EXPIRED', 410, J.notFound, false, 'input', 'hosted-v2', 'Download expired'),
  row('DOWNLOAD_NOT_FOUND', 404, J.notFound, false, 'input', 'hosted-v2', 'Download not found'),
  row(
    'DOWNLOAD_RENDER_FAILED',
    500,
    J.internal,
    true,
    'internal',
    'hosted-v2',
    'Download could not be rendered',
  ),

  // prov-spec compatibility policy.
  row(
    'ADAPTER.EXECUTION.FAILED',
    502,
    J.upstreamFailed,
    false,
    'upstream',
    'prov-spec',
    'Tool execution failed',
  ),

  // Accessibility suite.
  row('FILE_NOT_FOUND', 404, J.notFound, false, 'input', 'a11y', 'File not found'),
  row('CAPTURE_FAILED', 500, J.internal, false, 'upstream', 'a11y', 'Evidence capture failed'),
  row('BUNDLE_NOT_FOUND', 404, J.notFound, false, 'input', 'a11y', 'Evidence bundle not found'),
  row('ARTIFACT_NOT_FOUND', 404, J.notFound, false, 'input', 'a11y', 'Artifact not found'),
  row('INVALID_BUNDLE', 400, J.invalidParams, false, 'input', 'a11y', 'Evidence bundle is invalid'),
  row(
    'PROVENANCE_VERIFICATION_FAILED',
    422,
    J.invalidParams,
    false,
    'check',
    'a11y',
    'Provenance verification failed',
  ),
  row('DIGEST_MISMATCH', 422, J.invalidParams, false, 'check', 'a11y', 'Digest does not match the content'),
  row('SCHEMA_VALIDATION_FAILED', 422, J.invalidParams, false, 'check', 'a11y', 'Schema validation failed'),

  // Code Scalpel V1.0 registry: canonical spellings here, Code Scalpel's lower-case
  // spellings in DIALECT_SPELLINGS below (invalid_argument, not_found and
  // internal_error are the rows above).
  row('INVALID_PATH', 400, J.invalidParams, false, 'input', 'scalpel', 'Path rejected'),
  row('FORBIDDEN', 403, J.forbidden, false, 'auth', 'scalpel', 'Forbidden'),
  row('TIMEOUT', 504, J.timeout, true, 'upstream', 'scalpel', 'Operation timed out'),
  row('TOO_LARGE', 413, J.tooLarge, false, 'limit', 'scalpel', 'Request or result too large'),
  row('RESOURCE_EXHAUSTED', 503, J.internal, true, 'limit', 'scalpel', 'Resource limits exceeded'),
  row('NOT_IMPLEMENTED', 501, J.internal, false, 'internal', 'scalpel', 'Not implemented'),
  row('UPGRADE_REQUIRED', 402, J.forbidden, false, 'auth', 'scalpel', 'A higher tier is required'),
  row('DEPENDENCY_UNAVAILABLE', 503, J.internal, true, 'upstream', 'scalpel', 'Dependency unavailable'),

  // This project's own input and verification errors.
  row('USAGE_ERROR', 400, J.invalidParams, false, 'input', 'engine', 'Invalid command usage'),
  row('INPUT_UNREADABLE', 400, J.invalidParams, false, 'input', 'engine', 'Input could not be read'),
  row('INPUT_TOO_LARGE', 413, J.tooLarge, false, 'limit', 'engine', 'Input is too large'),
  row('INPUT_INVALID_UTF8', 400, J.invalidParams, false, 'input', 'engine', 'Input is not valid UTF-8'),
  row('JSON_MALFORMED', 400, J.invalidParams, false, 'input', 'engine', 'Input is not valid JSON'),
  row(
    'JSON_DUPLICATE_KEY',
    400,
    J.invalidParams,
    false,
    'input',
    'engine',
    'Object has a duplicate member name',
  ),
  row('JSON_TOO_DEEP', 400, J.invalidParams, false, 'input', 'engine', 'Value is nested too deeply'),
  row('JSON_LONE_SURROGATE', 400, J.invalidParams, false, 'input', 'engine', 'String has a lone surrogate'),
  row('JSON_NON_FINITE_NUMBER', 400, J.invalidParams, false, 'input', 'engine', 'Number is not finite'),
  row('JSON_UNSUPPORTED_VALUE', 400, J.invalidParams, false, 'input', 'engine', 'Value is not JSON'),
  row(
    'DIGEST_ALG_UNSUPPORTED',
    400,
    J.invalidParams,
    false,
    'input',
    'engine',
    'Unsupported digest algorithm',
  ),
  row('POINTER_INVALID', 400, J.invalidParams, false, 'input', 'engine', 'Invalid JSON Pointer'),
  row('POINTER_NOT_FOUND', 404, J.notFound, false, 'check', 'engine', 'JSON Pointer does not resolve'),
  row('ANCHOR_INVALID', 400, J.invalidParams, false, 'input', 'engine', 'Invalid evidence anchor'),
  row('ANCHOR_UNRESOLVED', 404, J.notFound, false, 'check', 'engine', 'Evidence anchor does not resolve'),
  row('LOCATOR_UNSAFE', 400, J.invalidParams, false, 'input', 'engine', 'Artifact locator escapes its root'),
  row('LOCATOR_UNSUPPORTED', 400, J.invalidParams, false, 'input', 'engine', 'Artifact locator is not local'),
  row('SCHEMA_NOT_FOUND', 404, J.notFound, false, 'input', 'engine', 'Unknown schema'),
  row('SCHEMA_INVALID', 400, J.invalidParams, false, 'check', 'engine', 'Value does not match its schema'),
  row(
    'METHOD_ID_INVALID',
    400,
    J.invalidParams,
    false,
    'check',
    'engine',
    'Method id does not match the grammar',
  ),
  row(
    'METHOD_NAMESPACE_RESERVED',
    400,
    J.invalidParams,
    false,
    'check',
    'engine',
    'Method namespace is reserved',
  ),
  row('METHOD_CONTRACT_VIOLATED', 422, J.invalidParams, false, 'check', 'engine', 'Method contract violated'),
  row('KEY_INVALID', 400, J.invalidParams, false, 'input', 'engine', 'Key is not a usable Ed25519 key'),
  row('SIGNATURE_INVALID', 422, J.invalidParams, false, 'check', 'engine', 'Signature does not verify'),
  row('LINEAGE_CYCLE', 422, J.invalidParams, false, 'check', 'engine', 'Lineage graph has a cycle'),
  row('VECTOR_NOT_FOUND', 404, J.notFound, false, 'input', 'engine', 'Test vector not found'),
  row('ENVELOPE_INVALID', 400, J.invalidParams, false, 'check', 'engine', 'Value is not a valid envelope'),
  row('METHOD_NOT_ALLOWED', 405, J.invalidParams, false, 'input', 'engine', 'HTTP method not allowed here'),
  row(
    'DIALECT_UNKNOWN',
    400,
    J.invalidParams,
    false,
    'input',
    'engine',
    'Value is not an envelope of any known dialect',
  ),
  row(
    'DIALECT_AMBIGUOUS',
    400,
    J.invalidParams,
    false,
    'check',
    'engine',
    'Value matches more than one envelope dialect',
  ),
  row('NOT_A_RESULT', 400, J.invalidParams, false, 'input', 'engine', 'A request envelope is not a result'),
  row(
    'CONVERSION_LOSSY',
    422,
    J.invalidParams,
    false,
    'check',
    'engine',
    'Conversion would lose fields the target dialect cannot carry',
  ),
  row(
    'EXEC_FAILED_TO_START',
    502,
    J.upstreamFailed,
    false,
    'upstream',
    'engine',
    'Command could not be started',
  ),
  row('CONFIG_NOT_FOUND', 404, J.notFound, false, 'input', 'engine', 'Configuration file not found'),
  row('CONFIG_INVALID', 400, J.invalidParams, false, 'input', 'engine', 'Configuration is invalid'),
  row('LISTEN_FAILED', 500, J.internal, false, 'input', 'engine', 'Cannot listen on the address asked for'),
  row('LEDGER_NOT_FOUND', 404, J.notFound, false, 'input', 'engine', 'Ledger database not found'),
  row('LEDGER_CORRUPT', 500, J.internal, false, 'internal', 'engine', 'Ledger database is unreadable'),
  row(
    'LEDGER_VERSION_UNSUPPORTED',
    500,
    J.internal,
    false,
    'internal',
    'engine',
    'Ledger schema version is newer than this program',
  ),
  row('LEDGER_RECORD_NOT_FOUND', 404, J.notFound, false, 'input', 'engine', 'Ledger record not found'),
  row(
    'LEDGER_RECORD_INVALID',
    400,
    J.invalidParams,
    false,
    'input',
    'engine',
    'Not a valid provenance record',
  ),
]);

const BY_CODE: ReadonlyMap<string, ErrorCodeSpec> = new Map(ERROR_CODES.map((spec) => [spec.code, spec]));

/** The dialects whose error codes have a spelling of their own (ids as in envelope/dialect.ts). */
export type SpellingDialect = 'prov-v0.1' | 'scalpel-v1' | 'hosted-v2' | 'a11y-v0.1' | 'jsonrpc-request';

/**
 * How each dialect spells a canonical code, where it differs from the canonical
 * spelling. Hosted v2, the accessibility suite and prov-spec use the canonical
 * (upper-case) spellings; Code Scalpel uses lower-case `error_code`s; the request
 * envelope's errors travel as JSON-RPC numbers (the `jsonRpcCode` column).
 */
export const DIALECT_SPELLINGS: Readonly<Record<SpellingDialect, Readonly<Record<string, string>>>> = {
  'prov-v0.1': {},
  'hosted-v2': {},
  'a11y-v0.1': {},
  'jsonrpc-request': {},
  'scalpel-v1': {
    INVALID_ARGUMENT: 'invalid_argument',
    INVALID_PATH: 'invalid_path',
    FORBIDDEN: 'forbidden',
    NOT_FOUND: 'not_found',
    TIMEOUT: 'timeout',
    TOO_LARGE: 'too_large',
    RESOURCE_EXHAUSTED: 'resource_exhausted',
    NOT_IMPLEMENTED: 'not_implemented',
    UPGRADE_REQUIRED: 'upgrade_required',
    DEPENDENCY_UNAVAILABLE: 'dependency_unavailable',
    INTERNAL_ERROR: 'internal_error',
  },
};

const FROM_SPELLING: ReadonlyMap<SpellingDialect, ReadonlyMap<string, string>> = new Map(
  Object.entries(DIALECT_SPELLINGS).map(([dialect, spellings]) => [
    dialect as SpellingDialect,
    new Map(Object.entries(spellings).map(([canonical, spelling]) => [spelling, canonical])),
  ]),
);

/**
 * The canonical code for a dialect's spelling. Without a dialect, every
 * dialect's spellings are tried. A code no table knows (a tool's own) is
 * returned unchanged.
 */
export function canonicalCode(spelling: string, dialect?: SpellingDialect): string {
  if (dialect !== undefined) return FROM_SPELLING.get(dialect)?.get(spelling) ?? spelling;
  if (BY_CODE.has(spelling)) return spelling;
  for (const map of FROM_SPELLING.values()) {
    const found = map.get(spelling);
    if (found !== undefined) return found;
  }
  return spelling;
}

/** How `dialect` spells a canonical code; codes it has no spelling for are kept verbatim. */
export function dialectSpelling(code: string, dialect: SpellingDialect): string {
  return DIALECT_SPELLINGS[dialect][code] ?? code;
}

/** Codes not in the table (a tool's own codes) are described by this fallback. */
const UNKNOWN_CODE: Omit<ErrorCodeSpec, 'code'> = {
  httpStatus: 500,
  jsonRpcCode: JSONRPC.internal,
  retriable: false,
  kind: 'upstream',
  source: 'engine',
  message: 'Tool error',
};

/** The spec of a known code, or undefined. */
export function lookupErrorCode(code: string): ErrorCodeSpec | undefined {
  return BY_CODE.get(code) ?? BY_CODE.get(canonicalCode(code));
}

/** The spec of any code; a code outside the table keeps its spelling and gets neutral defaults. */
export function describeErrorCode(code: string): ErrorCodeSpec {
  return lookupErrorCode(code) ?? { code, ...UNKNOWN_CODE };
}

export function isKnownErrorCode(code: string): boolean {
  return lookupErrorCode(code) !== undefined;
}
