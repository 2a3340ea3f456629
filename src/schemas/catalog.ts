import a11yEnvelope from './data/a11y.envelope.schema.v0.1.json' with { type: 'json' };
import artifactRef from './data/artifact.ref.schema.v0.1.json' with { type: 'json' };
import artifact from './data/artifact.schema.v0.1.json' with { type: 'json' };
import assistRequest from './data/assist.request.schema.v0.1.json' with { type: 'json' };
import assistResponse from './data/assist.response.schema.v0.1.json' with { type: 'json' };
import cliError from './data/cli.error.schema.v0.1.json' with { type: 'json' };
import evidence from './data/evidence.schema.v0.1.json' with { type: 'json' };
import hostedEnvelope from './data/hosted.envelope.schema.v2.json' with { type: 'json' };
import jsonrpcRequest from './data/jsonrpc.request.schema.json' with { type: 'json' };
import legacyPayload from './data/legacy.schema.json' with { type: 'json' };
import envelope from './data/mcp.envelope.schema.v0.1.json' with { type: 'json' };
import request from './data/mcp.request.schema.v0.1.json' with { type: 'json' };
import methods from './data/methods.schema.json' with { type: 'json' };
import record from './data/prov.record.schema.v0.1.json' with { type: 'json' };
import capabilities from './data/prov-capabilities.schema.json' with { type: 'json' };
import scalpelEnvelope from './data/scalpel.envelope.schema.v1.json' with { type: 'json' };

export interface BundledSchema {
  /** The file name the schema ships under. */
  file: string;
  schema: Record<string, unknown> & { $id: string };
}

/** Every schema the package bundles, in file-name order. */
export const BUNDLED_SCHEMAS: readonly BundledSchema[] = [
  { file: 'a11y.envelope.schema.v0.1.json', schema: a11yEnvelope },
  { file: 'artifact.ref.schema.v0.1.json', schema: artifactRef },
  { file: 'artifact.schema.v0.1.json', schema: artifact },
  { file: 'assist.request.schema.v0.1.json', schema: assistRequest },
  { file: 'assist.response.schema.v0.1.json', schema: assistResponse },
  { file: 'cli.error.schema.v0.1.json', schema: cliError },
  { file: 'evidence.schema.v0.1.json', schema: evidence },
  { file: 'hosted.envelope.schema.v2.json', schema: hostedEnvelope },
  { file: 'jsonrpc.request.schema.json', schema: jsonrpcRequest },
  { file: 'legacy.schema.json', schema: legacyPayload },
  { file: 'mcp.envelope.schema.v0.1.json', schema: envelope },
  { file: 'mcp.request.schema.v0.1.json', schema: request },
  { file: 'methods.schema.json', schema: methods },
  { file: 'prov-capabilities.schema.json', schema: capabilities },
  { file: 'prov.record.schema.v0.1.json', schema: record },
  { file: 'scalpel.envelope.schema.v1.json', schema: scalpelEnvelope },
];

/** Short names for the schemas users validate against most. */
export const SCHEMA_IDS = {
  envelope: 'mcp.envelope.v0.1',
  record: 'prov.record.v0.1',
  artifact: 'artifact.v0.1',
  artifactRef: 'artifact.ref.v0.1',
  evidence: 'evidence.v0.1',
  request: 'mcp.request.v0.1',
  manifest: 'prov-capabilities.schema.json',
  methods: 'methods.schema.json',
  scalpelEnvelope: 'scalpel.envelope.v1',
  hostedEnvelope: 'hosted.envelope.v2',
  a11yEnvelope: 'a11y.envelope.v0.1',
  jsonrpcRequest: 'jsonrpc.request.envelope',
  legacyPayload: 'legacy.payload',
} as const;
