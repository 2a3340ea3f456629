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

const annotations = fc.option(
  fc.record(
    {
      audience: fc.subarray(['user', 'assistant'] as const, { minLength: 1 }),
      priority: fc.double({ min: 0, max: 1, noNaN: true }),
      lastModified: fc.constant('2026-11-28T12:00:00Z'),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

const base64 = fc.uint8Array({ maxLength: 48 }).map((bytes) => Buffer.from(bytes).toString('base64'));

/** Texts a tool writes that a reader could mistake for something else. */
const trickyText = fc.oneof(
  fc.constantFrom(
    '18446744073709551616',
    '9007199254740993',
    '1.0',
    '"quoted"',
    'true',
    'null',
    '620 bytes at 0/620',
    '{"schema_version":"mcp.envelope.v0.1","result":{"a":1}}',
    '{"ok":true,"schema_version":"2026-02-19","data":{"a":1}}',
    '{\n  "pretty": null,\n  "n": 12345678901234567890\n}',
  ),
  fc.string({ maxLength: 40 }),
  payload.map((value) => JSON.stringify(value)),
);

const withAnnotations = <T extends Record<string, unknown>>(
  block: T,
  extra: Record<string, unknown> | undefined,
) => (extra === undefined ? block : { ...block, annotations: extra });

/** A content block of any type MCP defines, with annotations and `_meta` sometimes. */
const contentBlock = fc.oneof(
  fc.tuple(trickyText, annotations).map(([text, extra]) => withAnnotations({ type: 'text', text }, extra)),
  fc
    .tuple(base64, fc.constantFrom('image/png', 'image/jpeg'), annotations)
    .map(([data, mimeType, extra]) => withAnnotations({ type: 'image', data, mimeType }, extra)),
  fc
    .tuple(base64, annotations)
    .map(([data, extra]) => withAnnotations({ type: 'audio', data, mimeType: 'audio/wav' }, extra)),
  fc.tuple(base64, trickyText, fc.boolean(), annotations).map(([blob, text, binary, extra]) =>
    withAnnotations(
      {
        type: 'resource',
        resource: binary
          ? { uri: 'file:///tmp/out.bin', mimeType: 'application/octet-stream', blob }
          : { uri: 'file:///tmp/out.txt', mimeType: 'text/plain', text },
      },
      extra,
    ),
  ),
  fc.tuple(fc.string({ maxLength: 10 }), annotations).map(([name, extra]) =>
    withAnnotations(
      {
        type: 'resource_link',
        uri: `file:///tmp/${encodeURIComponent(name)}`,
        name,
        mimeType: 'text/plain',
      },
      extra,
    ),
  ),
);

/** A result's own `_meta` (an MCP App server's view id, say), under names of the tool's. */
const resultMeta = fc.option(
  fc.record(
    {
      viewUUID: fc.uuid(),
      interactEnabled: fc.boolean(),
      'io.example/trace': fc.string({ maxLength: 8 }),
      big: fc.constant(1e21),
    },
    { requiredKeys: ['viewUUID'] },
  ),
  { nil: undefined },
);

/** Whole CallToolResults: any blocks, structured content that says something else, `_meta`, `isError`. */
export const wholeResult: fc.Arbitrary<{
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}> = fc
  .tuple(
    fc.array(contentBlock, { maxLength: 4 }),
    fc.option(fc.dictionary(fc.string({ maxLength: 6 }), payload, { maxKeys: 4 }), { nil: undefined }),
    resultMeta,
    fc.boolean(),
  )
  .map(([content, structuredContent, meta, isError]) => ({
    content,
    ...(structuredContent === undefined ? {} : { structuredContent }),
    ...(meta === undefined ? {} : { _meta: meta }),
    ...(isError ? { isError: true } : {}),
  }));

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
