import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultRegistry } from '../../src/schemas/index.ts';
import { type Connected, connectExample, firstText, nodeExample } from './spawn.ts';

describe('examples/prov-envelope-server.ts with the SDK client', () => {
  let server: Connected;

  beforeAll(async () => {
    server = await connectExample(nodeExample('prov-envelope-server.ts'));
  });

  afterAll(async () => {
    await server?.client.close();
  });

  /** Both carriers hold the same envelope, and it is a valid mcp.envelope.v0.1. */
  async function envelopeOf(name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) {
    const result = await server.client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) });
    const fromText = JSON.parse(firstText(result));
    expect(result.structuredContent).toEqual(fromText);
    expect(defaultRegistry().validate('mcp.envelope.v0.1', fromText).issues).toEqual([]);
    return { result, envelope: fromText as Record<string, unknown> };
  }

  it('answers with an envelope', async () => {
    const { envelope } = await envelopeOf('word_count', { text: 'one two  three' });
    expect(envelope).toEqual({
      schema_version: 'mcp.envelope.v0.1',
      result: { words: 3, characters: 14 },
      meta: { adapter: 'mcp' },
    });
  });

  it('attaches provenance only when the caller opts in', async () => {
    const plain = await envelopeOf('checksum', { text: 'abc' });
    expect(plain.envelope.provenance).toBeUndefined();
    const value = createHash('sha256').update('abc').digest('hex');
    const opted = await envelopeOf('checksum', { text: 'abc' }, { capture_provenance: true });
    expect(opted.envelope.result).toEqual({ alg: 'sha256', value });
    expect(opted.envelope.provenance).toMatchObject({
      schema_version: 'prov.record.v0.1',
      methods: ['integrity.digest.sha256'],
      inputs: [{ digest: { alg: 'sha256', value } }],
    });
    const again = await envelopeOf('checksum', { text: 'abc' }, { capture_provenance: true });
    expect(again.envelope).toEqual(opted.envelope);
  });

  it('fails with its own namespaced error code', async () => {
    const { result, envelope } = await envelopeOf('place_order', { item: 'pen', quantity: 0 });
    expect(result.isError).toBe(true);
    expect(envelope.result).toBeNull();
    expect(envelope.errors).toEqual([
      { code: 'ORDER.QUANTITY.INVALID', message: 'Quantity must be at least 1, got 0' },
    ]);
    const ok = await envelopeOf('place_order', { item: 'pen', quantity: 2 });
    expect(ok.envelope.result).toEqual({ item: 'pen', quantity: 2, status: 'accepted' });
  });

  it('keeps a payload that has its own schema_version', async () => {
    const { envelope } = await envelopeOf('report', {});
    expect(envelope.result).toMatchObject({ schema_version: 'report.v3' });
    expect(envelope.warnings).toEqual([{ code: 'REPORT.PARTIAL', message: 'One source was unavailable' }]);
  });
});
