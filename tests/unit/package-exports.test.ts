import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * The public API is the names listed here, per entry point of package.json's
 * `exports`: a name that appears or disappears fails this test, so exporting an
 * internal is a decision, not an accident. Values are read from the built
 * package, imported by its name as a user does (Node's own resolution, through
 * the package's self-reference); types from the declarations beside it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

interface PublicNames {
  values: string[];
  types: string[];
}

const SUBPATHS: Record<string, PublicNames> = {
  artifacts: {
    values: [
      'ARTIFACTS_TOKEN_ENV',
      'ARTIFACTS_URL_ENV',
      'DOWNLOAD_ID_MAX_LENGTH',
      'FolderArtifactPublisher',
      'FolderArtifactStore',
      'KEYS_FILE',
      'Keyring',
      'MIN_SECRET_BYTES',
      'RemoteArtifactStore',
      'artifactStoreFromEnvironment',
      'contentDisposition',
      'createDownloadHandler',
      'isMediaType',
      'openArtifactService',
      'parseRange',
      'resolveDownload',
      'sanitizeFilename',
      'signDownloadId',
      'verifyDownloadId',
    ],
    types: [
      'ArtifactDescriptor',
      'ArtifactInfo',
      'ArtifactLookup',
      'ArtifactPublisher',
      'ArtifactRead',
      'ArtifactService',
      'ArtifactServiceOptions',
      'ArtifactSource',
      'ArtifactStore',
      'ByteRange',
      'DownloadGrant',
      'DownloadHandler',
      'DownloadHandlerOptions',
      'DownloadIdCheck',
      'DownloadIdFailure',
      'DownloadIdKeys',
      'DownloadResolution',
      'FolderKeyringOptions',
      'FolderPublisherOptions',
      'FolderStoreOptions',
      'GrantOptions',
      'GrantRequest',
      'GrantStore',
      'GrantedArtifact',
      'IssuedGrant',
      'KeySpec',
      'KeyringKey',
      'PublishOptions',
      'PutOptions',
      'RemoteArtifactStoreOptions',
      'ResolvedGrant',
      'ReturnMode',
      'Rotation',
      'SigningKey',
    ],
  },
  canonical: {
    values: [
      'DIGEST_ALGORITHMS',
      'MAX_NESTING_DEPTH',
      'canonicalBytes',
      'canonicalize',
      'decodeUtf8',
      'digestBytes',
      'digestFile',
      'digestStream',
      'digestValue',
      'isDigestAlg',
      'isRawNumber',
      'parseJson',
      'parseJsonBytes',
      'parseJsonLossless',
      'pathBeyondDepth',
      'plainJson',
      'rawNumberValue',
    ],
    types: [
      'Digest',
      'DigestAlg',
      'JsonObject',
      'JsonPrimitive',
      'JsonValue',
      'LosslessJson',
      'LosslessJsonValue',
      'ParseJsonOptions',
      'RawNumber',
      'StreamDigest',
    ],
  },
  conformance: {
    values: [
      'BUNDLED_VECTORS_DIR',
      'LEVELS',
      'assessLevels',
      'buildConformanceReport',
      'evaluateCase',
      'listVectorFolders',
      'loadVectorFolder',
      'runVectors',
      'validateManifest',
    ],
    types: [
      'CaseResult',
      'ConformanceReport',
      'LevelAssessment',
      'LevelResult',
      'LevelSpec',
      'Manifest',
      'ManifestFinding',
      'VectorCase',
      'VectorRun',
    ],
  },
  envelope: {
    values: [
      'CODECS',
      'DEFAULT_TIERS',
      'DIALECT_IDS',
      'ENVELOPE_V01',
      'FeatureGate',
      'PROFILES',
      'applyCompatibilityPolicy',
      'applyProfile',
      'applyProfileToData',
      'assertEnvelopeV01',
      'codecFor',
      'convert',
      'detectDialect',
      'envelopeV01Issues',
      'gateFeature',
      'isDialectId',
      'isEnvelopeV01',
      'isProfile',
      'normalize',
      'parseRequestEnvelope',
      'profileConfigFrom',
      'wrapFailure',
      'wrapLegacy',
    ],
    types: [
      'Conversion',
      'ConvertOptions',
      'Detection',
      'DetectionReport',
      'DialectCodec',
      'DialectId',
      'EncodeContext',
      'Encoded',
      'EnvelopeV01',
      'GateDecision',
      'IssueEntry',
      'Loss',
      'LosslessInput',
      'Normalized',
      'NormalizedError',
      'NormalizedMeta',
      'NormalizedResult',
      'ObservedFailure',
      'Profile',
      'ProfileConfig',
      'RateLimitInfo',
      'RequestEnvelope',
      'ResultDialectId',
      'TierConfig',
      'UpgradeHint',
      'WrapOptions',
      'WrapOutcome',
    ],
  },
  errors: {
    values: [
      'DIALECT_SPELLINGS',
      'ERROR_CODES',
      'EnvelopeError',
      'canonicalCode',
      'describeErrorCode',
      'dialectSpelling',
      'isEnvelopeError',
      'isErrorCode',
      'isKnownErrorCode',
      'lookupErrorCode',
      'toJsonRpcError',
    ],
    types: [
      'ErrorCode',
      'ErrorCodeSpec',
      'ErrorDetails',
      'ErrorKind',
      'ErrorSource',
      'JsonRpcErrorObject',
      'KnownErrorCodeSpec',
      'SpellingDialect',
    ],
  },
  ids: {
    values: [
      'DeterministicIds',
      'MCP_ENVELOPE_NAMESPACE',
      'RandomIds',
      'createIdSource',
      'hexRequestId',
      'prefixedRequestId',
      'randomRunId',
    ],
    types: ['IdSource'],
  },
  ledger: {
    values: [
      'LEDGER_SCHEMA_VERSION',
      'Ledger',
      'auditEntries',
      'auditLog',
      'buildBundle',
      'checkpointSignedBy',
      'latestCheckpoint',
      'leafHash',
      'parseCheckpoint',
      'proveConsistency',
      'proveInclusion',
      'verifyBundle',
      'verifyConsistency',
      'verifyEntry',
      'verifyInclusion',
      'verifyLedger',
      'writeCheckpoint',
    ],
    types: [
      'BundleReport',
      'Checkpoint',
      'ConsistencyProofFile',
      'InclusionProofFile',
      'InsertMeta',
      'InsertResult',
      'LedgerEntry',
      'LedgerEntryReport',
      'LedgerVerifyReport',
      'ListFilter',
      'LogAudit',
      'OpenOptions',
      'ResultBundle',
    ],
  },
  mcp: {
    values: [
      'LOSSES_META_KEY',
      'PROVENANCE_META_KEY',
      'PipelineRpcError',
      'RESULT_SCHEMA_META_KEY',
      'ToolTimeoutError',
      'callToolWithRetry',
      'createPipeline',
      'outputSchemaFor',
      'readToolResult',
      'withEnvelope',
    ],
    types: [
      'CallAccess',
      'CallAction',
      'CallFailure',
      'CallOutcome',
      'CallSummary',
      'Pipeline',
      'PipelineOptions',
      'PipelineTool',
      'RecordPlacement',
      'RetryOptions',
      'RetryRead',
      'ToolArguments',
      'ToolCall',
      'ToolResultLike',
      'ToolResultRead',
      'ValidationMode',
      'WithEnvelopeOptions',
    ],
  },
  pointer: {
    values: [
      'encodePointer',
      'escapeToken',
      'formatAnchor',
      'parseAnchor',
      'parsePointer',
      'resolveAnchor',
      'resolvePointer',
      'tryResolvePointer',
      'unescapeToken',
    ],
    types: ['AnchorResolution', 'EvidenceAnchor', 'PointerResolution'],
  },
  provenance: {
    values: [
      'DEFAULT_CONTROLS',
      'DSSE_RECORD_PAYLOAD_TYPE',
      'IN_TOTO_PAYLOAD_TYPE',
      'IN_TOTO_STATEMENT_TYPE',
      'LineageGraph',
      'MAX_DSSE_SIGNATURES',
      'METHODS',
      'METHOD_CATALOG',
      'PROV_RECORD_PREDICATE_TYPE',
      'RECORD_V01',
      'RecordBuilder',
      'attachRecord',
      'attachRecordDigest',
      'buildArtifact',
      'buildCallRecord',
      'checkContracts',
      'checkMethodId',
      'checkMethodIds',
      'checkRecordDigest',
      'checkSignature',
      'computeRecordDigest',
      'describeCoverage',
      'dssePae',
      'generateSigningKeyPair',
      'inTotoStatement',
      'inTotoSubjects',
      'keyIdFor',
      'loadPrivateKey',
      'loadPublicKey',
      'lookupMethod',
      'parseDsseEnvelope',
      'readCallControls',
      'recordPayload',
      'signDsse',
      'signInTotoStatement',
      'signRecord',
      'signRecordDsse',
      'verdictLine',
      'verify',
      'verifyDsse',
    ],
    types: [
      'Artifact',
      'ArtifactContent',
      'ArtifactSpec',
      'CallControls',
      'CallRecordSubject',
      'CheckStatus',
      'ContractContext',
      'ContractFinding',
      'CoverageItem',
      'CoverageStatus',
      'CoverageTally',
      'DsseEnvelope',
      'DsseKeyResult',
      'DsseSignature',
      'DsseSigner',
      'DsseVerification',
      'Evidence',
      'InTotoStatement',
      'InTotoSubject',
      'InputArtifact',
      'KeyPairPem',
      'LineageEdge',
      'LineageReport',
      'MethodCatalog',
      'MethodCheckOptions',
      'MethodEntry',
      'MethodFinding',
      'ProvRecord',
      'RecordBuilderOptions',
      'RecordDigestCheck',
      'SignatureCheck',
      'VerifyCheck',
      'VerifyCoverage',
      'VerifyOptions',
      'VerifyReport',
      'VerifyVerdict',
    ],
  },
  ratelimit: {
    values: ['DEFAULT_MAX_KEYS', 'MemoryRateCounters', 'RateLimiter', 'rateLimitInfo', 'retryAfterSeconds'],
    types: [
      'MemoryRateCountersOptions',
      'RateCheck',
      'RateCounters',
      'RateDecision',
      'RateLimitRule',
      'RateLimiterOptions',
      'RateRule',
      'RateSubject',
    ],
  },
  schemas: {
    values: ['BUNDLED_SCHEMAS', 'SCHEMA_IDS', 'SchemaRegistry', 'defaultRegistry', 'schemaError'],
    types: ['BundledSchema', 'SchemaIssue', 'ValidationResult', 'Validator'],
  },
};

/** The root gathers every layer except those that load the MCP SDK or node:sqlite. */
const OFF_ROOT = ['mcp', 'ledger', 'artifacts'];

function rootNames(): PublicNames {
  const layers = Object.entries(SUBPATHS).filter(([name]) => !OFF_ROOT.includes(name));
  return {
    values: layers.flatMap(([, names]) => names.values),
    types: layers.flatMap(([, names]) => names.types),
  };
}

const EXPECTED: Record<string, PublicNames> = {
  [PACKAGE.name]: rootNames(),
  ...Object.fromEntries(Object.entries(SUBPATHS).map(([name, names]) => [`${PACKAGE.name}/${name}`, names])),
};

interface Loaded {
  /** The built file the specifier resolved to. */
  file: string;
  values: string[];
}

/** Imports every entry point by the package's name in a plain Node process run from the package folder. */
async function loadBuilt(specifiers: readonly string[]): Promise<Record<string, Loaded>> {
  const script = `
    const out = {};
    for (const specifier of ${JSON.stringify(specifiers)}) {
      const namespace = await import(specifier);
      out[specifier] = { file: import.meta.resolve(specifier), values: Object.keys(namespace) };
    }
    process.stdout.write(JSON.stringify(out));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
  });
  const loaded = JSON.parse(stdout) as Record<string, Loaded>;
  for (const entry of Object.values(loaded)) entry.file = fileURLToPath(entry.file);
  return loaded;
}

/** Names a declaration file exports: `export {…} from`, `export type {…}`, and declarations. */
function declaredNames(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const names: string[] = [];
  for (const [, list] of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)) {
    for (const item of (list ?? '').split(',')) {
      const name = item
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop();
      if (name) names.push(name);
    }
  }
  for (const [, name] of text.matchAll(
    /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:const|let|function|class|interface|type|enum)\s+([\w$]+)/gm,
  )) {
    if (name) names.push(name);
  }
  return names;
}

function sorted(names: readonly string[]): string[] {
  return [...new Set(names)].sort();
}

/** Packages (and node: modules) a built entry loads or names in its declarations, following its relative imports. */
function packagesReachedFrom(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry, entry.replace(/\.js$/, '.d.ts')];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const [, specifier] of text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
      if (!specifier) continue;
      if (specifier.startsWith('.')) {
        const base = resolve(dirname(file), specifier).replace(/\.(?:ts|js)$/, '');
        queue.push(`${base}.js`, `${base}.d.ts`);
      } else if (specifier.startsWith('node:')) {
        packages.add(specifier);
      } else {
        const [scope, name] = specifier.split('/');
        packages.add(scope?.startsWith('@') ? `${scope}/${name}` : (scope ?? specifier));
      }
    }
  }
  return packages;
}

describe('the package exports exactly its public API, by name', () => {
  let built: Record<string, Loaded>;

  beforeAll(async () => {
    if (!existsSync(resolve(ROOT, 'dist/index.js')))
      throw new Error('dist/ is missing: run `npm run build` first');
    built = await loadBuilt(Object.keys(EXPECTED));
  });

  it('has a list for every entry point package.json exports, and an entry point for every list', () => {
    const entries = Object.keys(PACKAGE.exports).map((key) =>
      key === '.' ? PACKAGE.name : `${PACKAGE.name}/${key.slice(2)}`,
    );
    expect(sorted(entries)).toEqual(sorted(Object.keys(EXPECTED)));
  });

  it.each(Object.keys(EXPECTED))('%s exports exactly its public values', (specifier) => {
    expect(sorted(built[specifier]?.values ?? [])).toEqual(sorted(EXPECTED[specifier]?.values ?? []));
  });

  it.each(Object.keys(EXPECTED))('%s declares exactly its public types', (specifier) => {
    const loaded = built[specifier];
    expect(loaded).toBeDefined();
    const declared = declaredNames((loaded as Loaded).file.replace(/\.js$/, '.d.ts'));
    const values = new Set(loaded?.values);
    expect(sorted(declared.filter((name) => !values.has(name)))).toEqual(
      sorted(EXPECTED[specifier]?.types ?? []),
    );
  });

  it('is built from the sources as they are (a stale dist/ would be tested instead)', async () => {
    const sources: Record<string, string> = {
      [PACKAGE.name]: '../../src/index.ts',
      ...Object.fromEntries(
        Object.keys(SUBPATHS).map((name) => [`${PACKAGE.name}/${name}`, `../../src/${name}/index.ts`]),
      ),
    };
    for (const [specifier, source] of Object.entries(sources)) {
      const namespace = (await import(/* @vite-ignore */ source)) as Record<string, unknown>;
      expect(sorted(Object.keys(namespace)), `${specifier}: run \`npm run build\``).toEqual(
        sorted(built[specifier]?.values ?? []),
      );
    }
  });

  it('keeps the root free of the MCP SDK and node:sqlite', () => {
    const reached = [...packagesReachedFrom((built[PACKAGE.name] as Loaded).file)];
    expect(
      reached.filter((name) => name.startsWith('@modelcontextprotocol/') || name === 'node:sqlite'),
    ).toEqual([]);
    // The walk sees the layers' own imports, so an empty answer above is not an empty walk.
    expect(reached).toContain('ajv');
  });

  it('takes every SDK package a public entry point loads or names from the user, as a peer', () => {
    const reached = new Set(Object.values(built).flatMap((loaded) => [...packagesReachedFrom(loaded.file)]));
    const sdk = [...reached].filter((name) => name.startsWith('@modelcontextprotocol/')).sort();
    expect(sdk).toEqual(['@modelcontextprotocol/client', '@modelcontextprotocol/server']);
    for (const name of sdk) {
      expect(PACKAGE.peerDependencies?.[name], `${name} in peerDependencies`).toBeDefined();
      expect(PACKAGE.dependencies?.[name], `${name} not in dependencies`).toBeUndefined();
      // Installed for this package's own development and tests, as npm advises for peers.
      expect(PACKAGE.devDependencies?.[name]).toBe(PACKAGE.peerDependencies?.[name]);
    }
  });
});
