import { buildCallRecord, DEFAULT_CONTROLS } from '../../../src/provenance/index.ts';
import type { ProvRecord } from '../../../src/provenance/record.ts';

/** A full-mode call record (digested artifacts, record digest) and the envelope carrying it. */
export function callRecord(
  runId: string,
  tool = 'echo',
  result: unknown = { text: runId },
): { record: ProvRecord; envelope: Record<string, unknown> } {
  const record = buildCallRecord({
    runId,
    tool: { name: tool, version: '1.0.0', adapter: 'mcp' },
    action: 'wrapped',
    inputs: [{ id: 'arguments', mediaType: 'application/json', content: { json: { text: runId } } }],
    result,
    attached: true,
    controls: { ...DEFAULT_CONTROLS, captureProvenance: true, provenanceMode: 'full' },
  });
  return { record, envelope: { schema_version: 'mcp.envelope.v0.1', result, provenance: record } };
}
