import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digestValue } from '../../src/canonical/digest.ts';
import type { ResultDialectId } from '../../src/envelope/dialect.ts';
import { createPipeline, readToolResult } from '../../src/mcp/index.ts';
import { contentReference, toolResultPayload } from '../../src/mcp/tool-result.ts';
import type { ProvRecord } from '../../src/provenance/index.ts';
import { answerContains, isEnvelopeAnswer, missingFromAnswer, producedPayload } from '../support/no-loss.ts';
import { generatedAnswer, wholeResult } from '../support/upstream-answers.ts';

/**
 * For every upstream answer and every dialect, the client's answer contains the
 * payload the tool produced, and the provenance record's output artifact is the
 * digest of that payload.
 */

const DIALECTS: ResultDialectId[] = ['prov-v0.1', 'scalpel-v1', 'hosted-v2', 'a11y-v0.1', 'legacy'];

describe('no loss over generated upstream answers', () => {
  for (const dialect of DIALECTS) {
    it(`${dialect}: the answer holds the payload, and the record digests it`, async () => {
      const records: ProvRecord[] = [];
      const pipeline = createPipeline({
        dialect,
        onCall: (summary) => {
          if (summary.provenance) records.push(summary.provenance.record);
        },
      });
      await fc.assert(
        fc.asyncProperty(generatedAnswer, async (answer) => {
          records.length = 0;
          const result = await pipeline.callTool({
            tool: { name: 'replayed' },
            arguments: {},
            meta: { capture_provenance: true, capture_artifacts: true },
            invoke: async () => answer,
          });
          const produced = producedPayload(answer);
          expect(answerContains(result, produced)).toBe(true);
          if (answer.isError === true) expect(result.isError).toBe(true);
          const [output] = (records[0] as { outputs: { digest?: { value: string } }[] }).outputs;
          // A plain-text error is the tool's message, not output (the policy's `result: null`):
          // the answer holds it as the error's message, and the record digests the null result.
          const payload = toolResultPayload(answer);
          const message = answer.isError === true && payload.source === 'text' && payload.text.length <= 2000;
          // A failure's empty string is no partial output either (the policy's `result: null`),
          // unless it is an envelope's own payload, which is taken as it is.
          const emptyFailure = answer.isError === true && produced === '' && !isEnvelopeAnswer(answer);
          const none = message || emptyFailure || produced === undefined;
          // Blocks travel as themselves, and the envelope's result (which the record digests) refers to them.
          const digested = payload.source === 'content' ? contentReference(payload.value).value : produced;
          expect(output?.digest?.value).toBe(digestValue(none ? null : digested).value);
        }),
        { numRuns: 150 },
      );
    });
  }
});

describe('no loss of a whole CallToolResult', () => {
  for (const dialect of DIALECTS) {
    it(`${dialect}: every block, text, structuredContent, _meta member and the isError sense reach the client`, async () => {
      const pipeline = createPipeline({ dialect });
      await fc.assert(
        fc.asyncProperty(wholeResult, async (generated) => {
          // As it arrives off the wire: plain objects.
          const answer = JSON.parse(JSON.stringify(generated)) as typeof generated;
          const result = await pipeline.callTool({
            tool: { name: 'replayed' },
            arguments: {},
            invoke: async () => structuredClone(answer),
          });
          expect(missingFromAnswer(answer, result)).toEqual([]);
          // Whatever the dialect, the answer is a result a client accepts: blocks of known types.
          for (const block of result.content) expect(typeof block.type).toBe('string');
        }),
        { numRuns: 200 },
      );
    });
  }
});

describe('an envelope that says ok in a result marked isError', () => {
  it('is converted as a failure, its payload kept', async () => {
    const envelope = { schema_version: 'mcp.envelope.v0.1', result: { partial: [1, 2] } };
    for (const dialect of ['hosted-v2', 'scalpel-v1', 'a11y-v0.1'] as const) {
      const result = await createPipeline({ dialect }).callTool({
        tool: { name: 'flagged' },
        arguments: {},
        invoke: async () => ({ content: [], structuredContent: envelope, isError: true }),
      });
      expect(result.isError, dialect).toBe(true);
      const read = readToolResult(result);
      expect(read, dialect).toMatchObject({ ok: false, error: { code: 'ADAPTER.EXECUTION.FAILED' } });
      expect(answerContains(result, envelope.result), dialect).toBe(true);
    }
  });
});
