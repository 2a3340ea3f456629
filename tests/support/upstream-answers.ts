import fc from 'fast-check';
import { ENVELOPE_ARBITRARIES, payload } from './dialect-arbitraries.ts';

/**
 * Generated upstream answers (CallToolResults) of every kind a real server
 * sends: envelopes of each dialect as structuredContent or as JSON text, near
 * misses of them (a member missing or of the wrong type), invalid
 * mcp.envelope.v0.1 claims, legacy payloads, plain text, image content, with
 * or without isError.
 */

const envelope = fc.oneof(...Object.values(ENVELOPE_ARBITRARIES));

/** An envelope with one member removed or replaced: it keeps its markers but no longer validates. */
const nearMiss = fc
  .tuple(fc.oneof(ENVELOPE_ARBITRARIES['hosted-v2'], ENVELOPE_ARBITRARIES['scalpel-v1']), fc.nat())
  .map(([value, index]) => {
    const copy = { ...(value as Record<string, unknown>) };
    const keys = Object.keys(copy).filter(
      (key) => !['ok', 'schema_version', 'tool_id', 'tier'].includes(key),
    );
    const key = keys[index % keys.length];
    if (key !== undefined) copy[key] = index % 2 === 0 ? 17 : undefined;
    return JSON.parse(JSON.stringify(copy)) as Record<string, unknown>;
  });

const invalidProvClaim = payload.map((result) => ({
  schema_version: 'mcp.envelope.v0.1',
  result,
  unexpected: true,
}));

const structuredValue = fc.oneof(
  envelope,
  nearMiss,
  invalidProvClaim,
  fc.dictionary(fc.string({ maxLength: 6 }), payload),
);

export const generatedAnswer: fc.Arbitrary<{
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}> = fc.oneof(
  fc.tuple(structuredValue, fc.boolean(), fc.boolean()).map(([value, asText, isError]) => ({
    content: [{ type: 'text', text: JSON.stringify(value, null, asText ? 2 : undefined) }],
    ...(asText || typeof value !== 'object' || value === null || Array.isArray(value)
      ? {}
      : { structuredContent: value }),
    ...(isError ? { isError: true } : {}),
  })),
  // Short text, and text around the 2,000 characters an error message holds.
  fc
    .tuple(
      fc.oneof(fc.string({ maxLength: 60 }), fc.string({ minLength: 1990, maxLength: 2020 })),
      fc.boolean(),
    )
    .map(([text, isError]) => ({
      content: [{ type: 'text', text }],
      ...(isError ? { isError: true } : {}),
    })),
  fc.constant<{ content: unknown[] }>({
    content: [
      { type: 'text', text: 'a chart' },
      { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
    ],
  }),
);
