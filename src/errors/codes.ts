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

const J = JSONRPC;

/** The first protocol revision whose error-code allocation differs (see `jsonRpcCodeOn`). */
export const STATELESS_WIRE_REVISION = '2026-07-28';

/**
 * Where the 2026-07-28 wire moves the table's JSON-RPC codes: that revision
 * reserves -32020…-32099 for the protocol's own errors and retires -32002
 * (once resource-not-found), so the two codes of the table in those places go
 * to unused codes of the implementation-defined -32000…-32019 there. The 2025
 * wire keeps the validation spec's codes; `data.canonical_code` names the
 * error on both.
 */
const MOVED_ON_STATELESS_WIRE: Readonly<Record<number, number>> = {
  [J.invalidOutput]: -32008,
  [J.rateLimited]: -32009,
};

/** The JSON-RPC code a table code goes out as on the wire of `protocolVersion` (the 2025 wire when unknown). */
export function jsonRpcCodeOn(jsonRpcCode: number, protocolVersion: string | undefined): number {
  if (protocolVersion === undefined || protocolVersion < STATELESS_WIRE_REVISION) return jsonRpcCode;
  return MOVED_ON_STATELESS_WIRE[jsonRpcCode] ?? jsonRpcCode;
}

/** A row of the table: everything but the code, which is the row's key. */
type ErrorCodeRow = Omit<ErrorCodeSpec, 'code'>;

/**
 * The table itself, keyed by canonical code. `ErrorCode` is derived from its
 * keys, so a misspelt code is a type error wherever an `ErrorCode` is expected.
 */
const TABLE = {
  // The envelope validation spec: exactly its table.
  INVALID_INPUT: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'validation-spec',
    message: 'Invalid params',
  },
  INVALID_OUTPUT: {
    httpStatus: 502,
    jsonRpcCode: J.invalidOutput,
    retriable: false,
    kind: 'upstream',
    source: 'validation-spec',
    message: 'Invalid tool output',
  },
  NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'validation-spec',
    message: 'Resource not found',
  },
  UNAUTHORIZED: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'validation-spec',
    message: 'Unauthorized',
  },
  INTERNAL_ERROR: {
    httpStatus: 500,
    jsonRpcCode: J.internal,
    retriable: false,
    kind: 'internal',
    source: 'validation-spec',
    message: 'Internal error',
  },

  // Hosted MCP v2.
  MISSING_REQUIRED_FIELDS: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Required fields missing',
  },
  INVALID_ARGUMENT: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Invalid tool arguments',
  },
  AUTH_REQUIRED: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'hosted-v2',
    message: 'Authentication required',
  },
  RATE_LIMITED: {
    httpStatus: 429,
    jsonRpcCode: J.rateLimited,
    retriable: true,
    kind: 'limit',
    source: 'hosted-v2',
    message: 'Rate limit exceeded',
  },
  TEMPLATE_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Template not found',
  },
  DOWNLOAD_LINK_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Download link is invalid',
  },
  DOWNLOAD_LINK_EXPIRED: {
    httpStatus: 410,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Download link expired',
  },
  DOWNLOAD_LINK_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Download link not found',
  },
  // Hosted MCP v2 `/api/download`.
  DOWNLOAD_ID_MISSING: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Download id is missing',
  },
  DOWNLOAD_ID_MALFORMED: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Download id is malformed',
  },
  DOWNLOAD_SIGNATURE_INVALID: {
    httpStatus: 403,
    jsonRpcCode: J.forbidden,
    retriable: false,
    kind: 'auth',
    source: 'hosted-v2',
    message: 'Download signature is invalid',
  },
  DOWNLOAD_EXPIRED: {
    httpStatus: 410,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Download expired',
  },
  DOWNLOAD_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'hosted-v2',
    message: 'Download not found',
  },
  DOWNLOAD_RENDER_FAILED: {
    httpStatus: 500,
    jsonRpcCode: J.internal,
    retriable: true,
    kind: 'internal',
    source: 'hosted-v2',
    message: 'Download could not be rendered',
  },

  // prov-spec compatibility policy.
  'ADAPTER.EXECUTION.FAILED': {
    httpStatus: 502,
    jsonRpcCode: J.upstreamFailed,
    retriable: false,
    kind: 'upstream',
    source: 'prov-spec',
    message: 'Tool execution failed',
  },

  // Accessibility suite.
  FILE_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'a11y',
    message: 'File not found',
  },
  CAPTURE_FAILED: {
    httpStatus: 500,
    jsonRpcCode: J.internal,
    retriable: false,
    kind: 'upstream',
    source: 'a11y',
    message: 'Evidence capture failed',
  },
  BUNDLE_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'a11y',
    message: 'Evidence bundle not found',
  },
  ARTIFACT_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'a11y',
    message: 'Artifact not found',
  },
  INVALID_BUNDLE: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'a11y',
    message: 'Evidence bundle is invalid',
  },
  PROVENANCE_VERIFICATION_FAILED: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'a11y',
    message: 'Provenance verification failed',
  },
  DIGEST_MISMATCH: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'a11y',
    message: 'Digest does not match the content',
  },
  SCHEMA_VALIDATION_FAILED: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'a11y',
    message: 'Schema validation failed',
  },

  // Code Scalpel V1.0 registry: canonical spellings here, Code Scalpel's lower-case
  // spellings in DIALECT_SPELLINGS below (invalid_argument, not_found and
  // internal_error are the rows above).
  INVALID_PATH: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'scalpel',
    message: 'Path rejected',
  },
  FORBIDDEN: {
    httpStatus: 403,
    jsonRpcCode: J.forbidden,
    retriable: false,
    kind: 'auth',
    source: 'scalpel',
    message: 'Forbidden',
  },
  TIMEOUT: {
    httpStatus: 504,
    jsonRpcCode: J.timeout,
    retriable: true,
    kind: 'upstream',
    source: 'scalpel',
    message: 'Operation timed out',
  },
  TOO_LARGE: {
    httpStatus: 413,
    jsonRpcCode: J.tooLarge,
    retriable: false,
    kind: 'limit',
    source: 'scalpel',
    message: 'Request or result too large',
  },
  RESOURCE_EXHAUSTED: {
    httpStatus: 503,
    jsonRpcCode: J.internal,
    retriable: true,
    kind: 'limit',
    source: 'scalpel',
    message: 'Resource limits exceeded',
  },
  NOT_IMPLEMENTED: {
    httpStatus: 501,
    jsonRpcCode: J.internal,
    retriable: false,
    kind: 'internal',
    source: 'scalpel',
    message: 'Not implemented',
  },
  UPGRADE_REQUIRED: {
    httpStatus: 402,
    jsonRpcCode: J.forbidden,
    retriable: false,
    kind: 'auth',
    source: 'scalpel',
    message: 'A higher tier is required',
  },
  DEPENDENCY_UNAVAILABLE: {
    httpStatus: 503,
    jsonRpcCode: J.internal,
    retriable: true,
    kind: 'upstream',
    source: 'scalpel',
    message: 'Dependency unavailable',
  },

  // This project's own input and verification errors.
  USAGE_ERROR: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Invalid command usage',
  },
  INPUT_UNREADABLE: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Input could not be read',
  },
  INPUT_TOO_LARGE: {
    httpStatus: 413,
    jsonRpcCode: J.tooLarge,
    retriable: false,
    kind: 'limit',
    source: 'engine',
    message: 'Input is too large',
  },
  INPUT_INVALID_UTF8: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Input is not valid UTF-8',
  },
  JSON_MALFORMED: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Input is not valid JSON',
  },
  JSON_DUPLICATE_KEY: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Object has a duplicate member name',
  },
  JSON_TOO_DEEP: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Value is nested too deeply',
  },
  JSON_LONE_SURROGATE: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'String has a lone surrogate',
  },
  JSON_NON_FINITE_NUMBER: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Number is not finite',
  },
  JSON_UNSUPPORTED_VALUE: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Value is not JSON',
  },
  DIGEST_ALG_UNSUPPORTED: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Unsupported digest algorithm',
  },
  POINTER_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Invalid JSON Pointer',
  },
  POINTER_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'JSON Pointer does not resolve',
  },
  ANCHOR_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Invalid evidence anchor',
  },
  ANCHOR_UNRESOLVED: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Evidence anchor does not resolve',
  },
  LOCATOR_UNSAFE: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Artifact locator escapes its root',
  },
  LOCATOR_UNSUPPORTED: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Artifact locator is not local',
  },
  SCHEMA_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Unknown schema',
  },
  SCHEMA_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Value does not match its schema',
  },
  METHOD_ID_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Method id does not match the grammar',
  },
  METHOD_NAMESPACE_RESERVED: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Method namespace is reserved',
  },
  METHOD_CONTRACT_VIOLATED: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Method contract violated',
  },
  KEY_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Key is not a usable Ed25519 key',
  },
  SIGNATURE_INVALID: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Signature does not verify',
  },
  DSSE_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Value is not a DSSE envelope',
  },
  LINEAGE_CYCLE: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Lineage graph has a cycle',
  },
  VECTOR_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Test vector not found',
  },
  ENVELOPE_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Value is not a valid envelope',
  },
  METHOD_NOT_ALLOWED: {
    httpStatus: 405,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'HTTP method not allowed here',
  },
  DIALECT_UNKNOWN: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Value is not an envelope of any known dialect',
  },
  DIALECT_AMBIGUOUS: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Value matches more than one envelope dialect',
  },
  NOT_A_RESULT: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'A request envelope is not a result',
  },
  CONVERSION_LOSSY: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Conversion would lose fields the target dialect cannot carry',
  },
  EXEC_FAILED_TO_START: {
    httpStatus: 502,
    jsonRpcCode: J.upstreamFailed,
    retriable: false,
    kind: 'upstream',
    source: 'engine',
    message: 'Command could not be started',
  },
  CONFIG_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Configuration file not found',
  },
  CONFIG_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Configuration is invalid',
  },
  LISTEN_FAILED: {
    httpStatus: 500,
    jsonRpcCode: J.internal,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Cannot listen on the address asked for',
  },
  TOOL_DEFINITION_CHANGED: {
    httpStatus: 409,
    jsonRpcCode: J.forbidden,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Tool definition differs from its pin',
  },
  TOOL_SIGNATURE_INVALID: {
    httpStatus: 409,
    jsonRpcCode: J.forbidden,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: "Tool list not validly signed by the upstream's keys",
  },
  PINS_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Definition pins not found',
  },
  LEDGER_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Ledger database not found',
  },
  LEDGER_CORRUPT: {
    httpStatus: 500,
    jsonRpcCode: J.internal,
    retriable: false,
    kind: 'internal',
    source: 'engine',
    message: 'Ledger database is unreadable',
  },
  LEDGER_VERSION_UNSUPPORTED: {
    httpStatus: 500,
    jsonRpcCode: J.internal,
    retriable: false,
    kind: 'internal',
    source: 'engine',
    message: 'Ledger schema version is newer than this program',
  },
  LEDGER_NOT_A_LEDGER: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'File is not a ledger database',
  },
  LEDGER_MIGRATION_REQUIRED: {
    httpStatus: 409,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Ledger schema is older than this program; it is migrated only when opened for writing',
  },
  LEDGER_RECORD_NOT_FOUND: {
    httpStatus: 404,
    jsonRpcCode: J.notFound,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Ledger record not found',
  },
  LEDGER_RECORD_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Not a valid provenance record',
  },
  BUNDLE_INVALID: {
    httpStatus: 422,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Result bundle is malformed or its parts do not fit together',
  },
  LEDGER_TAMPERED: {
    httpStatus: 409,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'check',
    source: 'engine',
    message: 'Ledger does not match its transparency log or checkpoint',
  },
  LEDGER_CHECKPOINT_INVALID: {
    httpStatus: 400,
    jsonRpcCode: J.invalidParams,
    retriable: false,
    kind: 'input',
    source: 'engine',
    message: 'Not a signed ledger checkpoint',
  },
  ARTIFACT_STORE_UNAVAILABLE: {
    httpStatus: 503,
    jsonRpcCode: J.internal,
    retriable: true,
    kind: 'internal',
    source: 'engine',
    message: 'Artifact store is unavailable',
  },
  ARTIFACT_INTEGRITY_FAILED: {
    httpStatus: 500,
    jsonRpcCode: J.internal,
    retriable: false,
    kind: 'internal',
    source: 'engine',
    message: 'Stored artifact does not match its digest',
  },
  TOKEN_EXPIRED: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'The access token has expired or is not yet valid',
  },
  TOKEN_AUDIENCE: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'The access token was not issued for this resource',
  },
  TOKEN_ISSUER: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'The access token was not issued by the configured authorization server',
  },
  TOKEN_SIGNATURE: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'The access token signature does not verify against the authorization server keys',
  },
  TOKEN_ALGORITHM: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'The access token is signed with an algorithm this resource does not accept',
  },
  INSUFFICIENT_SCOPE: {
    httpStatus: 403,
    jsonRpcCode: J.forbidden,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'The access token lacks a scope the request needs',
  },
  DPOP_INVALID: {
    httpStatus: 401,
    jsonRpcCode: J.unauthorized,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'The DPoP proof is missing, invalid, replayed or not bound to the access token',
  },
  AUTH_SERVER_UNAVAILABLE: {
    httpStatus: 503,
    jsonRpcCode: J.internal,
    retriable: true,
    kind: 'upstream',
    source: 'engine',
    message: 'The authorization server could not be reached for its metadata, keys or introspection',
  },
  DOWNLOAD_LIFETIME_EXCEEDED: {
    httpStatus: 403,
    jsonRpcCode: J.forbidden,
    retriable: false,
    kind: 'auth',
    source: 'engine',
    message: 'Download id outlives the longest link lifetime',
  },
} as const satisfies Record<string, ErrorCodeRow>;

/** Every canonical error code: the keys of the table. */
export type ErrorCode = keyof typeof TABLE;

/** The spec of a code in the table. */
export interface KnownErrorCodeSpec extends ErrorCodeSpec {
  readonly code: ErrorCode;
}

/** Every row of the table, in table order. */
export const ERROR_CODES: readonly KnownErrorCodeSpec[] = Object.freeze(
  (Object.entries(TABLE) as [ErrorCode, ErrorCodeRow][]).map(
    ([code, row]): KnownErrorCodeSpec => Object.freeze({ code, ...row }),
  ),
);

const BY_CODE: ReadonlyMap<string, KnownErrorCodeSpec> = new Map(
  ERROR_CODES.map((spec) => [spec.code, spec]),
);

/** Whether `value` is a canonical code of the table (dialect spellings are not). */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(TABLE, value);
}

/** The dialects whose error codes have a spelling of their own (ids as in envelope/dialect.ts). */
export type SpellingDialect = 'prov-v0.1' | 'scalpel-v1' | 'hosted-v2' | 'a11y-v0.1' | 'jsonrpc-request';

/**
 * How each dialect spells a canonical code, where it differs from the canonical
 * spelling. Hosted v2, the accessibility suite and prov-spec use the canonical
 * (upper-case) spellings; Code Scalpel uses lower-case `error_code`s; the request
 * envelope's errors travel as JSON-RPC numbers (the `jsonRpcCode` column).
 */
export const DIALECT_SPELLINGS: Readonly<
  Record<SpellingDialect, Readonly<Partial<Record<ErrorCode, string>>>>
> = {
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
  return (isErrorCode(code) ? DIALECT_SPELLINGS[dialect][code] : undefined) ?? code;
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
export function lookupErrorCode(code: string): KnownErrorCodeSpec | undefined {
  return BY_CODE.get(code) ?? BY_CODE.get(canonicalCode(code));
}

/** The spec of any code; a code outside the table keeps its spelling and gets neutral defaults. */
export function describeErrorCode(code: string): ErrorCodeSpec {
  return lookupErrorCode(code) ?? { code, ...UNKNOWN_CODE };
}

export function isKnownErrorCode(code: string): boolean {
  return lookupErrorCode(code) !== undefined;
}
